"""The console's run views of groups on hand-written histories: a group's rebalances, share groups and their records in
flight."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from failsafe.checkers.rebalance import check as check_rebalance
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.console.app import create_app
from failsafe.console.rebalances import rebalance_view
from failsafe.console.runs import read_history
from failsafe.console.share_groups import share_groups_view
from tests.helpers import free_port_block
from tests.unit.test_checker_builders import (
    assign,
    at,
    client_config,
    client_event,
    fault,
    history,
    membership,
    poll,
    rec,
    revoke,
)
from tests.unit.test_console_parts import TOKEN, FakePoller

# -- rebalances
# ---------------------------------------------------------------------------------------------------------
KILL_C1 = fault(1, start_ms=100, stop_ms=110, nodes=["c1"], fault_name="kill-consumer", target="consumer")
# c0 and c1 share t; c1 is killed at 100 ms; c0 gives up its own partition 0 at 4 s and gets 0 and 1 at 4.5 s; c1 comes
# back at 9 s.
SURVIVOR_REVOKED = [
    assign("c0", [0], ms=0),
    assign("c1", [1], ms=0),
    poll("c0", [rec(3, "v", partition=0)], ms=50),
    poll("c1", [rec(8, "v", partition=1)], ms=90),
    *KILL_C1,
    revoke("c0", [0], ms=4000),
    assign("c0", [0, 1], ms=4500),
    poll("c0", [rec(4, "v", partition=0), rec(9, "v", partition=1)], ms=4600),
    assign("c1", [1], ms=9000),
]


def _configs(**settings: str) -> list[dict]:
    return [client_config("c0", **settings), client_config("c1", **settings)]


def _by_partition(row: dict) -> dict[str, dict]:
    return {f"{p['topic']}-{p['partition']}": p for p in row["partitions"]}


def test_a_cooperative_groups_history_shows_the_joins_the_departure_and_the_interrupted_survivor() -> None:
    view = rebalance_view(history(*_configs(partition_assignment_strategy="cooperative-sticky"), *SURVIVOR_REVOKED))
    assert view["source"] == "history" and view["valid"] is False and view["violations"] == ["survivors-interrupted"]
    [group] = view["groups"]
    assert (group["group"], group["protocol"], group["members"], group["departures"], group["joins"]) == (
        "g",
        "cooperative",
        ["c0", "c1"],
        1,
        3,
    )
    assert group["max_pause_ms"] == pytest.approx(4400) and group["survivors_interrupted"] == 1
    rows = group["rebalances"]
    assert [(r["kind"], r["members"], r["source"], r["at_s"]) for r in rows] == [
        ("joined", ["c0"], "first-assign", 0.0),
        ("joined", ["c1"], "first-assign", 0.0),
        ("left", ["c1"], "fault", 0.1),
        ("joined", ["c1"], "rejoined", 9.0),
    ]
    left = rows[2]
    assert (
        left["protocol"],
        left["fault_id"],
        left["new_owners"],
        left["survivors_kept_expected"],
        left["survivors_kept"],
    ) == ("cooperative", 1, ["c0"], True, False)
    assert (
        left["interrupted"] == ["t-0"]
        and left["violations"] == ["survivors-interrupted"]
        and left["pause_ms"] == pytest.approx(4400)
    )
    kept, moved = _by_partition(left)["t-0"], _by_partition(left)["t-1"]
    assert (kept["change"], kept["owner"], kept["revoked"], kept["violation"]) == (
        "kept",
        "c0",
        True,
        "survivors-interrupted",
    )
    # Unowned from the survivor's last read before the kill (50 ms) to its first after (4.6 s); the moved one from c1's
    # read at 90 ms.
    assert kept["revoked_ms"] == pytest.approx(3900) and kept["gap_ms"] == pytest.approx(4550)
    assert (moved["change"], moved["owner"], moved["new_owner"], moved["reassigned"], moved["violation"]) == (
        "moved",
        "c1",
        "c0",
        True,
        None,
    )
    assert moved["reassigned_ms"] == pytest.approx(4400) and moved["gap_ms"] == pytest.approx(4510)
    assert [p["partition"] for p in rows[3]["partitions"]] == [1]


def test_the_same_revocation_under_the_eager_protocol_is_shown_but_is_no_violation() -> None:
    [group] = rebalance_view(history(*_configs(), *SURVIVOR_REVOKED))["groups"]
    left = next(r for r in group["rebalances"] if r["kind"] == "left")
    assert (left["protocol"], left["survivors_kept_expected"], left["survivors_kept"], left["violations"]) == (
        "eager",
        False,
        False,
        [],
    )
    assert _by_partition(left)["t-0"]["violation"] is None and group["survivors_interrupted"] == 0


def test_a_kip848_survivor_keeps_its_partition_its_gap_measured_until_the_group_settled() -> None:
    h = history(
        *_configs(group_protocol="consumer"),
        assign("c0", [0], ms=0),
        assign("c1", [1], ms=0),
        poll("c0", [rec(3, "v", partition=0)], ms=50),
        *KILL_C1,
        poll("c0", [rec(4, "v", partition=0)], ms=300),
        poll("c0", [rec(5, "v", partition=0)], ms=2000),
        poll("c0", [rec(6, "v", partition=0)], ms=3800),
        assign("c0", [1], ms=5000),
        poll("c0", [rec(7, "v", partition=0)], ms=5100),
    )
    [group] = rebalance_view(h)["groups"]
    [left] = [r for r in group["rebalances"] if r["kind"] == "left"]
    assert (left["protocol"], left["survivors_kept"], left["violations"]) == ("consumer-uniform", True, [])
    kept = _by_partition(left)["t-0"]
    assert (kept["revoked"], kept["gap_ms"]) == (False, pytest.approx(1800))
    # c0's second assign (partition 1, handed over) is not a join: c0 never left.
    assert [r["members"] for r in group["rebalances"] if r["kind"] == "joined"] == [["c0"], ["c1"]]


def test_a_partition_never_reassigned_while_a_member_lives_is_flagged_on_its_row() -> None:
    [group] = rebalance_view(history(assign("c0", [0], ms=0), assign("c1", [1], ms=0), *KILL_C1))["groups"]
    [left] = [r for r in group["rebalances"] if r["kind"] == "left"]
    assert left["violations"] == ["never-reassigned"] and _by_partition(left)["t-1"]["reassigned"] is False


def test_the_events_come_from_results_json_when_the_run_was_checked_with_the_scenarios_options() -> None:
    h = history(*_configs(), *SURVIVOR_REVOKED)
    checked = json.loads(json.dumps(check_rebalance(h, {"expect_survivors_kept": True})))
    view = rebalance_view(h, checked)
    assert view["source"] == "results.json" and view["violations"] == ["survivors-interrupted"]
    [left] = [r for r in view["groups"][0]["rebalances"] if r["kind"] == "left"]
    assert (left["protocol"], left["survivors_kept_expected"], left["violations"]) == (
        "eager",
        True,
        ["survivors-interrupted"],
    )
    # A result that holds no events (the checker raised when the run was checked) is judged again here.
    assert rebalance_view(h, {"valid": "unknown", "error": "KeyError: x"})["source"] == "history"


def test_a_member_that_crashed_and_came_back_rejoins_and_a_lost_revoke_is_shown_as_lost() -> None:
    h = history(
        assign("c0", [0], ms=0),
        assign("c1", [1], ms=0),
        client_event("crash", "c1", ms=100),
        membership("revoke", "c0", [0], ms=2000, lost=True),
        assign("c0", [0, 1], ms=2500),
        assign("c1", [1], ms=6000),
    )
    [group] = rebalance_view(h)["groups"]
    assert [(r["kind"], r["members"], r["source"]) for r in group["rebalances"]] == [
        ("joined", ["c0"], "first-assign"),
        ("joined", ["c1"], "first-assign"),
        ("left", ["c1"], "crash"),
        ("joined", ["c1"], "rejoined"),
    ]
    kept = _by_partition(group["rebalances"][2])["t-0"]
    assert (kept["revoked"], kept["lost"], kept["violation"]) == (True, True, None)


def test_a_restarted_members_join_is_one_measured_row_with_the_partitions_it_was_given() -> None:
    restart = fault(1, start_ms=100, stop_ms=3000, nodes=["c0"], fault_name="restart-consumer", target="consumer")
    h = history(
        assign("c0", [0], ms=0),
        assign("c1", [1], ms=0),
        *restart,
        revoke("c0", [0], ms=150),
        assign("c1", [0], ms=1000),
        revoke("c1", [0], ms=3500),
        assign("c0.1", [0], ms=4000),
    )
    [group] = rebalance_view(h)["groups"]
    rows = [(r["kind"], r["members"], r["measured"]) for r in group["rebalances"]]
    assert rows == [
        ("joined", ["c0"], False),
        ("joined", ["c1"], False),
        ("left", ["c0"], True),
        ("joined", ["c0.1"], True),
    ]
    join = group["rebalances"][3]
    assert (join["pause_ms"], join["new_owners"], join["survivors_kept"]) == (pytest.approx(1000), ["c0.1"], True)
    assert {p["change"] for p in join["partitions"]} == {"moved", "kept"} and group["max_pause_ms"] == pytest.approx(
        1000
    )


# -- share groups
# -------------------------------------------------------------------------------------------------------
def acquire(
    process: str, offsets: list[int], *, ms: float, count: int = 1, partition: int = 0, group: str = "sg"
) -> dict:
    return {
        "time_ns": at(ms),
        "process": process,
        "type": "ok",
        "f": "share-poll",
        "group": group,
        "records": [
            {"topic": "t", "partition": partition, "offset": o, "key": None, "value": f"v{o}", "delivery_count": count}
            for o in offsets
        ],
    }


def ack(
    process: str,
    offsets: list[int],
    kind: str = "accept",
    *,
    ms: float,
    type: str = "ok",
    partition: int = 0,
    group: str = "sg",
) -> dict:
    return {
        "time_ns": at(ms),
        "process": process,
        "type": type,
        "f": "share-ack",
        "group": group,
        "acks": [{"topic": "t", "partition": partition, "offset": o, "ack": kind} for o in offsets],
    }


SHARE = [
    acquire("s0", [0, 1, 2, 3], ms=100),
    ack("s0", [0], ms=110),
    ack("s0", [1], "release", ms=110),
    ack("s0", [2], "reject", ms=110),
    acquire("s1", [1], ms=120, count=2),  # offset 1 again, after s0 released it
    acquire("s1", [10, 11], ms=130, partition=1),
    ack("s1", [10], ms=140, partition=1, type="fail"),
    acquire("s2", [12], ms=150, partition=1, count=3),
    client_event("crash", "s2", ms=160),  # s2's record goes with it
    acquire("s0", [20], ms=200, group="other"),
]


def test_share_groups_count_acknowledgements_and_the_records_still_held_per_partition() -> None:
    view = share_groups_view(history(*SHARE))
    assert view["as_of_ms"] == at(200) // 1_000_000 and [g["group"] for g in view["groups"]] == ["other", "sg"]
    sg = view["groups"][1]
    p0, p1 = sg["partitions"]
    # Partition 0: s0 still holds offset 3 (never acknowledged), s1 offset 1 (the redelivery).
    assert (p0["partition"], p0["acquired"], p0["records"], p0["accepted"], p0["released"], p0["rejected"]) == (
        0,
        5,
        4,
        1,
        1,
        1,
    )
    assert (p0["in_flight"], p0["max_delivery_count"], p0["holders"]) == (
        2,
        2,
        [{"member": "s0", "in_flight": 1}, {"member": "s1", "in_flight": 1}],
    )
    # Partition 1: s1 acknowledged 10 (refused) and still holds 11; s2 crashed holding 12.
    assert (
        p1["acquired"],
        p1["acks_refused"],
        p1["acks_unknown"],
        p1["accepted"],
        p1["in_flight"],
        p1["max_delivery_count"],
    ) == (3, 1, 0, 0, 1, 3)
    assert p1["holders"] == [{"member": "s1", "in_flight": 1}]
    assert (sg["acquired"], sg["in_flight"], sg["holders"], sg["max_delivery_count"]) == (8, 3, ["s0", "s1"], 3)
    assert sg["members"] == [
        {"member": "s0", "acquired": 4, "in_flight": 1, "stopped": False},
        {"member": "s1", "acquired": 3, "in_flight": 2, "stopped": False},
        {"member": "s2", "acquired": 1, "in_flight": 0, "stopped": True},
    ]


def test_in_flight_is_as_of_a_moment_and_ends_when_the_lock_runs_out() -> None:
    h = history(*SHARE)
    early = share_groups_view(h, as_of_ns=at(105))["groups"]
    assert [(g["group"], g["acquired"], g["in_flight"]) for g in early] == [("sg", 4, 4)]
    # 40 s on, with nothing acknowledged since: every lock (30 s) has run out, nobody holds anything.
    late = share_groups_view(h, as_of_ns=at(40_000))
    assert [g["in_flight"] for g in late["groups"]] == [0, 0] and late["groups"][1]["holders"] == []
    # A scenario's longer lock keeps them held.
    assert share_groups_view(h, as_of_ns=at(40_000), lock_duration_ms=60_000)["groups"][1]["in_flight"] == 3


def test_a_history_without_share_groups_has_none() -> None:
    assert share_groups_view(history(assign("c0", [0], ms=0)))["groups"] == []
    assert share_groups_view(history()) == {"as_of_ms": None, "lock_duration_ms": 30_000, "groups": []}


# -- the API
# --------------------------------------------------------------------------------------------------------------
STAMP = "20260101T000000.000Z"


def _write_run(
    runs: Path,
    ops: list[dict],
    scenario: str = "s",
    results: dict | None = None,
    tail: bytes = b"",
    scenario_json: dict | None = None,
) -> Path:
    run = runs / scenario / STAMP
    run.mkdir(parents=True)
    (run / "history.jsonl").write_bytes(b"".join(json.dumps(op).encode() + b"\n" for op in ops) + tail)
    if results is not None:
        (run / "results.json").write_text(json.dumps(results))
    if scenario_json is not None:
        (run / "scenario.json").write_text(json.dumps(scenario_json))
    return run


def _flat(*ops: dict | list[dict]) -> list[dict]:
    return [o for op in ops for o in (op if isinstance(op, list) else [op])]


@pytest.fixture
def console(tmp_path: Path) -> tuple[TestClient, Path]:
    cdir = ClusterDir(tmp_path / "cluster")
    cdir.save(
        ClusterState(
            ClusterSpec(
                brokers=1, controllers=1, base_port=free_port_block(1), controller_base_port=free_port_block(1)
            ),
            "id",
            "2026-01-01T00:00:00Z",
        )
    )
    runs = tmp_path / "runs"
    app = create_app(Cluster.open(cdir.root), TOKEN, {"testserver"}, runs_root=runs, poller_factory=FakePoller)
    with TestClient(app, headers={"X-Failsafe-Token": TOKEN}) as client:
        yield client, runs


def test_the_api_serves_a_runs_rebalances_and_share_groups(console: tuple[TestClient, Path]) -> None:
    client, runs = console
    lock = {
        "time_ns": 1,
        "process": "runner",
        "type": "info",
        "f": "group-config",
        "group": "sg",
        "config": [{"name": "share.record.lock.duration.ms", "value": "5"}],
    }
    ops = _flat(*_configs(partition_assignment_strategy="cooperative-sticky"), *SURVIVOR_REVOKED, *SHARE, lock)
    # The scenario still running: its last line half-written.
    _write_run(runs, ops, tail=b'{"time_ns": 5, "proc')
    rebalances = client.get(f"/api/runs/s/{STAMP}/rebalances")
    assert rebalances.status_code == 200
    body = rebalances.json()
    assert (body["id"], body["source"], body["violations"]) == (f"s/{STAMP}", "history", ["survivors-interrupted"])
    assert [r["kind"] for r in body["groups"][0]["rebalances"]] == ["joined", "joined", "left", "joined"]
    shares = client.get(f"/api/runs/s/{STAMP}/share-groups").json()
    # The 5 ms lock the run recorded for its group: as of its last op (9 s) every record's lock has run out.
    assert shares["lock_duration_ms"] == 5 and [
        (g["group"], g["acquired"], g["in_flight"]) for g in shares["groups"]
    ] == [("other", 1, 0), ("sg", 8, 0)]
    assert client.get(f"/api/runs/s/{STAMP}/rebalances", headers={"X-Failsafe-Token": "wrong"}).status_code == 401


def test_a_checked_run_shows_its_results_json_and_unknown_runs_are_404(console: tuple[TestClient, Path]) -> None:
    client, runs = console
    h = history(*_configs(), *SURVIVOR_REVOKED)
    results = {
        "valid": False,
        "checkers": {"rebalance": json.loads(json.dumps(check_rebalance(h, {"expect_survivors_kept": True})))},
    }
    _write_run(runs, _flat(*_configs(), *SURVIVOR_REVOKED), results=results)
    body = client.get(f"/api/runs/s/{STAMP}/rebalances").json()
    assert body["source"] == "results.json" and body["groups"][0]["survivors_interrupted"] == 1
    # A history beside the runs directory: ".." must not reach it.
    (runs.parent / STAMP).mkdir()
    (runs.parent / STAMP / "history.jsonl").write_text("")
    for path in (
        f"/api/runs/nope/{STAMP}/rebalances",
        "/api/runs/s/nope/share-groups",
        f"/api/runs/%2E%2E/{STAMP}/rebalances",
    ):
        assert client.get(path).status_code == 404, path
    assert "no run nope/" in client.get(f"/api/runs/nope/{STAMP}/rebalances").json()["error"]


def test_a_damaged_history_is_a_422_with_the_line_and_a_half_written_last_line_is_not_damage(
    tmp_path: Path, console: tuple[TestClient, Path]
) -> None:
    client, runs = console
    _write_run(
        runs,
        [{"time_ns": 1, "process": "p", "type": "ok", "f": "poll", "group": "g", "records": []}],
        tail=b"not json\n",
    )
    response = client.get(f"/api/runs/s/{STAMP}/share-groups")
    assert response.status_code == 422 and "line 2" in response.json()["error"]
    run = _write_run(tmp_path / "other", _flat(assign("c0", [0], ms=0)), tail=b'{"time_ns": 1')
    assert read_history(run).membership["process"].to_list() == ["c0"]


def test_the_page_has_both_views() -> None:
    from failsafe.console.app import _page

    page = _page()
    assert (
        'id="rebalances-list"' in page
        and 'id="share-groups-list"' in page
        and "/rebalances" in page
        and "/share-groups" in page
    )
