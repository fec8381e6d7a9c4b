"""A shell kept open on a host, so that a command costs a few forks there instead of a new SSH session.

sshd runs every session's command through the user's login shell, and bash reads ~/.bashrc when sshd
starts it. On this machine root's ~/.bashrc runs ``pyenv init``: a command in a session of its own took
93.5 ms at the median on an idle test host, and 8.0 ms in a shell kept open
(docs/benchmarks/ssh-commands.json). A broker kill made eight such commands one after the other, so it
came into force 3-5 s after its fault began (docs/benchmarks/hosts-before-shells.json).

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

# Each command gets files of its own, and the answer takes exactly the bytes counted: a process the command left in the
# background with them open (its output not redirected) can neither put the answer out of step nor reach the next
# command's files. A command not read whole (dd failed) is not run: status 255 says so.
LOOP = (
    'd=$(mktemp -d) || exit 1; trap \'rm -rf "$d"\' EXIT; trap "exit 1" HUP INT TERM; i=0; '
    "while IFS= read -r n; do "
    'i=$((i + 1)); c="$d/c$i"; o="$d/o$i"; e="$d/e$i"; '
    'dd bs=1 count="$n" of="$c" 2>/dev/null; '
    'if [ "$(wc -c < "$c")" -eq "$n" ]; then sh "$c" < /dev/null > "$o" 2> "$e"; s=$?; '
    'else : > "$o"; echo "failsafe-shell: the command was not read whole" > "$e"; s=255; fi; '
    'ob=$(wc -c < "$o"); eb=$(wc -c < "$e"); '
    'printf "failsafe-shell %s %s %s\\n" "$s" $ob $eb; '
    'head -c "$ob" "$o"; head -c "$eb" "$e"; rm -f "$c" "$o" "$e"; '
    "done"
)


class ShellLost(FailsafeError):
    """The shell's session ended, or its answer did not come in time: the shell cannot be used again."""


class Shell:
    """One open session running LOOP; one command at a time (the caller holds it while it runs one)."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self.channel = channel
        self.transport = channel.get_transport()
        self._buffer = bytearray()
        self.stderr = (
            bytearray()
        )  # what the session itself said on stderr (a login shell's rc file, the loop): kept, not read

    def usable(self) -> bool:
        return (
            not self.channel.closed
            and not self.channel.eof_received
            and not self.channel.exit_status_ready()
            and self.transport is not None
            and self.transport.is_active()
        )

    def run(self, command: str, deadline: float) -> tuple[int, bytes, bytes]:
        """Run ``command``; its exit status, stdout and stderr. ShellLost when the answer cannot be read by
        ``deadline``."""
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
        if self._buffer:
            raise ShellLost(f"the shell answered {len(self._buffer)} bytes more than it counted")
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
        # The channel selects readable while its stderr holds data: read it, or the select below returns at once,
        # forever.
        while self.channel.recv_stderr_ready():
            self.stderr[:] = (self.stderr + self.channel.recv_stderr(_READ_CHUNK))[-_READ_CHUNK:]
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
