"""failsafe.testing.FailsafeCluster.run without a cluster: what it asks 'failsafe run' to do with a scenario given as
TOML text, and what it returns when the run made no run directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import failsafe.testing.cluster as testing_cluster
from failsafe.testing.cluster import FailsafeCluster

TOML = 'name = "mine"\nkind = "lab"\n'


def test_toml_text_is_run_from_a_file_beside_its_runs_and_nothing_is_left_in_the_temporary_directory(
    tmp_path: Path, monkeypatch
) -> None:
    asked: list[tuple[str, ...]] = []

    def cli(*args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
        asked.append(args)
        return subprocess.CompletedProcess(args, 2, "", "scenario mine: bad input")

    monkeypatch.setattr(testing_cluster, "failsafe_cli", cli)
    monkeypatch.setattr(testing_cluster.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    runs = tmp_path / "runs"
    result = FailsafeCluster(tmp_path / "cluster").run(TOML, runs_dir=runs)
    [args] = asked
    scenario = Path(args[1])
    assert scenario.parent == runs and scenario.suffix == ".toml" and scenario.read_text() == TOML
    assert list((tmp_path / "tmp").iterdir()) == []
    # No run directory: the exit code, no verdict but ERROR, and what failsafe said.
    assert (result.exit_code, result.verdict, result.run_dir) == (2, "ERROR", None)
    assert result.output == "scenario mine: bad input"
