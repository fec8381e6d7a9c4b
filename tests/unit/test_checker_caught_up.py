"""availability.never-caught-up: a reader that never read to the end of the log by the time the drain gave up.

Found by a campaign (librdkafka#5586): a consumer that assign()s its partitions got one NOT_COORDINATOR on the
OffsetFetch of its committed offsets, never fetched, and the run was VALID. Each test here is a history of a few
ops; the checker must fail on the stuck reader and only on it.
"""

from __future__ import annotations

import copy

from failsafe.checkers.availability import check
from failsafe.checkers.explain.sentences import explain
from failsafe.scenarios.known import classify
from failsafe.scenarios.registry import parse_scenario
from tests.unit.test_checker_builders import (
    assign,
    client_config,
    client_event,
    fault,
    history,
    log_read,
    poll,
    rec,
    send,
)

LOG = log_read([rec(0, "a"), rec(1, "b"), rec(2, "c"), rec(0, "d", partition=1)])
GROUP = [
    assign("m-0", [0, 1]),
    poll("m-0", [rec(0, "a"), rec(1, "b"), rec(2, "c")], ms=10),
    poll("m-0", [rec(0, "d", partition=1)], ms=20),
    client_event("close", "m-0", ms=90_000),
]
MANUAL_ASSIGN = assign("manual-0", [0, 1], group=None)  # type: ignore[arg-type]


def _manual(*records: dict) -> list[dict]:
    polls = [poll("manual-0", [r], ms=30 + i, group=None) for i, r in enumerate(records)]
    return [MANUAL_ASSIGN, *polls, client_event("close", "manual-0", ms=90_000)]


def test_readers_that_read_every_partition_to_its_end_are_valid() -> None:
    result = check(history(*GROUP, *_manual(rec(0, "a"), rec(2, "c"), rec(0, "d", partition=1)), LOG))
    assert result["valid"] is True and result["counts"]["never-caught-up"] == 0 and result["processes"] == {}


def test_a_manual_consumer_that_read_nothing_never_caught_up() -> None:
    result = check(history(*GROUP, *_manual(), LOG))
    assert result["valid"] is False and result["violations"] == ["never-caught-up"]
    assert result["counts"]["never-caught-up"] == 2
    rows = result["examples"]["never-caught-up"]
    assert [(r["reader"], r["partition"], r["read_upto"], r["last_offset"], r["unread"]) for r in rows] == [
        ("manual-0", 0, None, 2, 3),
        ("manual-0", 1, None, 0, 1),
    ]
    assert result["processes"] == {"never-caught-up": ["manual-0"]}


def test_a_group_behind_on_one_partition_never_caught_up_there_only() -> None:
    group = [
        assign("m-0", [0, 1]),
        poll("m-0", [rec(0, "a")], ms=10),
        poll("m-0", [rec(0, "d", partition=1)], ms=20),
        client_event("close", "m-0", ms=9),
    ]
    result = check(history(*group, LOG))
    [row] = result["examples"]["never-caught-up"]
    assert (row["reader"], row["partition"], row["read_upto"], row["unread"]) == ("g", 0, 0, 2)


def test_a_partition_of_a_topic_the_group_reads_but_was_never_given_counts() -> None:
    only_zero = [
        assign("m-0", [0]),
        poll("m-0", [rec(0, "a"), rec(1, "b"), rec(2, "c")], ms=10),
        client_event("close", "m-0", ms=90_000),
    ]
    result = check(history(*only_zero, LOG))
    [row] = result["examples"]["never-caught-up"]
    assert (row["reader"], row["partition"], row["read_upto"]) == ("g", 1, None)


def test_a_group_is_caught_up_when_its_members_together_read_to_the_end() -> None:
    split = [
        assign("m-0", [0]),
        assign("m-1", [1]),
        poll("m-0", [rec(0, "a"), rec(1, "b"), rec(2, "c")], ms=10),
        poll("m-1", [rec(0, "d", partition=1)], ms=20),
    ]
    assert check(history(*split, LOG))["counts"]["never-caught-up"] == 0


def test_a_reader_a_client_fault_stopped_on_purpose_is_left_out() -> None:
    killed = fault(7, start_ms=5, stop_ms=None, nodes=["manual-0"], fault_name="kill-consumer", target="consumer")
    killed[0]["family"] = "client"
    assert check(history(*GROUP, *_manual(), *killed, LOG))["counts"]["never-caught-up"] == 0


def test_nothing_in_the_log_read_says_nothing() -> None:
    assert check(history(*_manual()))["counts"]["never-caught-up"] == 0


