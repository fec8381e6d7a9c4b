"""The watchdog that deletes a run's network rules if failsafe dies before its heal (a SIGKILL of failsafe mid-run).

``python -m failsafe.cluster.net.leash ROOT`` reads ``hold CHAIN`` / ``release CHAIN`` lines on stdin; when
stdin closes (failsafe is done, or dead), it deletes every chain still held in the cluster's table.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from failsafe.cluster.net import netfilter
from failsafe.supervisor import spawn


class NetworkLeash:
    """A watchdog that deletes ``chains`` if this process dies before it released them (a SIGKILL of failsafe
    mid-run)."""

    def __init__(self, root: Path, log_file: Path) -> None:
        self.root = root
        self._proc = spawn(
            [sys.executable, "-m", "failsafe.cluster.net.leash", str(root.resolve())],
            name="network-leash",
            log_path=log_file,
            stdin=subprocess.PIPE,
            cwd=root,
            dies_with_parent=False,
        ).popen

    def hold(self, chain: str) -> None:
        self._send(f"hold {chain}")

    def release(self, chain: str) -> None:
        self._send(f"release {chain}")

    def _send(self, line: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{line}\n".encode())
        self._proc.stdin.flush()

    def close(self) -> None:
        """We are done: the watchdog deletes what is still held (nothing, after a heal) and exits."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
        self._proc.wait(timeout=30)


class Leashes:
    """Several leashes held as one: this machine's and the hosts' (cluster/net/hosts.py) for a cluster on hosts."""

    def __init__(self, *leashes: Any) -> None:
        self.leashes = leashes

    def hold(self, chain: str) -> None:
        for leash in self.leashes:
            leash.hold(chain)

    def release(self, chain: str) -> None:
        for leash in self.leashes:
            leash.release(chain)

    def close(self) -> None:
        errors = []
        for leash in self.leashes:
            try:
                leash.close()
            except Exception as e:  # noqa: BLE001 - every leash is closed; the first error is raised after
                errors.append(e)
        if errors:
            raise errors[0]


def _watch(root: Path) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    held: list[str] = []
    for line in sys.stdin:
        verb, _, chain = line.strip().partition(" ")
        if verb == "hold":
            held.append(chain)
        elif verb == "release" and chain in held:
            held.remove(chain)
    for chain in held:
        if netfilter.delete_chain(root, chain):
            print(f"network leash: failsafe ended with {chain} in force; deleted it", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_watch(Path(sys.argv[1])))
