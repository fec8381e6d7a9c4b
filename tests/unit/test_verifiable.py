"""Kafka's VerifiableProducer / VerifiableConsumer events translated into history ops.

The event lines are copied from the tools of Kafka 4.3.1 run against a local cluster.
"""

from __future__ import annotations

import io
import json
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import orjson
import pytest

from failsafe.checkers import run_checkers
from failsafe.errors import UserError, WorkloadFailed
from failsafe.history.load import history_from_ops
from failsafe.history.recorder import OpWriter
from failsafe.jvm.java import Java
from failsafe.jvm.kafka import KafkaDist
from failsafe.waiting import wait_until
from failsafe.workloads.verifiable.clients import (
    VerifiableConsumerSpec,
    VerifiableProducerSpec,
    properties_text,
    run_verifiable,
    verifiable_consumer_command,
    verifiable_producer_command,
    verifiable_spec_from_json,
)
from failsafe.workloads.verifiable.events import (
    ProducerState,
    consumer_event_to_ops,
    java_send_outcome,
    parse_event,
    producer_event_to_ops,
    producer_stopped_ops,
)
from failsafe.workloads.worker import decode_spec

TOPIC = "verifiable-probe"
PRODUCED = [
    '{"timestamp":1795321500959,"name":"startup_complete"}',
    '{"timestamp":1795321503258,"name":"producer_send_success","key":"0","value":"7.0","offset":0,"topic":"verifiable-probe","partition":2}',
    '{"timestamp":1795321503284,"name":"producer_send_success","key":"2","value":"7.2","offset":1,"topic":"verifiable-probe","partition":2}',
    '{"timestamp":1795321503284,"name":"producer_send_success","key":"0","value":"7.3","offset":2,"topic":"verifiable-probe","partition":2}',
    '{"timestamp":1795321503284,"name":"producer_send_success","key":"2","value":"7.5","offset":3,"topic":"verifiable-probe","partition":2}',
    '{"timestamp":1795321503507,"name":"producer_send_success","key":"1","value":"7.1","offset":0,"topic":"verifiable-probe","partition":0}',
    '{"timestamp":1795321503508,"name":"producer_send_success","key":"1","value":"7.4","offset":1,"topic":"verifiable-probe","partition":0}',
    '{"timestamp":1795321503564,"name":"shutdown_complete"}',
    '{"timestamp":1795321503568,"name":"tool_data","sent":6,"acked":6,"target_throughput":-1,"avg_throughput":2.288329519450801}',
]
ASSIGNED = (
    '{"timestamp":1795321554326,"name":"partitions_assigned","partitions":[{"topic":"verifiable-probe","partition":0},'
    '{"topic":"verifiable-probe","partition":1},{"topic":"verifiable-probe","partition":2}]}'
)
CONSUMED = [
    "Option --consumer.config has been deprecated and will be removed in a future version. Use "
    "--command-config instead.",
    '{"timestamp":1795321546682,"name":"startup_complete"}',
    ASSIGNED,
    '{"timestamp":1795321555589,"name":"record_data","key":"0","value":"7.0","topic":"verifiable-probe","partition":2,"offset":0}',
    '{"timestamp":1795321555621,"name":"record_data","key":"2","value":"7.2","topic":"verifiable-probe","partition":2,"offset":1}',
    '{"timestamp":1795321555671,"name":"record_data","key":"0","value":"7.3","topic":"verifiable-probe","partition":2,"offset":2}',
    '{"timestamp":1795321555671,"name":"record_data","key":"2","value":"7.5","topic":"verifiable-probe","partition":2,"offset":3}',
    '{"timestamp":1795321555671,"name":"record_data","key":"1","value":"7.1","topic":"verifiable-probe","partition":0,"offset":0}',
    '{"timestamp":1795321555671,"name":"record_data","key":"1","value":"7.4","topic":"verifiable-probe","partition":0,"offset":1}',
    '{"timestamp":1795321555672,"name":"records_consumed","count":6,"partitions":[{"topic":"verifiable-probe","partition":2,"count":4,"minOffset":0,'
    '"maxOffset":3},{"topic":"verifiable-probe","partition":0,"count":2,"minOffset":0,"maxOffset":1}]}',
    '{"timestamp":1795321555963,"name":"offsets_committed","offsets":[{"topic":"verifiable-probe","partition":2,"offset":4},'
    '{"topic":"verifiable-probe","partition":0,"offset":2}],"success":true}',
    '{"timestamp":1795321556203,"name":"partitions_revoked","partitions":[{"topic":"verifiable-probe","partition":0},'
    '{"topic":"verifiable-probe","partition":1},{"topic":"verifiable-probe","partition":2}]}',
    '{"timestamp":1795321556654,"name":"shutdown_complete"}',
    '{"timestamp":1795321556664,"name":"shutdown_requested"}',
]