def test_the_explanation_names_the_reader_what_it_read_and_that_the_drain_gave_up() -> None:
    drained = {
        "time_ns": GROUP[-1]["time_ns"] - 1,
        "process": "runner",
        "type": "info",
        "f": "drained",
        "ok": False,
        "drain_s": 30.0,
    }
    h = history(*GROUP, *_manual(), drained, LOG)
    results = {"checkers": {"availability": check(h)}}
    [first, _] = explain(h, results)
    assert first["anomaly"] == "never-caught-up"
    assert "manual-0 had read nothing of" in first["sentence"] and "3 records unread" in first["sentence"]
    assert "the drain gave up after 30 s" in first["sentence"]


# -- known: matched against the readers that showed it, with how they took their partitions -----------------
KNOWN_5586 = {
    "anomaly": "availability.never-caught-up",
    "client": "librdkafka",
    "reference": "https://github.com/confluentinc/librdkafka/issues/5586",
    "when": {"assignment": "manual"},
}
SCENARIO = {
    "name": "mini",
    "topics": [{"name": "t", "partitions": 2, "replication_factor": 1}],
    "producers": [{"name": "p", "topic": "t", "acks": "all"}],
    "consumers": [{"name": "m", "topics": ["t"], "group": "g"}, {"name": "manual", "topics": ["t"]}],
    "known": [KNOWN_5586],
}


def _classified(*ops: dict | list[dict], client: str = "librdkafka") -> dict:
    h = history(client_config("m-0"), client_config("manual-0", client=client), *ops, LOG)
    results = {"checkers": {"availability": check(h)}, "expectations": [], "valid": False}
    return classify(results, parse_scenario(copy.deepcopy(SCENARIO)), h)


def test_a_known_anomaly_of_manual_readers_covers_a_stuck_manual_reader() -> None:
    results = _classified(*GROUP, *_manual())
    assert results["verdict"] == "KNOWN" and results["known"][0]["clients"] == ["manual-0"]


def test_it_does_not_cover_a_stuck_group_reader_nor_another_library() -> None:
    behind = [assign("m-0", [0, 1]), poll("m-0", [rec(0, "a")], ms=10), client_event("close", "m-0", ms=9)]
    results = _classified(*behind, *_manual(rec(0, "a"), rec(2, "c"), rec(0, "d", partition=1)))
    assert results["verdict"] == "INVALID" and results["unexplained"] == ["availability.never-caught-up"]
    assert _classified(*GROUP, *_manual(), client="kafka-java")["verdict"] == "INVALID"


# -- the same for writers: a duplicate is matched against the producers that wrote it twice -----------------------
KNOWN_AT_LEAST_ONCE = {
    "anomaly": "delivery.duplicate-acknowledged",
    "client": "librdkafka",
    "reference": "https://kafka.apache.org/documentation/#semantics",
    "when": {"enable.idempotence": "false"},
}
MATRIX = {
    "name": "matrix",
    "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}],
    "producers": [
        {"name": "plain", "topic": "t", "acks": "all", "idempotence": False},
        {"name": "idem", "topic": "t", "acks": "all"},
    ],
    "consumers": [{"name": "m", "topics": ["t"], "group": "g"}],
    "known": [KNOWN_AT_LEAST_ONCE],
}


def _matrix_run(duplicated_by: str) -> dict:
    from failsafe.checkers.delivery import check as delivery

    ops = [
        client_config("plain", enable_idempotence="false"),
        client_config("idem", enable_idempotence="true"),
        *send("plain", 1, "plain:1", 1, ms=1),
        *send("idem", 1, "idem:1", 2, ms=2),
        assign("m-0", [0]),
        poll("m-0", [rec(0, f"{duplicated_by}:1"), rec(1, "plain:1"), rec(2, "idem:1")], ms=10),
        log_read([rec(0, f"{duplicated_by}:1"), rec(1, "plain:1"), rec(2, "idem:1")]),
    ]
    h = history(*ops)
    results = {"checkers": {"delivery": delivery(h)}, "expectations": [], "valid": False}
    return classify(results, parse_scenario(copy.deepcopy(MATRIX)), h)


def test_a_duplicate_of_a_producer_without_idempotence_is_known_beside_an_idempotent_one() -> None:
    results = _matrix_run("plain")
    assert results["checkers"]["delivery"]["processes"] == {"duplicate-acknowledged": ["plain"]}
    assert results["verdict"] == "KNOWN" and results["known"][0]["clients"] == ["plain"]


def test_a_duplicate_of_the_idempotent_producer_stays_invalid() -> None:
    results = _matrix_run("idem")
    assert results["verdict"] == "INVALID" and results["unexplained"] == ["delivery.duplicate-acknowledged"]
