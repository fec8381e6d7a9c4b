"""The holes an adversarial review of the verdict code found after issue 48, one test each, on hand-written histories.

Each hole's test failed on the code before the fix (commit de645d9): that code said VALID (or INVALID where the run was
sound, or judged by the order of ops) for the history the test builds. The controls (librdkafka's last acks, a bound of
0, a write after the share group's start, the primary's read first) pass on both: they show the fix did not make the
checker blind."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from failsafe.checkers import LOSS_VIOLATIONS, durability, rebalance, semantics
from failsafe.checkers.share import deliveries as share
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.registry import parse_scenario
from failsafe.scenarios.store.check import check_history
from tests.unit.test_checker_builders import (
    MS,
    assign,
    at,
    client_config,
    declared,
    fault,
    finished,
    history,
    poll,
    read,
    rec,
    revoke,
    send,
)

LAB = Path(__file__).parents[1] / "data" / "corpus" / "lab-leader-isolated" / "scenario.json"


def _lab(producers: list[dict]) -> dict:
    table = copy.deepcopy(json.loads(LAB.read_text()))
    table["producers"] = producers
    return table


# 1
# ------------------------------------------------------------------------------------------------
def test_a_worker_named_as_another_workers_restart_is_refused() -> None:
    table = _lab(
        [
            {"name": "fast", "topic": "events", "acks": "1", "may_lose": True, "idempotence": False},
            {"name": "fast.1", "topic": "events", "acks": "1", "idempotence": False},
        ]
    )
    with pytest.raises(ScenarioError, match="'fast.1' has the name a restart of 'fast' would take"):
        parse_scenario(table)


def test_a_writer_declared_by_its_own_name_is_not_excused_by_anothers_may_lose() -> None:
    """A history with ``fast`` (may_lose) and ``fast.1`` (not): fast.1 names itself exactly, so fast's pattern does not
    make it lossy."""
    fast = {**declared("fast", may_lose=True), "matches": r"fast(\.\d+)?"}
    other = {**declared("fast.1"), "matches": r"fast\.1(\.\d+)?"}
    ops = [
        client_config("fast", acks="1"),
        client_config("fast.1", acks="1"),
        send("fast", 1, "a", 0),
        send("fast.1", 2, "b", 1),
        read(0, [rec(0, "a")]),
        finished(fast, other),
    ]
    results = check_history(history(*ops), None, [])
    assert results["verdict"] == "INVALID"
    assert results["checkers"]["durability"]["by_process"]["fast.1"] == {
        "acknowledged": 1,
        "lost": 1,
        "unverified": 0,
        "durable": False,
        "may_lose": False,
    }


# 2
# ------------------------------------------------------------------------------------------------
def test_a_java_producer_is_not_excused_by_librdkafkas_name_for_acks() -> None:
    """Kafka's Java client ignores request.required.acks: it ran with acks=all, so its lost write is a violation."""
    ops = [
        client_config("j", client="kafka-java", acks="-1", request_required_acks="1"),
        send("j", 1, "a", 0),
        send("j", 2, "b", 1),
        read(0, [rec(0, "a")]),
        finished({**declared("j", may_lose=True), "matches": r"j(\.\d+)?"}),
    ]
    results = check_history(history(*ops), None, ["delivery"])
    assert results["verdict"] == "INVALID"
    assert results["checkers"]["durability"]["by_process"]["j"]["may_lose"] is False


def test_librdkafka_takes_the_last_of_its_two_names_for_acks() -> None:
    """The control: librdkafka did run with the last one (acks=1), so the scenario's may_lose excuses the loss."""
    ops = [
        client_config("r", acks="all", request_required_acks="1"),
        send("r", 1, "a", 0),
        send("r", 2, "b", 1),
        read(0, [rec(0, "a")]),
        finished({**declared("r", may_lose=True), "matches": r"r(\.\d+)?"}),
    ]
    assert check_history(history(*ops), None, ["delivery"])["verdict"] == "VALID"


def test_a_may_lose_producer_that_may_run_with_acks_all_is_refused() -> None:
    table = _lab(
        [
            {
                "name": "j",
                "topic": "events",
                "acks": "all",
                "driver": "kafka-verifiable",
                "may_lose": True,
                "properties": {"request.required.acks": "1"},
            }
        ]
    )
    with pytest.raises(ScenarioError, match="promises durability"):
        parse_scenario(table)


# 3
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("bound_ms", "valid"), [(0, False), (60, "unknown")])
def test_a_survivors_revoke_within_its_clock_bound_of_the_handover_is_undecided_not_excused(
    bound_ms: int, valid: object
) -> None:
    def hosted(process: str) -> dict:
        return {**client_config(process), "host": "h1", "clock_offset_ns": 0, "clock_error_ns": int(bound_ms * MS)}

    ops = [
        hosted("A"),
        hosted("B"),
        assign("A", [0], ms=10),
        assign("B", [1], ms=10),
        fault(1, start_ms=100, stop_ms=None, nodes=["A"], fault_name="kill-consumer", target="consumer"),
        revoke("B", [1], ms=150),
        assign("B", [0, 1], ms=200),
        finished(),
    ]
    result = rebalance.check(history(*ops), {"expect_survivors_kept": True})
    assert result["valid"] == valid
    assert result["counts"]["survivors-interrupted" if valid is False else "survivors-interrupted-undecided"] == 1


