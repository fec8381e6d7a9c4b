"""A client's process on a host, run over one SSH channel, with the interface of supervisor.Child that a worker uses.

Its stdout comes back on the channel (the worker reads its JSON lines as it would a local child's).
Its stderr goes to the channel's stderr, which is copied to the client's log file here. A signal
travels as a line to a loop beside it on the host. When the channel ends without a signal being
asked for (failsafe or the worker died, or the connection was lost), that loop kills the process.
So nothing of a client outlives failsafe on a host, as supervisor.guarded does for a local child.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
from collections import deque
from pathlib import Path, PurePosixPath

from failsafe.hosts.ssh import SshHost, quote

TAIL_LINES = 20
KILL_TIMEOUT_S = 10.0

# fd 3 keeps the channel's stdin for the loop: an asynchronous list's stdin is otherwise /dev/null.
_WRAPPER = (
    "exec 3<&0; cd {cwd} || exit 1; {argv} < /dev/null & pid=$!; "
    '{{ while IFS= read -r s; do kill -"$s" "$pid" 2>/dev/null; done; kill -KILL "$pid" 2>/dev/null; }} <&3 & loop=$!; '
    'wait "$pid"; rc=$?; kill "$loop" 2>/dev/null; exit $rc'
)


class RemoteChild:
    """One process on a host (see the module's docstring); ``stdout`` has the ``read1`` a worker reads with."""

    def __init__(
        self, ssh: SshHost, argv: list[str], *, cwd: PurePosixPath, name: str, log_path: Path | None = None
    ) -> None:
        self.name = name
        self.ssh = ssh
        self.log_path = log_path
        if log_path is not None:  # as a local child's (supervisor.children.spawn): the run's logs/ may not exist yet
            log_path.parent.mkdir(parents=True, exist_ok=True)
        self.channel = ssh.open_channel(_WRAPPER.format(cwd=quote(cwd), argv=quote(*argv)))
        self.stdout = _ChannelReader(self.channel)
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._stderr = threading.Thread(target=self._copy_stderr, name=f"stderr-{name}", daemon=True)
        self._stderr.start()
        # Signals are asked for from signal handlers (the worker's Crash) while the worker's main thread may be inside
        # paramiko's recv holding the channel's lock: a thread of their own sends them, so asking never blocks.
        self._signals: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.signal_error: str | None = None
        threading.Thread(target=self._send_signals, name=f"signals-{name}", daemon=True).start()

    def _send_signals(self) -> None:
        while (name := self._signals.get()) != "":
            try:
                self.channel.sendall(f"{name}\n".encode())
            except OSError as e:  # the connection is gone: the loop there has killed the tool already
                self.signal_error = f"host {self.ssh.host}: cannot signal {self.name} ({e}): the connection was lost"
                return

    def _copy_stderr(self) -> None:
        log = self.log_path.open("ab") if self.log_path is not None else None
        pending = b""
        try:
            while chunk := self.channel.recv_stderr(1 << 16):
                if log is not None:
                    log.write(chunk)
                    log.flush()
                *lines, pending = (pending + chunk).split(b"\n")
                self._tail.extend(line.decode(errors="replace").rstrip() for line in lines)
        except OSError:
            pass  # the channel closed under the copy: what came is in the log
        finally:
            if pending:
                self._tail.append(pending.decode(errors="replace").rstrip())
            if log is not None:
                log.close()

    # -- the Child interface ----------------------------------------------------------------------
    def running(self) -> bool:
        return not self.channel.exit_status_ready()

    def exit_code(self) -> int | None:
        return self.channel.recv_exit_status() if self.channel.exit_status_ready() else None

    def signal(self, sig: signal.Signals) -> None:
        """Asks for ``sig`` (sent by a thread of its own: safe in a signal handler)."""
        if self.running():
            self._signals.put(sig.name.removeprefix("SIG"))

    def kill(self, timeout_s: float = KILL_TIMEOUT_S) -> int | None:
        """SIGKILL (a crash, not a close); returns its exit status once it is gone, None if that did not come in time
        (the channel's end kills it then)."""
        self.signal(signal.SIGKILL)
        return self.channel.recv_exit_status() if self.channel.status_event.wait(timeout_s) else None

    def wait(self, timeout_s: float) -> int:
        if not self.channel.status_event.wait(timeout_s):
            raise subprocess.TimeoutExpired(self.name, timeout_s)
        return self.channel.recv_exit_status()

    def tail(self, lines: int = 3) -> str:
        """Its last lines of stderr, joined with ' | ': what an error message quotes."""
        self._stderr.join(0.5 if not self.running() else 0)
        said = [line.strip() for line in list(self._tail)[-lines:] if line.strip()]
        return " | ".join([*said, *([self.signal_error] if self.signal_error else [])])

    def close(self) -> None:
        """Done with it: the channel's end makes the loop on the host kill what is left."""
        self._signals.put("")
        self.channel.close()


class _ChannelReader:
    """``read1`` over a channel's stdout: what has come (at least one byte), b'' once it ended."""

    def __init__(self, channel) -> None:
        self.channel = channel

    def read1(self, size: int = 1 << 16) -> bytes:
        try:
            return self.channel.recv(size)
        except OSError:
            return b""

    def close(self) -> None:
        """The channel is closed by RemoteChild.close."""
