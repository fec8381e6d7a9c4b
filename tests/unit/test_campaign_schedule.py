"""A campaign run's schedule file: it reads back as the same schedule, and replays the same faults at the same
offsets."""

from __future__ import annotations

import tomllib
from pathlib import Path

import orjson
import pytest

import failsafe.faults  # noqa: F401 - registers the fault types
from failsafe.campaigns.nemesis import Envelope
from failsafe.campaigns.plan import WORKLOADS_DIR, Plan, load_workload
from failsafe.campaigns.record import lost_acknowledged, violations
from failsafe.campaigns.runner import exit_code
from failsafe.campaigns.schedule import Planned, Schedule, read_schedule, scenario_data, write_schedule
from failsafe.errors import UserError
from failsafe.scenarios.engine.core import Engine, RunSettings, run_scenario
from failsafe.scenarios.registry import read_scenario
from failsafe.scenarios.store.rundir import RunDir
from tests.unit.test_engine import FakeCluster, FakeSampler, FakeScenario, FakeWorkload, Phases

BASE = {
    "description": "a workload",
    "topics": [{"name": "t", "partitions": 3, "replication_factor": 3, "configs": {"min.insync.replicas": "2"}}],
    "producers": [{"name": "p", "topic": "t", "acks": "all", "properties": {"request.timeout.ms": "5000"}}],
    "consumers": [{"name": "c", "topics": ["t"], "group": "g"}],
    "phases": {"warmup_s": 0, "recover_s": 0},
    "checkers": {"availability": {"max_unavailable_ms": 30000}},
}
SCHEDULE = Schedule(
    0.8,
    (
        Planned("kill", 0.1, 0.2, {"role": "leader", "partition": "t-0"}),
        Planned("pause", 0.4, 0.2, {"node": 1}),
        Planned("partition", 0.5, 0.1, {"sides": "{leader} | {others}", "partition": "t-1"}),
    ),
)
# Faults the engine's fake cluster can take (network faults need nftables and a real cluster).
PROCESS_ONLY = Schedule(
    0.8,
    (
        Planned("kill", 0.1, 0.2, {"role": "leader", "partition": "t-0"}),
        Planned("pause", 0.4, 0.2, {"node": 1}),
        Planned("terminate", 0.5, 0.1, {"role": "follower", "partition": "t-1"}),
    ),
)


def written(tmp_path: Path, schedule: Schedule = SCHEDULE) -> Path:
    data = scenario_data(BASE, schedule, "camp-s1-r000", 'Run 0: "quoted" and\nnew lines')
    return write_schedule(tmp_path / "schedule.toml", data, "Run 0 of a campaign\nreplay: failsafe run THIS_FILE")


def test_a_schedule_file_reads_back_as_the_same_schedule_and_workload(tmp_path: Path) -> None:
    path = written(tmp_path)
    base, schedule = read_schedule(path)
    assert schedule == SCHEDULE
    assert (
        base["topics"] == BASE["topics"] and base["checkers"] == BASE["checkers"] and base["phases"]["chaos_s"] == 0.8
    )
    assert path.read_text().startswith("# Run 0 of a campaign\n# replay: failsafe run THIS_FILE\n")
    assert tomllib.loads(path.read_text())["description"] == 'Run 0: "quoted" and\nnew lines'


def test_a_schedule_file_is_a_lab_scenario_with_the_same_faults_each_allowed_to_fail(tmp_path: Path) -> None:
    scenario = read_scenario(str(written(tmp_path))).parse()
    assert [(f.fault, f.at_s, f.duration_s, f.may_fail) for f in scenario.faults] == [
        (f.fault, f.at_s, f.duration_s, True) for f in SCHEDULE.faults
    ]
    assert (
        scenario.faults[0].params.role == "leader"
        and scenario.faults[1].params.node == 1
        and scenario.phases.chaos_s == 0.8
    )


