"""One run at a time on a cluster directory (cluster/state.py run_lock): a second is refused in one line naming the
first, and the lock goes with its holder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from failsafe.cluster.state import ClusterBusy, run_lock
from failsafe.errors import UserError


def test_a_second_run_on_the_same_cluster_is_refused_naming_the_first(tmp_path: Path) -> None:
    import os

    with run_lock(tmp_path), pytest.raises(ClusterBusy, match=f"another failsafe run \\(pid {os.getpid()}\\)"):
        with run_lock(tmp_path):
            pass
    with run_lock(tmp_path):  # released: the next run takes it
        pass


def test_the_lock_goes_with_a_holder_that_was_killed(tmp_path: Path) -> None:
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from failsafe.cluster.state import run_lock\n"
            f"with run_lock(Path({str(tmp_path)!r})):\n    print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout.readline().strip() == "held"
            with pytest.raises(ClusterBusy, match=f"pid {holder.pid}"), run_lock(tmp_path):
                pass
        finally:
            holder.kill()
            holder.wait(timeout=30)
    with run_lock(tmp_path):
        pass


def test_a_directory_that_cannot_hold_a_cluster_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="cannot hold a cluster"), run_lock(tmp_path / "file" / "cluster"):
        pass


def test_failsafe_run_on_a_cluster_another_run_holds_exits_2_in_one_line_and_starts_nothing(tmp_path: Path) -> None:
    from tests.helpers import run_cli

    root = tmp_path / "cluster"
    with run_lock(root):
        result = run_cli("run", "broker-failover", "--dir", str(root), "--runs", str(tmp_path / "runs"))
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert "another failsafe run" in line and str(root) in line
    assert sorted(p.name for p in root.iterdir()) == [".failsafe-run.lock"]