def send_error(exception: str, message: str = "") -> dict:
    line = (
        '{"timestamp":1795321591425,"name":"producer_send_error","topic":"verifiable-probe","key":"0","value":"9.0",'
        f'"exception":"class org.apache.kafka.common.errors.{exception}","message":"{message}"}}'
    )
    return json.loads(line)


def produced_ops(lines: list[str] = PRODUCED, process: str = "vp-0") -> list[dict]:
    state = ProducerState(TOPIC, 7, 3)
    return [op for line in lines if (event := parse_event(line)) for op in producer_event_to_ops(event, process, state)]


def consumed_ops(lines: list[str] = CONSUMED, process: str = "vc-0", verbose: bool = True) -> list[dict]:
    return [
        op
        for line in lines
        if (event := parse_event(line))
        for op in consumer_event_to_ops(event, process, "g", verbose=verbose)
    ]


# -- producer events ------------------------------------------------------------------------------
def test_a_successful_send_is_an_invoke_then_ok_at_the_event_time() -> None:
    invoke, ok = produced_ops(PRODUCED[1:2])
    assert invoke == {
        "time_ns": 1795321503258_000_000,
        "process": "vp-0",
        "type": "invoke",
        "f": "send",
        "id": 0,
        "topic": TOPIC,
        "key": "0",
        "value": "7.0",
    }
    assert ok == {
        "time_ns": 1795321503258_000_000,
        "process": "vp-0",
        "type": "ok",
        "f": "send",
        "id": 0,
        "topic": TOPIC,
        "partition": 2,
        "offset": 0,
        "key": "0",
        "value": "7.0",
    }


def test_send_ids_are_the_sequence_numbers_of_the_values() -> None:
    sends = [op for op in produced_ops() if op["f"] == "send" and op["type"] == "ok"]
    assert [(op["id"], op["value"]) for op in sends] == [
        (0, "7.0"),
        (2, "7.2"),
        (3, "7.3"),
        (5, "7.5"),
        (1, "7.1"),
        (4, "7.4"),
    ]


