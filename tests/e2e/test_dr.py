"""Disaster recovery on a real DR pair (two 1-broker clusters) with MirrorMaker 2 from Kafka's own jars:
mirror start, status and stop; dr-failover and dr-failback pass with RPO and RTO in results.json and the report;
down stops the mirrors and both clusters, nothing left running."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from failsafe.cluster.topology.pair import BACKUP_PORT_OFFSET
from failsafe.supervisor import read_pidfile
from failsafe.waiting import wait_until
from tests.e2e.test_lab_scenarios import only_run_dir
from tests.helpers import TEST_HEAP, alive_pids, free_port_block, run_cli

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster]

RUN_TIMEOUT_S = 400


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _pair_base() -> int:
    """A base port whose broker, controller and replication ports are free on the primary and, 1000 higher, on the
    backup."""
    for _ in range(100):
        base = free_port_block(1)
        ports = [base + offset + shift for offset in (0, 100, 200) for shift in (0, BACKUP_PORT_OFFSET)]
        if all(_free(p) for p in ports) and max(ports) < 65000:
            return base
    raise AssertionError("no free ports for a DR pair")


def _mirror_pids(root: Path) -> list[int]:
    return [
        t.pid for t in (read_pidfile(p) for p in root.glob("mirror/*/mirrormaker.pid")) if t is not None and t.alive()
    ]


@pytest.fixture(scope="module")
def pair(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from tests.conftest import stop_cluster

    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    root = tmp_path_factory.mktemp("dr") / "pair"
    result = run_cli(
        "up", "--dr", "--dir", str(root), "--brokers", "1", "--heap", TEST_HEAP, "--base-port", str(_pair_base())
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("primary=127.0.0.1:")
    yield root
    result = run_cli("down", "--dir", str(root))
    assert result.returncode == 0, result.stderr
    assert alive_pids(root / "primary") == [] and alive_pids(root / "backup") == [] and _mirror_pids(root) == [], (
        "down left a node or MirrorMaker running"
    )


def test_mirror_start_mirrors_and_stop_and_down_leave_nothing(pair: Path) -> None:
    primary = ["--dir", str(pair / "primary")]
    assert (
        run_cli("topics", "create", *primary, "mirrored", "--partitions", "2", "--replication-factor", "1").returncode
        == 0
    )
    sent = run_cli("produce", *primary, "mirrored", input="".join(f"line {i}\n" for i in range(40)))
    assert sent.returncode == 0, sent.stderr
    started = run_cli(
        "mirror", "start", "--dir", str(pair), "--topics", "mirrored", "--set", "emit.checkpoints.interval.seconds=1"
    )
    assert started.returncode == 0, started.stderr
    pids = _mirror_pids(pair)
    assert len(pids) == 1
    properties = (pair / "mirror" / "primary-backup" / "mm2.properties").read_text()
    assert "replication.factor = 1" in properties and "emit.checkpoints.interval.seconds = 1" in properties

    def mirrored() -> list[dict]:
        status = json.loads(run_cli("mirror", "status", "--dir", str(pair), "--topics", "mirrored", "--json").stdout)
        return status["mirrors"][0]["partitions"]

    wait_until(
        lambda: sum(p["target_end"] or 0 for p in mirrored()) == 40 and all(p["lag"] == 0 for p in mirrored()),
        60,
        "MirrorMaker did not copy the 40 records to primary.mirrored",
    )
    assert {p["mirrored_as"] for p in mirrored()} == {"primary.mirrored"}
    again = run_cli("mirror", "start", "--dir", str(pair), "--topics", "mirrored")
    assert again.returncode != 0 and "already running" in again.stderr
    stopped = run_cli("mirror", "stop", "--dir", str(pair))
    assert stopped.returncode == 0 and "stopped MirrorMaker primary->backup" in stopped.stderr
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)


def test_mirror_outside_a_pair_is_one_line(tmp_path: Path) -> None:
    result = run_cli("mirror", "status", "--dir", str(tmp_path))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "is not a DR pair" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def _run(pair: Path, runs: Path, name: str) -> dict:
    # Shorter than the catalog's phases (CI time); MirrorMaker's 1 s intervals still sync the group before the loss.
    result = run_cli(
        "run",
        name,
        "--dir",
        str(pair),
        "--runs",
        str(runs),
        "--set",
        "phases.warmup_s=6",
        "--set",
        "phases.chaos_s=5",
        timeout_s=RUN_TIMEOUT_S,
    )
    run_dir = only_run_dir(runs, name)
    results = json.loads((run_dir / "results.json").read_text())
    assert result.returncode == 0, (
        f"{result.stdout}\n{result.stderr}\n{json.dumps(results['checkers'], indent=1)[:3000]}"
    )
    for line in (run_dir / "history.jsonl").read_text().splitlines():
        if '"mirror-start"' in line:
            pid = json.loads(line)["pid"]
            assert not (psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE), (
                "the run left MirrorMaker running"
            )
    report = (run_dir / "report.html").read_text()
    assert "RPO" in report and "RTO, first read" in report
    return results


def test_dr_failover_passes_with_rpo_and_rto_measured(pair: Path, tmp_path: Path) -> None:
    results = _run(pair, tmp_path, "dr-failover")
    dr = results["checkers"]["dr"]
    assert dr["valid"] is True and results["valid"] is True
    assert (dr["source"], dr["target"]) == ("primary", "backup")
    assert dr["counts"]["acknowledged-on-source"] > 500 and dr["counts"]["acknowledged-on-target"] > 100
    assert dr["counts"]["rpo-records"] >= 0 and dr["rpo_seconds"] >= 0
    assert 0 < dr["rto_first_read_s"] <= dr["rto_caught_up_s"] < 60


def test_a_dr_run_refuses_a_pair_with_its_own_mirrormaker_running(pair: Path, tmp_path: Path) -> None:
    assert run_cli("mirror", "start", "--dir", str(pair), "--topics", "mirrored").returncode == 0
    try:
        result = run_cli("run", "dr-failover", "--dir", str(pair), "--runs", str(tmp_path))
        assert result.returncode != 0 and "failsafe mirror stop" in result.stderr and "Traceback" not in result.stderr
    finally:
        assert run_cli("mirror", "stop", "--dir", str(pair)).returncode == 0


@pytest.mark.slow
@pytest.mark.long  # benchmarks/bench_dr.sh runs dr-failback 3 times with each flush setting; make test's budget
def test_dr_failback_passes_and_loses_nothing(pair: Path, tmp_path: Path) -> None:
    results = _run(pair, tmp_path, "dr-failback")
    dr = results["checkers"]["dr"]
    assert dr["valid"] is True and results["valid"] is True
    assert (dr["source"], dr["target"], dr["t0_kind"]) == ("backup", "primary", "dr-switch")
    assert dr["counts"]["rpo-records"] == 0 and dr["counts"]["acknowledged-on-target"] > 100


def test_down_stops_the_mirrors_and_both_clusters(pair: Path) -> None:
    assert run_cli("mirror", "start", "--dir", str(pair), "--topics", "mirrored").returncode == 0
    assert _mirror_pids(pair)
    result = run_cli("down", "--dir", str(pair))
    assert result.returncode == 0 and "stopped MirrorMaker primary->backup" in result.stderr, result.stderr
    assert _mirror_pids(pair) == [] and alive_pids(pair / "primary") == [] and alive_pids(pair / "backup") == []
