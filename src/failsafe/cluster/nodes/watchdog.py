"""The leash: kills the nodes a failsafe command started if that command dies before it is done.

A command that starts nodes (``up``, ``broker start``) first starts this watchdog in its own
session, with a pipe on its stdin. When the command is done it writes ``release``; if the
command dies instead (SIGKILL, crash), the pipe closes and the watchdog kills, by pidfile, the
nodes it was told about. Nothing is left running after a failed start.

    python -m failsafe.cluster.nodes.watchdog DIR server-0 server-1 ...
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from failsafe.disk import unmount_named
from failsafe.proxy import proxies
from failsafe.supervisor import read_pidfile, spawn

RELEASE = "release"
KILL_TIMEOUT_S = 15.0


class Leash:
    """Context manager: on a clean exit call ``release()``; otherwise the nodes are killed."""

    def __init__(self, root: Path, pidfiles: list[Path], log_file: Path) -> None:
        # Absolute paths: the watchdog runs in the cluster directory, not in our cwd. It must outlive
        # us (acting on our death is its whole purpose), so no parent-death guard.
        self._proc = spawn(
            [sys.executable, "-m", "failsafe.cluster.nodes.watchdog", *(str(p.resolve()) for p in pidfiles)],
            name="watchdog",
            log_path=log_file,
            stdin=subprocess.PIPE,
            cwd=root,
            dies_with_parent=False,
        ).popen

    def release(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{RELEASE}\n".encode())
        self._close()

    def _close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass  # the watchdog is gone already
        self._proc.wait(timeout=KILL_TIMEOUT_S * 2)

    def __enter__(self) -> Leash:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close()


def main(argv: list[str]) -> int:
    pidfiles = [Path(p) for p in argv[1:]]
    # The command we guard may be stopped by a signal to its process group; we are in our own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    line = sys.stdin.readline()
    if line.strip() == RELEASE:
        return 0
    for pidfile in pidfiles:
        tracked = read_pidfile(pidfile)
        if tracked is not None and tracked.alive():
            print(f"watchdog: the starting command died; killing {pidfile.stem} (pid {tracked.pid})", flush=True)
            tracked.stop(KILL_TIMEOUT_S, sig=signal.SIGKILL)
    # Their layers and protocol proxies, if the cluster has any (DIR/pids/NAME.pid; the layers' state files and the
    # proxies' pidfiles are under DIR).
    roots = {p.parent.parent for p in pidfiles}
    for root in roots:
        for mountpoint in unmount_named(root, [p.stem for p in pidfiles if p.parent.parent == root]):
            print(f"watchdog: unmounted the disk layer at {mountpoint}", flush=True)
        for name in [p.stem for p in pidfiles if p.parent.parent == root]:
            if proxies.tracked(root, name) is not None:
                proxies.stop(root, name, KILL_TIMEOUT_S)
                print(f"watchdog: stopped the protocol proxy of {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