@pytest.mark.parametrize(
    ("exception", "outcome", "error"),
    [
        ("NotEnoughReplicasException", "fail", "NOT_ENOUGH_REPLICAS"),
        ("RecordTooLargeException", "fail", "MSG_SIZE_TOO_LARGE"),
        ("UnknownTopicOrPartitionException", "fail", "UNKNOWN_TOPIC_OR_PART"),
        ("TopicAuthorizationException", "fail", "TOPIC_AUTHORIZATION_FAILED"),
        ("InvalidTopicException", "fail", "TOPIC_EXCEPTION"),
        ("TimeoutException", "info", "MSG_TIMED_OUT"),
        ("NetworkException", "info", "NETWORK_EXCEPTION"),
        ("NotEnoughReplicasAfterAppendException", "info", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"),
        ("NotLeaderOrFollowerException", "info", "NOT_LEADER_FOR_PARTITION"),
        ("DisconnectException", "info", "TRANSPORT"),
        ("SomethingNewException", "info", "SomethingNewException"),
    ],
)
def test_a_send_error_is_fail_only_when_it_proves_the_write_was_not_appended(
    exception: str, outcome: str, error: str
) -> None:
    invoke, done = producer_event_to_ops(send_error(exception, "boom"), "vp-0", ProducerState(TOPIC, 9))
    assert invoke["type"] == "invoke" and invoke["time_ns"] == done["time_ns"] == 1795321591425_000_000
    assert done == {
        "time_ns": 1795321591425_000_000,
        "process": "vp-0",
        "type": outcome,
        "f": "send",
        "id": 0,
        "topic": TOPIC,
        "key": "0",
        "value": "9.0",
        "partition": None,
        "error": error,
    }


def test_exceptions_outside_the_kafka_errors_package_are_placed_by_simple_name() -> None:
    assert java_send_outcome("class org.apache.kafka.common.KafkaException") == ("info", "KafkaException")
    assert java_send_outcome("class org.example.Outer$NotEnoughReplicasException") == ("fail", "NOT_ENOUGH_REPLICAS")
    assert java_send_outcome(None) == ("info", "UNKNOWN")


def test_acks_0_offset_minus_one_is_null() -> None:
    event = {**json.loads(PRODUCED[1]), "offset": -1}
    assert producer_event_to_ops(event, "vp-0", ProducerState(TOPIC, 7))[1]["offset"] is None


def test_shutdown_is_a_close_and_startup_and_tool_data_are_not_ops() -> None:
    ops = produced_ops([PRODUCED[0], PRODUCED[-2], PRODUCED[-1]])
    assert [(op["type"], op["f"]) for op in ops] == [("info", "close")]


def test_sends_never_reported_become_unknown_when_the_tool_is_killed() -> None:
    state = ProducerState(TOPIC, 7, 3)
    for line in (PRODUCED[1], PRODUCED[4]):  # 7.0 and 7.5 reported: 1..4 were sent, still in flight
        producer_event_to_ops(json.loads(line), "vp-0", state)
    ops = producer_stopped_ops(state, "vp-0", time_ns=5)
    infos = [op for op in ops if op["type"] == "info"]
    assert [(op["id"], op["key"], op["value"], op["error"]) for op in infos] == [
        (1, "1", "7.1", "PRODUCER_STOPPED_IN_FLIGHT"),
        (2, "2", "7.2", "PRODUCER_STOPPED_IN_FLIGHT"),
        (3, "0", "7.3", "PRODUCER_STOPPED_IN_FLIGHT"),
        (4, "1", "7.4", "PRODUCER_STOPPED_IN_FLIGHT"),
    ]
    assert [op["type"] for op in ops] == ["invoke", "info"] * 4
    assert producer_stopped_ops(state, "vp-0") == []


def test_tool_data_counts_sends_after_the_last_report() -> None:
    state = ProducerState(TOPIC, 7)
    producer_event_to_ops(json.loads(PRODUCED[1]), "vp-0", state)
    producer_event_to_ops({"timestamp": 1, "name": "tool_data", "sent": 3}, "vp-0", state)
    assert [op["value"] for op in producer_stopped_ops(state, "vp-0") if op["type"] == "info"] == ["7.1", "7.2"]


# -- consumer events ------------------------------------------------------------------------------
def test_each_record_is_a_poll_with_its_key_and_value_and_the_summary_is_dropped() -> None:
    polls = [op for op in consumed_ops() if op["f"] == "poll"]
    assert len(polls) == 6
    assert polls[0] == {
        "time_ns": 1795321555589_000_000,
        "process": "vc-0",
        "type": "ok",
        "f": "poll",
        "group": "g",
        "records": [{"topic": TOPIC, "partition": 2, "offset": 0, "key": "0", "value": "7.0"}],
    }


TERSE = [line for line in CONSUMED if "record_data" not in line]


def test_without_verbose_records_are_known_by_offset_only() -> None:
    polls = [op for op in consumed_ops(TERSE, verbose=False) if op["f"] == "poll"]
    assert len(polls) == 1
    assert [(r["partition"], r["offset"], r["key"], r["value"]) for r in polls[0]["records"]] == [
        (2, 0, None, None),
        (2, 1, None, None),
        (2, 2, None, None),
        (2, 3, None, None),
        (0, 0, None, None),
        (0, 1, None, None),
    ]


def test_assignment_and_revocation() -> None:
    ops = [op for op in consumed_ops() if op["f"] in ("assign", "revoke")]
    every = [{"topic": TOPIC, "partition": p} for p in (0, 1, 2)]
    assert [(op["type"], op["f"], op["group"], op["partitions"]) for op in ops] == [
        ("info", "assign", "g", every),
        ("info", "revoke", "g", every),
    ]
    assert ops[0]["time_ns"] == 1795321554326_000_000


def test_commits_ok_and_fail_and_empty_commits_are_not_written() -> None:
    ok = consumed_ops([CONSUMED[10]])
    assert [(op["type"], op["f"], op["offsets"]) for op in ok] == [
        ("ok", "commit", [{"topic": TOPIC, "partition": 2, "offset": 4}, {"topic": TOPIC, "partition": 0, "offset": 2}])
    ]
    failed = consumer_event_to_ops(
        {
            "timestamp": 1,
            "name": "offsets_committed",
            "offsets": [{"topic": TOPIC, "partition": 0, "offset": 9}],
            "success": False,
            "error": "Commit cannot be completed since the group has already rebalanced",
        },
        "vc-0",
        "g",
    )
    assert [(op["type"], op["offsets"][0]["offset"], op["error"]) for op in failed] == [
        ("fail", 9, "Commit cannot be completed since the group has already rebalanced")
    ]
    assert (
        consumer_event_to_ops(
            {"timestamp": 1, "name": "offsets_committed", "offsets": [], "success": True}, "vc-0", "g"
        )
        == []
    )


def test_shutdown_complete_is_a_close_of_the_group_member() -> None:
    assert [(op["type"], op["f"], op["group"]) for op in consumed_ops(CONSUMED[-2:])] == [("info", "close", "g")]


def test_unknown_events_and_other_lines_are_ignored() -> None:
    assert consumer_event_to_ops({"timestamp": 1, "name": "partitions_eaten"}, "vc-0", "g") == []
    assert producer_event_to_ops({"timestamp": 1, "name": "partitions_eaten"}, "vp-0", ProducerState(TOPIC)) == []
    assert parse_event(CONSUMED[0]) is None
    assert parse_event(b"[2026-11-22 04:25:02,757] WARN Connection to node -2 could not be established") is None
    assert parse_event("{not json") is None and parse_event('{"timestamp": 1}') is None
    assert parse_event(b'{"timestamp":1,"name":"startup_complete"}\n') == {"timestamp": 1, "name": "startup_complete"}


def test_an_event_without_timestamp_gets_the_time_it_was_read() -> None:
    (op,) = consumer_event_to_ops({"name": "shutdown_complete"}, "vc-0", "g")
    assert abs(op["time_ns"] - time.time_ns()) < 60 * 10**9


# -- the translated history and the checkers ------------------------------------------------------
def _final_read() -> list[dict]:
    return [
        {
            "time_ns": 2,
            "process": "log-reader",
            "type": "ok",
            "f": "log-read",
            "topic": TOPIC,
            "partition": p,
            "records": [
                {"topic": TOPIC, "partition": p, "offset": o, "key": None, "value": v} for o, v in enumerate(values)
            ],
        }
        for p, values in ((2, ["7.0", "7.2", "7.3", "7.5"]), (0, ["7.1", "7.4"]))
    ]


def test_a_clean_translated_history_is_valid_and_a_removed_read_is_lost() -> None:
    clean = history_from_ops(produced_ops() + consumed_ops() + _final_read())
    assert clean.sends.height == 6 and clean.reads.height == 6
    result = run_checkers(clean, None, ["delivery", "order"])
    assert result["delivery"]["valid"] is True, result
    assert result["order"]["valid"] is True, result
    assert result["delivery"]["counts"]["acknowledged"] == 6 and result["delivery"]["counts"]["read"] == 6

    without_73 = [line for line in CONSUMED if '"value":"7.3"' not in line]
    broken = run_checkers(
        history_from_ops(produced_ops() + consumed_ops(without_73) + _final_read()), None, ["delivery"]
    )["delivery"]
    assert broken["valid"] is False
    assert broken["counts"]["lost"] == 1
    assert any(example.get("value") == "7.3" for examples in broken["examples"].values() for example in examples), (
        broken["examples"]
    )


def test_offset_only_reads_take_their_values_from_the_log_read() -> None:
    h = history_from_ops(produced_ops() + consumed_ops(TERSE, verbose=False) + _final_read())
    assert sorted(h.reads["value"].to_list()) == ["7.0", "7.1", "7.2", "7.3", "7.4", "7.5"]
    assert run_checkers(h, None, ["delivery"])["delivery"]["valid"] is True


# -- specs and command lines ----------------------------------------------------------------------
def test_retries_default_to_the_java_clients_so_acks_all_is_idempotent() -> None:
    props = VerifiableProducerSpec("vp-0", TOPIC, properties={"batch.size": "1"}).java_properties()
    assert props == {"client.id": "vp-0", "retries": "2147483647", "enable.idempotence": "true", "batch.size": "1"}
    tools_own = VerifiableProducerSpec("vp-0", TOPIC, retries=0).java_properties()
    assert (tools_own["retries"], tools_own["enable.idempotence"]) == ("0", "false")
    assert VerifiableProducerSpec("vp-0", TOPIC, acks="1").java_properties()["enable.idempotence"] == "false"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"acks": "2"},
        {"record_size": 100},
        {"idempotence": True, "retries": 0},
        {"idempotence": True, "acks": "1"},
        {"value_prefix": 2**31},
    ],
)
def test_producer_specs_the_tool_cannot_run_are_refused(kwargs: dict) -> None:
    with pytest.raises(UserError, match="vp-0"):
        VerifiableProducerSpec("vp-0", TOPIC, **kwargs)


