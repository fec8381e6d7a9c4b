"""The leash of a start (cluster/nodes/watchdog.py) unmounts the disk layers of the nodes it was told about when the
starting command dies: mounted for real, the watchdog run as a process whose stdin closes without a release."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from failsafe.disk import find_layers, is_mounted, mount, unavailable_reason, unmount_all

UNAVAILABLE = unavailable_reason()
pytestmark = [pytest.mark.fuse, pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")]


def _layer(root: Path, name: str) -> Path:
    backing, data = root / f"{name}.disk", root / name
    backing.mkdir()
    data.mkdir()
    mount(backing, data, state_dir=root, name=name)
    return data


def _watchdog(root: Path, names: list[str], stdin: bytes) -> subprocess.CompletedProcess:
    pidfiles = [str(root / "pids" / f"{n}.pid") for n in names]
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cluster.nodes.watchdog", *pidfiles],
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def test_a_dead_start_leaves_no_layer_of_its_nodes_mounted_and_a_released_one_leaves_them(tmp_path: Path) -> None:
    (tmp_path / "pids").mkdir()
    starting, other = _layer(tmp_path, "server-0"), _layer(tmp_path, "server-1")
    try:
        released = _watchdog(tmp_path, ["server-0"], b"release\n")
        assert released.returncode == 0 and is_mounted(starting), released.stderr
        died = _watchdog(tmp_path, ["server-0"], b"")  # the command died: its stdin closed without a release
        assert died.returncode == 0, died.stderr
        assert not is_mounted(starting) and f"unmounted the disk layer at {starting}" in died.stdout.decode()
        # Only the layers of the nodes the dead command was starting: another node's stays.
        assert is_mounted(other) and [s.name for s in find_layers(tmp_path)] == ["server-1"]
    finally:
        unmount_all(tmp_path)