# 4
# ------------------------------------------------------------------------------------------------
def test_a_member_reading_a_record_again_after_its_new_owner_read_it_is_a_double_delivery() -> None:
    """A reads offset 0, is revoked and B assigned; B reads it; then A reads it again with no rebalance since: two
    owners."""
    ops = [
        client_config("p", acks="all"),
        send("p", 1, "v0", 0, ms=1),
        assign("A", [0], ms=5),
        poll("A", [rec(0, "v0")], ms=10),
        revoke("A", [0], ms=20),
        assign("B", [0], ms=20),
        poll("B", [rec(0, "v0")], ms=30),
        poll("A", [rec(0, "v0")], ms=50),
        read(0, [rec(0, "v0")]),
        finished(),
    ]
    result = semantics.check(history(*ops))
    assert result["valid"] is False and result["counts"]["double-delivery"] == 1


# 5, 6
# ------------------------------------------------------------------------------------------------
def _share_config(reset: str) -> dict:
    return {
        "time_ns": at(0),
        "process": "runner",
        "type": "info",
        "f": "group-config",
        "group": "q",
        "config": [
            {"name": "share.auto.offset.reset", "value": reset},
            {"name": "share.delivery.count.limit", "value": "5"},
            {"name": "share.record.lock.duration.ms", "value": "30000"},
        ],
    }


def _share_poll(records: list[dict], ms: float) -> list[dict]:
    acks = [{"topic": r["topic"], "partition": r["partition"], "offset": r["offset"], "ack": "accept"} for r in records]
    return [
        {
            "time_ns": at(ms),
            "process": "w",
            "type": "ok",
            "f": "share-poll",
            "group": "q",
            "records": [{**r, "delivery_count": 1} for r in records],
        },
        {"time_ns": at(ms + 1), "process": "w", "type": "ok", "f": "share-ack", "group": "q", "acks": acks},
    ]


_SHARE_CLIENTS = (declared("p"), declared("w", "share-consumer", group="q"))


def test_a_partition_a_latest_share_group_delivered_nothing_of_is_undecided() -> None:
    first = rec(0, "a", partition=0)
    ops = [
        _share_config("latest"),
        client_config("p", acks="all"),
        send("p", 1, "a", 0, ms=1, partition=0),
        send("p", 2, "b", 0, ms=2, partition=1),
        *_share_poll([first], 10),
        read(0, [first]),
        read(1, [rec(0, "b", partition=1)]),
        finished(*_SHARE_CLIENTS),
    ]
    result = share.check(history(*ops))
    assert result["valid"] == "unknown" and result["counts"]["start-undecided"] == 1


@pytest.mark.parametrize("reset", ["latest", "by_duration:PT1S"])
def test_a_write_before_a_late_share_groups_start_is_not_a_loss(reset: str) -> None:
    """Offset 0 was written before the group began (at the log's end, or a second before its first fetch) and correctly
    never delivered; offset 1 was delivered and accepted."""
    ops = [
        _share_config(reset),
        client_config("p", acks="all"),
        send("p", 1, "a", 0, ms=1),
        send("p", 2, "b", 1, ms=5000),
        *_share_poll([rec(1, "b")], 5010),
        read(0, [rec(0, "a"), rec(1, "b")]),
        finished(*_SHARE_CLIENTS),
    ]
    results = check_history(history(*ops), None, ["delivery", "share"])
    assert results["verdict"] == "VALID", {name: c["violations"] for name, c in results["checkers"].items()}
    assert results["checkers"]["delivery"]["counts"]["unread-before-share-start"] == 1


def test_a_write_after_a_late_share_groups_start_never_delivered_is_lost() -> None:
    """The control: offset 1 is at or after the group's first delivery (offset 0 of the same partition), never
    accepted."""
    ops = [
        _share_config("latest"),
        client_config("p", acks="all"),
        send("p", 1, "a", 0, ms=1),
        send("p", 2, "b", 1, ms=20),
        *_share_poll([rec(0, "a")], 10),
        read(0, [rec(0, "a"), rec(1, "b")]),
        finished(*_SHARE_CLIENTS),
    ]
    results = check_history(history(*ops), None, ["delivery", "share"])
    assert results["verdict"] == "INVALID"
    assert results["checkers"]["share"]["violations"] == ["lost"] and results["checkers"]["delivery"]["violations"] == [
        "lost"
    ]


# 7
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backup_first", [True, False])
def test_a_dr_write_of_unknown_partition_is_judged_on_its_own_cluster(backup_first: bool) -> None:
    """p@primary's write has no partition; the primary's read failed, the backup's is complete: undecided, whatever the
    order."""
    ops = send("p@primary", 1, "x", None)
    ops[1].pop("partition")
    reads = [read(0, [], cluster="backup"), read(0, error="timeout", cluster="primary")]
    h = history(client_config("p@primary", acks="all"), ops, *(reads if backup_first else reads[::-1]), finished())
    assert durability.check(h)["valid"] == "unknown"


def test_a_torn_transaction_cannot_be_declared_known() -> None:
    assert "transactions.torn-transaction" in LOSS_VIOLATIONS