def test_consumer_specs_need_one_topic_and_a_group() -> None:
    with pytest.raises(UserError, match="exactly one topic"):
        VerifiableConsumerSpec("vc-0", (TOPIC, "other"), group="g")
    with pytest.raises(UserError, match="group is required"):
        VerifiableConsumerSpec("vc-0", (TOPIC,))


def test_value_prefixes_differ_between_producers_and_fit_a_java_int() -> None:
    prefixes = {VerifiableProducerSpec(f"producer-{i}", TOPIC).prefix for i in range(50)}
    assert len(prefixes) == 50 and all(0 <= p < 2**31 for p in prefixes)
    assert VerifiableProducerSpec("vp-0", TOPIC, value_prefix=7).prefix == 7


def test_specs_survive_the_trip_through_json_to_the_worker() -> None:
    producer = VerifiableProducerSpec("vp-0", TOPIC, bootstrap_servers="b:1", count=10, properties={"linger.ms": "5"})
    consumer = VerifiableConsumerSpec("vc-0", (TOPIC,), group="g", session_timeout_ms=10000)
    for spec in (producer, consumer):
        data = orjson.loads(orjson.dumps({"kind": spec.KIND, **asdict(spec)}))
        assert verifiable_spec_from_json(data) == spec
        # What the worker process does with its argument: the same spec, and the verifiable driver for it.
        assert decode_spec(data) == spec and type(decode_spec(data)) is type(spec)


