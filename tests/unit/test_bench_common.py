"""benchmarks/common.py: a benchmark holds its cluster's run lock, as a scenario run does."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.common import cluster_at

from failsafe.cluster.state import ClusterBusy, run_lock


def test_a_benchmark_on_a_cluster_a_run_holds_is_refused_before_it_touches_it(tmp_path: Path) -> None:
    with run_lock(tmp_path), pytest.raises(ClusterBusy, match="another failsafe run"):
        with cluster_at(tmp_path):
            pytest.fail("a benchmark went on with a cluster another run holds")
    assert not (tmp_path / "failsafe-state.json").exists()  # nothing was started there
