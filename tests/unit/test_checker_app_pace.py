"""The app checker's identity in a header and its pace (checkers/app/pace.py): the latency from an input's send to its
output, and the pauses of the output while input waited, on hand-written histories."""

from __future__ import annotations

import json

from failsafe.checkers import run_checkers
from failsafe.checkers.app.pace import PAUSE_MIN_MS
from tests.unit.test_checker_builders import MS, T0, client_config, fault, history, read, rec, send

IN, OUT = "app-in", "app-out"


def stamped(
    offset: int,
    value: str,
    ms: float,
    headers: dict | None = None,
    topic: str = OUT,
    timestamp_type: str = "LogAppendTime",
) -> dict:
    """An output record the broker wrote ``ms`` after the history's start, with its headers."""
    return {
        **rec(offset, value, topic=topic),
        "timestamp_ms": (T0 + int(ms * MS)) // 1_000_000,
        "timestamp_type": timestamp_type,
        "headers": json.dumps(headers) if headers is not None else None,
    }


def inputs(sent_ms: list[float]) -> list[dict]:
    """One input record sent at each of ``sent_ms`` (input:0, input:1, ...), all acknowledged and in the input log."""
    ops = [client_config("input", acks="all")]
    for i, ms in enumerate(sent_ms):
        ops += send("input", i, f"input:{i}", i, ms=ms, topic=IN)
    ops.append(read(0, [rec(i, f"input:{i}", topic=IN) for i in range(len(sent_ms))], topic=IN))
    return ops


def judge(*ops: dict | list[dict], **options: object) -> dict:
    opts = {"input_topics": [IN], "output_topics": [OUT], **options}
    return run_checkers(history(*ops), {"app": opts}, ["app"])["app"]


def test_an_identity_in_a_header_is_read_from_the_records_headers() -> None:
    header = {"failsafe-id": "input:0", "other": "x"}
    ok = judge(inputs([0]), read(0, [stamped(0, "anything", 10, header)], topic=OUT), identity="header:failsafe-id")
    assert ok["valid"] is True
    # The same output without the header carries no identity: the input is lost and the output a phantom.
    bare = judge(inputs([0]), read(0, [stamped(0, "input:0", 10)], topic=OUT), identity="header:failsafe-id")
    assert bare["valid"] is False and set(bare["violations"]) == {"lost", "phantom"}


def test_a_header_carried_twice_is_a_duplicate() -> None:
    header = {"failsafe-id": "input:0"}
    out = [stamped(0, "a", 10, header), stamped(1, "b", 20, header)]
    result = judge(inputs([0]), read(0, out, topic=OUT), identity="header:failsafe-id")
    assert result["violations"] == ["duplicate"]


def test_latency_is_from_each_inputs_send_to_its_first_output() -> None:
    out = [
        stamped(0, "input:0", 100),
        stamped(1, "input:1", 300),
        stamped(2, "input:1", 900),
        stamped(3, "input:2", 500),
    ]
    pace = judge(inputs([0, 100, 200]), read(0, out, topic=OUT), delivery="at-least-once")["pace"]
    assert pace["latency-ms"] == {"records": 3, "p50": 200, "p99": 300, "max": 300}


def test_a_gap_in_the_output_while_input_was_sent_is_a_pause_with_the_faults_in_force() -> None:
    """Output every 100 ms but a 3 s hole in which input kept coming; a broker was killed during the hole."""
    sent = [i * 100.0 for i in range(60)]
    written = [ms for ms in sent if not 1000 <= ms < 4000]
    out = [stamped(i, f"input:{i}", ms + 50) for i, ms in enumerate(written)]
    ops = (inputs(sent), read(0, out, topic=OUT), fault(1, start_ms=900, stop_ms=2000, nodes=[2]))
    pace = judge(*ops, identity="key")["pace"]
    assert pace["pauses-found"] == 1 and pace["longest-pause-ms"] == 3100
    (pause,) = pace["pauses"]
    assert pause["at_s"] == 0.95 and pause["faults"] == ["kill 2"]


def test_a_gap_after_the_input_stopped_is_no_pause() -> None:
    """The last output 5 s after the others (a replay): nothing was sent in between, so nothing waited."""
    out = [stamped(0, "input:0", 10), stamped(1, "input:1", 20), stamped(2, "input:1", 20 + 5 * PAUSE_MIN_MS)]
    pace = judge(inputs([0, 15]), read(0, out, topic=OUT), delivery="at-least-once")["pace"]
    assert pace["pauses"] == [] and pace["longest-pause-ms"] == 0


def test_totals_report_their_pauses_without_a_latency() -> None:
    ops = [client_config("input", acks="all")]
    ops += send("input", 0, "input:0", 0, key="k0", topic=IN)
    ops.append(read(0, [rec(0, "input:0", key="k0", topic=IN)], topic=IN))
    total = {**stamped(0, "1", 10), "key": "k0"}
    result = judge(ops, read(0, [total], topic=OUT), form="totals")
    assert result["valid"] is True and "latency-ms" not in result["pace"]


def test_an_app_runs_summary_says_its_latency_pauses_and_uncommitted_view() -> None:
    from failsafe.scenarios.kinds.app.show import app_lines

    sent = [i * 100.0 for i in range(60)]
    kept = [(i, ms) for i, ms in enumerate(sent) if not 1000 <= ms < 4000]
    out = [stamped(offset, f"input:{i}", ms + 50) for offset, (i, ms) in enumerate(kept)]
    app = judge(
        inputs(sent), read(0, out, topic=OUT), fault(1, start_ms=900, stop_ms=2000, nodes=[2]), delivery="at-most-once"
    )
    lines = app_lines({**app, "uncommitted_view": {"readers": ["tail"], "records": 9, "not-in-committed-log": 2}})
    assert lines[0].startswith("App latency, input send to output: p50 50 ms")
    assert "longest 3.1 s, 0.9 s after the input began, during kill 2" in lines[1]
    assert lines[2] == "read_uncommitted readers (tail): 9 records, 2 not in the committed log"
    assert app_lines({}) == []


def test_output_timestamps_its_producer_set_are_not_measured() -> None:
    """Kafka Streams gives an output its input's timestamp (CreateTime): a latency from it would be near 0."""
    out = [
        stamped(0, "input:0", 0, timestamp_type="CreateTime"),
        stamped(1, "input:1", 100, timestamp_type="CreateTime"),
    ]
    pace = judge(inputs([0, 100]), read(0, out, topic=OUT))["pace"]
    assert pace == {"measured": False, "why": "no output record has a broker's timestamp (LogAppendTime)"}