@pytest.fixture
def fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KafkaDist:
    """A KafkaDist whose class index names the tools, with no jars: enough for command lines."""
    monkeypatch.setenv("FAILSAFE_CACHE", str(tmp_path / "cache"))
    home = tmp_path / "kafka-4.3.1"
    (home / "libs").mkdir(parents=True)
    (home / "classes.json").write_text(
        json.dumps(["org.apache.kafka.tools.VerifiableConsumer", "org.apache.kafka.tools.VerifiableProducer"])
    )
    return KafkaDist("4.3.1", home / "libs")


def _tool_args(cmd: list[str], main_class: str) -> list[str]:
    assert cmd[cmd.index("-cp") + 2] == main_class
    return cmd[cmd.index("-cp") + 3 :]


def test_producer_command_line(fake_dist: KafkaDist) -> None:
    spec = VerifiableProducerSpec(
        "vp-0", TOPIC, bootstrap_servers="h:1,h:2", rate_per_s=50.4, count=200, keys=4, value_prefix=7
    )
    cmd = verifiable_producer_command(spec, Java(Path("/j/bin/java"), 17), fake_dist, Path("/tmp/p.properties"))
    assert cmd[0] == "/j/bin/java"
    assert _tool_args(cmd, "org.apache.kafka.tools.VerifiableProducer") == [
        "--bootstrap-server",
        "h:1,h:2",
        "--topic",
        TOPIC,
        "--acks",
        "-1",
        "--value-prefix",
        "7",
        "--throughput",
        "50",
        "--max-messages",
        "200",
        "--repeating-keys",
        "4",
        "--producer.config",
        "/tmp/p.properties",
    ]
    unkeyed = VerifiableProducerSpec("vp-0", TOPIC, rate_per_s=0, keys=0, acks="0", value_prefix=1)
    args = _tool_args(
        verifiable_producer_command(unkeyed, Java(Path("java"), 17), fake_dist),
        "org.apache.kafka.tools.VerifiableProducer",
    )
    assert "--repeating-keys" not in args and "--producer.config" not in args
    assert (
        args[args.index("--throughput") + 1] == "-1"
        and args[args.index("--acks") + 1] == "0"
        and args[args.index("--max-messages") + 1] == "-1"
    )


