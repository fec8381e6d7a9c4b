"""A shell kept open on a host, so that a command costs a few forks there instead of a new SSH session.

sshd runs every session's command through the user's login shell, and bash reads ~/.bashrc when sshd
starts it. On this machine root's ~/.bashrc runs ``pyenv init``. Measured on the test hosts, each
session then took 86 ms idle and 0.2-0.65 s while a scenario ran. A broker kill made eight such
commands, one after the other, so it came into force 3-5 s after the fault began (docs/hosts.md).

A ``Shell`` is one session whose command is a loop in POSIX sh. The loop reads one command at a
time and runs it with ``sh`` and stdin from /dev/null. It answers with the exit status, then the
stdout and the stderr, each framed by its length. A request and its answer:

    request:  "<N>\\n" then the N bytes of the command
    answer:   "failsafe-shell <status> <stdout bytes> <stderr bytes>\\n", then stdout, then stderr

The command is read with ``dd bs=1``, so the loop never reads past it. When the session ends, the
loop reads end of file and exits, removing its directory. The session ends when failsafe closes
it, loses the connection, or dies.
"""

from __future__ import annotations

import select
import time

import paramiko

from failsafe.errors import FailsafeError

ANSWER = b"failsafe-shell"
_READ_CHUNK = 1 << 16

LOOP = (
    'd=$(mktemp -d) || exit 1; trap \'rm -rf "$d"\' EXIT; trap "exit 1" HUP INT TERM; '
    'while IFS= read -r n; do '
    'dd bs=1 count="$n" of="$d/c" 2>/dev/null; '
    'sh "$d/c" < /dev/null > "$d/o" 2> "$d/e"; s=$?; '
    'printf "failsafe-shell %s %s %s\\n" "$s" $(wc -c < "$d/o") $(wc -c < "$d/e"); '
    'cat "$d/o" "$d/e"; '
    'done'
)


class ShellLost(FailsafeError):
    """The shell's session ended, or its answer did not come in time: the shell cannot be used again."""


class Shell:
    """One open session running LOOP; one command at a time (the caller holds it while it runs one)."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self.channel = channel
        self._buffer = bytearray()

    def usable(self) -> bool:
        transport = self.channel.get_transport()
        return not self.channel.closed and transport is not None and transport.is_active()

    def run(self, command: str, deadline: float) -> tuple[int, bytes, bytes]:
        """Run ``command``; its exit status, stdout and stderr. ShellLost when the answer cannot be read by ``deadline``."""
        data = command.encode()
        try:
            self.channel.sendall(b"%d\n" % len(data) + data)
        except (OSError, EOFError, paramiko.SSHException) as e:
            raise ShellLost(f"the shell's session ended ({e})") from e
        header = self._line(deadline)
        parts = header.split()
        if len(parts) != 4 or parts[0] != ANSWER or not all(p.isdigit() for p in parts[1:]):
            raise ShellLost(f"the shell answered {bytes(header[:80])!r}, not '{ANSWER.decode()} STATUS OUT ERR'")
        status, out_bytes, err_bytes = (int(p) for p in parts[1:])
        body = self._exactly(out_bytes + err_bytes, deadline)
        return status, body[:out_bytes], body[out_bytes:]

    def close(self) -> None:
        self.channel.close()

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            self._fill(deadline)
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        return line

    def _exactly(self, count: int, deadline: float) -> bytes:
        while len(self._buffer) < count:
            self._fill(deadline)
        taken = bytes(self._buffer[:count])
        del self._buffer[:count]
        return taken

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ShellLost("no answer within the timeout")
        if not self.channel.recv_ready():
            select.select([self.channel], [], [], remaining)
            if not self.channel.recv_ready():
                if self.channel.eof_received or self.channel.closed:
                    raise ShellLost("the shell's session ended")
                return
        chunk = self.channel.recv(_READ_CHUNK)
        if not chunk:
            raise ShellLost("the shell's session ended")
        self._buffer += chunk
