"""A short real campaign: two runs of random faults on one cluster the campaign starts and stops, each judged, each
schedule the one its seed draws, written as a scenario file; the statistics and the index written; nothing left
running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import failsafe.faults  # noqa: F401 - registers the fault types
from failsafe.campaigns.nemesis import Envelope
from failsafe.campaigns.plan import Plan
from failsafe.campaigns.schedule import read_schedule
from failsafe.cluster.net import netfilter
from tests.helpers import TEST_HEAP, alive_pids, cluster_ports, run_cli

UNAVAILABLE = netfilter.unavailable_reason()
# long: benchmarks/campaigns.sh runs real campaigns, and the unit tests the runner's every part (make test's 35
# minutes).
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.breaks_cluster,
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or ""),
]

FAULTS = "kill,pause,isolate,lossy-link"
SEED = 5
RUNS = 2
CHAOS_S = 10.0


def test_a_short_campaign_runs_judges_and_records_every_run(own_cluster_dir: Path, tmp_path: Path) -> None:
    ports = cluster_ports(brokers=3, controllers=3)
    out = tmp_path / "campaigns"
    result = run_cli(
        "campaign",
        "--workload",
        "acks-all",
        "--faults",
        FAULTS,
        "--runs",
        str(RUNS),
        "--seed",
        str(SEED),
        "--duration-s",
        f"{CHAOS_S:g}",
        "--dir",
        str(own_cluster_dir),
        "--heap",
        TEST_HEAP,
        "--base-port",
        ports[1],
        "--out",
        str(out),
        timeout_s=RUNS * 120 + 120,
    )
    (directory,) = [d for d in out.iterdir() if d.is_dir()]
    data = json.loads((directory / "campaign.json").read_text())
    runs = data["runs"]
    assert [r["run"] for r in runs] == list(range(RUNS)), result.stdout + result.stderr
    verdicts = {r["verdict"] for r in runs}
    # The exit is the worst run's; acks=all idempotent writers lose nothing in the safe envelope.
    expected = (
        1
        if "INVALID" in verdicts
        else 5
        if "ERROR" in verdicts
        else 3
        if "UNKNOWN" in verdicts
        else 4
        if "KNOWN" in verdicts
        else 0
    )
    assert result.returncode == expected, result.stdout + result.stderr
    assert data["summary"]["lost_acknowledged"] == 0 and "ERROR" not in verdicts, result.stderr
    plan = Plan.make("acks-all", tuple(FAULTS.split(",")), Envelope.SAFE, CHAOS_S)
    for run in runs:
        # The seed alone draws the schedule again; the run's schedule.toml holds the same one.
        drawn = plan.nemesis.schedule(SEED, run["run"])
        _, stored = read_schedule(Path(run["dir"]) / "schedule.toml")
        assert stored == drawn and run["schedule"] == drawn.as_json()
        assert (Path(run["dir"]) / "report.html").is_file() and (Path(run["dir"]) / "results.json").is_file()
        started = [f for f in run["faults"] if f["started"]]
        assert started, f"run {run['run']}: no fault started ({run['faults']})"
        assert run["overhead_s"] < run["wall_s"]
    assert data["campaign"]["stopped"] == "done" and data["summary"]["runs_done"] == RUNS
    index = (directory / "index.html").read_text()
    assert all(f"run-{i}" in index for i in range(RUNS))
    assert alive_pids(own_cluster_dir) == [], "the campaign left the cluster it started running"
    assert netfilter.list_chains(own_cluster_dir) == [], "the campaign left network rules behind"