def test_consumer_command_line(fake_dist: KafkaDist) -> None:
    spec = VerifiableConsumerSpec(
        "vc-0", (TOPIC,), bootstrap_servers="h:1", group="g", session_timeout_ms=10000, group_protocol="consumer"
    )
    cmd = verifiable_consumer_command(spec, Java(Path("java"), 17), fake_dist, Path("/tmp/c.properties"))
    assert _tool_args(cmd, "org.apache.kafka.tools.VerifiableConsumer") == [
        "--bootstrap-server",
        "h:1",
        "--topic",
        TOPIC,
        "--group-id",
        "g",
        "--reset-policy",
        "earliest",
        "--max-messages",
        "-1",
        "--verbose",
        "--session-timeout",
        "10000",
        "--group-protocol",
        "consumer",
        "--consumer.config",
        "/tmp/c.properties",
    ]
    auto = VerifiableConsumerSpec(
        "vc-0", (TOPIC,), group="g", auto_commit=True, verbose=False, auto_commit_interval_ms=250
    )
    args = _tool_args(
        verifiable_consumer_command(auto, Java(Path("java"), 17), fake_dist),
        "org.apache.kafka.tools.VerifiableConsumer",
    )
    assert "--enable-autocommit" in args and "--verbose" not in args
    assert auto.java_properties() == {"client.id": "vc-0", "auto.commit.interval.ms": "250"}
    remote = VerifiableConsumerSpec("vc-0", (TOPIC,), group="g", group_protocol="consumer", remote_assignor="range")
    args = _tool_args(
        verifiable_consumer_command(remote, Java(Path("java"), 17), fake_dist),
        "org.apache.kafka.tools.VerifiableConsumer",
    )
    assert args[args.index("--group-remote-assignor") + 1] == "range"


def test_properties_text_escapes_what_java_would_misread() -> None:
    text = properties_text({"sasl.jaas.config": "a=b \\ c", "odd key": "x\ny"})
    assert text == "sasl.jaas.config=a=b \\\\ c\nodd\\ key=x\\ny\n"


# -- running a tool (a fake JVM that prints canned events) ----------------------------------------
FAKE_JVM = """#!{python}
import os, signal, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_ARGS"] + ".pid", "w") as f:
    f.write(str(os.getpid()))
with open(os.environ["FAKE_ARGS"], "w") as f:
    f.write("\\n".join(args))
flag = "--producer.config" if "--producer.config" in args else "--consumer.config"
config = args[args.index(flag) + 1]
with open(os.environ["FAKE_ARGS"] + ".properties", "w") as f:
    f.write(open(config).read())
def on_term(*_):
    print('{{"timestamp":1795321503564,"name":"shutdown_complete"}}', flush=True)
    sys.exit(143)
signal.signal(signal.SIGTERM, signal.SIG_IGN if os.environ.get("FAKE_IGNORE_TERM") else on_term)
for line in open(os.environ["FAKE_EVENTS"]):
    print(line.rstrip("\\n"), flush=True)
if os.environ.get("FAKE_EXIT"):
    sys.exit(int(os.environ["FAKE_EXIT"]))
# Never outlives a test that forgot it, whatever signal it ignores.
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    time.sleep(0.05)
"""