def test_a_replayed_schedule_runs_the_same_faults_at_the_same_offsets(tmp_path: Path) -> None:
    scenario = read_scenario(str(written(tmp_path, PROCESS_ONLY))).parse()
    fake = FakeScenario(scenario.faults, phases=Phases(chaos_s=scenario.phases.chaos_s))
    engine = Engine(
        fake,
        FakeWorkload(),
        RunDir.create(tmp_path / "runs", fake),
        FakeCluster(),
        RunSettings("4.3.1", {}, lambda _: None, lambda _: None, sampler=FakeSampler()),
    )
    run_scenario(engine)
    ops = [orjson.loads(line) for line in engine.run_dir.history_path.read_bytes().splitlines()]
    chaos = next(op["time_ns"] for op in ops if op["f"] == "phase" and op["phase"] == "chaos")
    starts = [(op["fault"], (op["time_ns"] - chaos) / 1e9) for op in ops if op["f"] == "fault-start"]
    assert [name for name, _ in starts] == [f.fault for f in PROCESS_ONLY.faults]
    for (_, at), planned in zip(starts, PROCESS_ONLY.faults, strict=True):
        assert planned.at_s <= at < planned.at_s + 0.1


def test_shrinking_moves_make_a_schedule_smaller() -> None:
    assert SCHEDULE.without(1).size() == {"faults": 2, "fault_seconds": 0.3, "chaos_s": 0.8}
    assert Schedule(30.0, (Planned("kill", 2.0, 5.0),)).fitted(3.0).chaos_s == 10.0
    assert Schedule(8.0, (Planned("kill", 2.0, 5.0),)).fitted(3.0).chaos_s == 8.0


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ("no-such-workload", "neither one of acks-all, client-matrix, transactions nor a scenario file"),
        ("FAULTS", "has [[faults]]: a campaign draws its own"),
    ],
)
def test_a_bad_workload_is_one_line(tmp_path: Path, workload: str, message: str) -> None:
    if workload == "FAULTS":
        workload = str(written(tmp_path))
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_workload(workload)


def test_an_unknown_or_undrawable_fault_type_is_refused_before_any_run() -> None:
    with pytest.raises(UserError, match="no fault type 'kil'"):
        Plan.make("acks-all", ("kil",), Envelope.SAFE, 20)
    with pytest.raises(UserError, match="kill-consumer is not drawn by campaigns"):
        Plan.make("acks-all", ("kill-consumer",), Envelope.SAFE, 20)


def test_a_client_on_a_host_is_refused_with_network_faults_and_taken_without(tmp_path: Path) -> None:
    text = (
        (WORKLOADS_DIR / "acks-all.toml")
        .read_text()
        .replace('driver = "kafka-verifiable"', 'driver = "kafka-verifiable"\nhost = "h2"')
    )
    workload = tmp_path / "on-host.toml"
    workload.write_text(text)
    with pytest.raises(
        UserError, match="java runs on a host, and network faults \\(isolate\\) may cut the clients' links"
    ):
        Plan.make(str(workload), ("kill", "isolate"), Envelope.SAFE, 20)
    assert Plan.make(str(workload), ("kill",), Envelope.SAFE, 20).scenario.producers[1].host == "h2"


def test_records_count_only_durable_writers_losses_and_the_violations_that_decided() -> None:
    results = {
        "checkers": {
            "delivery": {
                "counts": {"lost": 7, "lost-allowed": 5, "lost-after-read": 1, "lost-after-read-allowed": 0},
                "violations": ["lost"],
            },
            "order": {"violations": []},
        },
        "known": [{"anomaly": "delivery.duplicate-acknowledged", "count": 2}],
    }
    assert lost_acknowledged(results) == 3
    assert violations(results) == ["delivery.duplicate-acknowledged", "delivery.lost"]
    # A committed transaction's lost writes count too: the commit promised them.
    assert lost_acknowledged({"checkers": {"transactions": {"counts": {"lost-write": 2, "aborted-read": 4}}}}) == 2


@pytest.mark.parametrize(
    ("verdicts", "code"),
    [
        (["VALID"], 0),
        (["VALID", "KNOWN"], 4),
        (["KNOWN", "UNKNOWN"], 3),
        (["UNKNOWN", "ERROR"], 5),
        (["ERROR", "INVALID", "VALID"], 1),
        ([], 0),
    ],
)
def test_a_campaign_exits_by_its_worst_run(verdicts: list[str], code: int) -> None:
    assert exit_code([{"verdict": v} for v in verdicts]) == code
