"""Kafka's VerifiableShareConsumer as a driver: its events as share-poll / share-ack ops, its command line, its spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failsafe.checkers.share.deliveries import check as check_share
from failsafe.errors import UserError
from failsafe.history.load import history_from_ops
from failsafe.jvm.java import Java
from failsafe.jvm.kafka import KafkaDist
from failsafe.workloads.share.verifiable import (
    ShareEvents,
    VerifiableShareConsumerSpec,
    verifiable_share_consumer_command,
)
from failsafe.workloads.specs import spec_to_json
from failsafe.workloads.worker import client_config_fields, decode_spec

T = "t"


def _consumed(offsets: dict[int, list[int]], ms: int = 1000) -> dict:
    return {
        "timestamp": ms,
        "name": "records_consumed",
        "count": sum(map(len, offsets.values())),
        "partitions": [{"topic": T, "partition": p, "count": len(o), "offsets": o} for p, o in offsets.items()],
    }


def _acknowledged(
    offsets: dict[int, list[int]], *, success: bool = True, error: str | None = None, ms: int = 1010
) -> dict:
    event = {
        "timestamp": ms,
        "name": "offsets_acknowledged",
        "count": sum(map(len, offsets.values())),
        "success": success,
        "partitions": [{"topic": T, "partition": p, "count": len(o), "offsets": o} for p, o in offsets.items()],
    }
    return {**event, "error": error} if error else event


def _record(partition: int, offset: int, value: str) -> dict:
    return {
        "timestamp": 999,
        "name": "record_data",
        "key": None,
        "value": value,
        "topic": T,
        "partition": partition,
        "offset": offset,
    }


def test_a_poll_is_one_share_poll_with_the_records_printed_before_it() -> None:
    events = ShareEvents("s-0", "q")
    assert events(_record(0, 5, "v5")) == [] and events(_record(1, 2, "v2")) == []
    [op] = events(_consumed({0: [5], 1: [2]}))
    assert (op["f"], op["type"], op["group"], op["time_ns"]) == ("share-poll", "ok", "q", 1_000_000_000)
    assert op["records"] == [
        {"topic": T, "partition": 0, "offset": 5, "key": None, "value": "v5", "delivery_count": None},
        {"topic": T, "partition": 1, "offset": 2, "key": None, "value": "v2", "delivery_count": None},
    ]
    # Without --verbose the records are known by where they are only.
    [bare] = events(_consumed({0: [6]}))
    assert bare["records"][0]["value"] is None


def test_acknowledgements_are_accepts_ok_refused_or_unknown() -> None:
    events = ShareEvents("s-0", "q")
    [ok] = events(_acknowledged({0: [5, 6]}))
    assert (ok["f"], ok["type"]) == ("share-ack", "ok")
    assert ok["acks"] == [{"topic": T, "partition": 0, "offset": o, "ack": "accept"} for o in (5, 6)]
    refused = events(
        _acknowledged(
            {0: [7]},
            success=False,
            error="The record state is invalid. The acknowledgement of delivery could not be completed.",
        )
    )
    assert refused[0]["type"] == "fail"
    [unknown] = events(_acknowledged({0: [8]}, success=False, error="Timed out"))
    assert (unknown["type"], unknown["error"]) == ("info", "Timed out")
    assert events(_acknowledged({})) == []
    assert events({"timestamp": 2000, "name": "shutdown_complete"})[0]["f"] == "close"
    assert (
        events({"timestamp": 1, "name": "startup_complete"}) == []
        and events({"timestamp": 1, "name": "offset_reset_strategy_set"}) == []
    )


def test_a_translated_history_is_judged_by_the_share_checker() -> None:
    events = ShareEvents("s-0", "q")
    ops = [
        {"time_ns": 1, "process": "p", "type": "invoke", "f": "send", "id": 1, "topic": T, "key": None, "value": "v5"},
        {
            "time_ns": 2,
            "process": "p",
            "type": "ok",
            "f": "send",
            "id": 1,
            "topic": T,
            "partition": 0,
            "offset": 5,
            "key": None,
            "value": "v5",
        },
    ]
    ops += events(_record(0, 5, "v5")) + events(_consumed({0: [5]})) + events(_acknowledged({0: [5]}))
    assert check_share(history_from_ops(ops))["valid"] is True
    unaccepted = ops[:2] + ShareEvents("s-0", "q")(_record(0, 5, "v5")) + ShareEvents("s-0", "q")(_consumed({0: [5]}))
    assert check_share(history_from_ops(unaccepted))["valid"] is False


@pytest.fixture
def fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KafkaDist:
    monkeypatch.setenv("FAILSAFE_CACHE", str(tmp_path / "cache"))
    home = tmp_path / "kafka-4.3.1"
    (home / "libs").mkdir(parents=True)
    (home / "classes.json").write_text(json.dumps(["org.apache.kafka.tools.VerifiableShareConsumer"]))
    return KafkaDist("4.3.1", home / "libs")


def test_the_command_line_acknowledges_synchronously_and_leaves_the_groups_start_to_the_workload(
    fake_dist: KafkaDist,
) -> None:
    spec = VerifiableShareConsumerSpec("s-0", (T,), "q", bootstrap_servers="h:1", properties={"max.poll.records": "50"})
    cmd = verifiable_share_consumer_command(spec, Java(Path("java"), 17), fake_dist, "/tmp/s.properties")
    main = cmd.index("org.apache.kafka.tools.VerifiableShareConsumer")
    assert cmd[main + 1 :] == [
        "--bootstrap-server",
        "h:1",
        "--topic",
        T,
        "--group-id",
        "q",
        "--acknowledgement-mode",
        "sync",
        "--max-messages",
        "-1",
        "--verbose",
        "--command-config",
        "/tmp/s.properties",
    ]
    assert spec.java_properties() == {"client.id": "s-0", "max.poll.records": "50"}


def test_the_spec_goes_to_the_worker_whole_and_names_its_java_client() -> None:
    spec = VerifiableShareConsumerSpec("s-0", (T,), "q", bootstrap_servers="h:1", kafka_version="4.3.1")
    again = decode_spec(json.loads(json.dumps(spec_to_json(spec))))
    assert again == spec and type(again) is VerifiableShareConsumerSpec
    fields = client_config_fields(spec)
    assert (
        fields["client"] == "kafka-java"
        and {"name": "share.acknowledgement.mode", "value": "implicit"} in fields["config"]
    )


@pytest.mark.parametrize(
    "kwargs", [{"topics": (T, "u")}, {"processing_ms": 100}, {"release_per_mille": 10}, {"reject_per_mille": 1}]
)
def test_what_the_tool_cannot_do_is_refused(kwargs: dict) -> None:
    with pytest.raises(UserError):
        VerifiableShareConsumerSpec(**{"process": "s-0", "topics": (T,), "group": "q", **kwargs})


def test_records_never_reported_acknowledged_when_the_tool_ends_are_accepts_in_flight() -> None:
    events = ShareEvents("s-0", "q")
    events(_consumed({0: [5, 6]}))
    events(_acknowledged({0: [5]}))
    events(_consumed({1: [9]}))
    [op] = events.stopped_ops(time_ns=7)
    assert (op["f"], op["type"], op["error"], op["time_ns"]) == ("share-ack", "info", "STOPPED_BEFORE_REPORTED", 7)
    assert [(a["partition"], a["offset"], a["ack"]) for a in op["acks"]] == [(0, 6, "accept"), (1, 9, "accept")]
    assert events.stopped_ops() == []


def test_an_accept_in_flight_at_a_kill_is_judged_neither_way() -> None:
    events = ShareEvents("s-0", "q")
    ops = [
        {"time_ns": 1, "process": "p", "type": "invoke", "f": "send", "id": 1, "topic": T, "key": None, "value": "v5"},
        {
            "time_ns": 2,
            "process": "p",
            "type": "ok",
            "f": "send",
            "id": 1,
            "topic": T,
            "partition": 0,
            "offset": 5,
            "key": None,
            "value": "v5",
        },
    ]
    ops += events(_record(0, 5, "v5")) + events(_consumed({0: [5]})) + events.stopped_ops(time_ns=3_000_000_000)
    result = check_share(history_from_ops(ops))
    assert result["valid"] is True and result["counts"]["unknown-acks"] == 1 and result["counts"]["lost"] == 0