@pytest.fixture
def fake_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Java:
    script = tmp_path / "java"
    script.write_text(FAKE_JVM.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_ARGS", str(tmp_path / "args"))
    return Java(script, 17)


@pytest.fixture
def run_tool(
    fake_java: Java, fake_dist: KafkaDist, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable]:
    """Starts run_verifiable on the fake JVM in a thread; every run is stopped when the test ends."""
    started: list[tuple[threading.Event, threading.Thread]] = []

    def start(spec, events: list[str]) -> tuple[io.BytesIO, threading.Event, threading.Thread, dict]:
        (tmp_path / "events").write_text("\n".join(events) + "\n")
        monkeypatch.setenv("FAKE_EVENTS", str(tmp_path / "events"))
        buffer, stop, outcome = io.BytesIO(), threading.Event(), {}

        def run() -> None:
            try:
                outcome["rc"] = run_verifiable(
                    spec, OpWriter(buffer, spec.process), stop, java=fake_java, dist=fake_dist
                )
            except WorkloadFailed as e:
                outcome["error"] = e

        thread = threading.Thread(target=run, daemon=True)
        started.append((stop, thread))
        thread.start()
        return buffer, stop, thread, outcome

    yield start
    for stop, thread in started:
        stop.set()
        thread.join(30)


def _alive(tmp_path: Path) -> bool:
    """Whether the fake JVM still runs (a reaped process has no /proc entry)."""
    return Path(f"/proc/{(tmp_path / 'args.pid').read_text()}").exists()


def _ops(buffer: io.BytesIO) -> list[dict]:
    return [orjson.loads(line) for line in buffer.getvalue().splitlines()]


def test_run_translates_the_tools_lines_and_stops_it_with_sigterm(run_tool, tmp_path) -> None:
    spec = VerifiableConsumerSpec("vc-0", (TOPIC,), bootstrap_servers="h:1", group="g")
    buffer, stop, thread, outcome = run_tool(spec, CONSUMED[:-2])
    wait_until(lambda: len(_ops(buffer)) >= 9, 30, "the consumer's ops were not written")
    stop.set()
    thread.join(30)
    assert not thread.is_alive() and outcome == {"rc": 143}
    ops = _ops(buffer)
    assert [op["f"] for op in ops] == ["assign"] + ["poll"] * 6 + ["commit", "revoke", "close"]
    assert all(op["process"] == "vc-0" and op["time_ns"] % 1_000_000 == 0 for op in ops)
    assert list(ops[1])[:4] == ["time_ns", "process", "type", "f"]
    assert "--verbose" in (tmp_path / "args").read_text().splitlines()
    assert (tmp_path / "args.properties").read_text() == "client.id=vc-0\n"
    assert not _alive(tmp_path)


def test_a_tool_deaf_to_sigterm_is_killed_and_its_unreported_sends_are_unknown(run_tool, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_IGNORE_TERM", "1")
    spec = VerifiableProducerSpec("vp-0", TOPIC, keys=3, value_prefix=7, stop_timeout_s=0.5)
    buffer, stop, thread, outcome = run_tool(spec, [PRODUCED[1], PRODUCED[4]])
    wait_until(lambda: len(_ops(buffer)) >= 4, 30, "the producer's ops were not written")
    stop.set()
    thread.join(30)
    assert not thread.is_alive() and outcome == {"rc": -9}
    ops = _ops(buffer)
    assert [(op["type"], op.get("value")) for op in ops if op["type"] in ("ok", "info")] == [
        ("ok", "7.0"),
        ("ok", "7.5"),
        ("info", "7.1"),
        ("info", "7.2"),
        ("info", "7.3"),
        ("info", "7.4"),
        ("info", None),
    ]
    assert ops[-1]["f"] == "crash" and "did not stop" in ops[-1]["error"]
    assert "enable.idempotence=true" in (tmp_path / "args.properties").read_text()
    assert not _alive(tmp_path)


def test_a_tool_that_ends_unasked_is_an_error_after_its_ops_are_written(run_tool, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_EXIT", "1")
    spec = VerifiableConsumerSpec("vc-0", (TOPIC,), group="g")
    buffer, _stop, thread, outcome = run_tool(spec, [ASSIGNED])
    thread.join(30)
    assert "exited with code 1 without being stopped" in str(outcome["error"])
    assert [op["f"] for op in _ops(buffer)] == ["assign"]


def test_a_producer_with_a_count_may_end_by_itself(run_tool, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_EXIT", "0")
    spec = VerifiableProducerSpec("vp-0", TOPIC, count=6, keys=3, value_prefix=7)
    buffer, _stop, thread, outcome = run_tool(spec, PRODUCED)
    thread.join(30)
    assert outcome == {"rc": 0}
    ops = _ops(buffer)
    assert sum(op["type"] == "ok" for op in ops) == 6 and ops[-1]["f"] == "close"


# -- on a real cluster ----------------------------------------------------------------------------
