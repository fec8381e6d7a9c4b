"""The history recorder: every op from many threads lands once, as one JSON object per line."""

from __future__ import annotations

import io
import threading

import orjson

from failsafe.history.recorder import OpWriter, Recorder
from failsafe.workloads.outcomes import send_outcome
from failsafe.workloads.producer import value_for


def test_ops_from_many_threads_land_once_each(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    with Recorder(path, flush_interval_s=0.01) as recorder:
        def write(n: int) -> None:
            for i in range(2000):
                recorder.record({"process": f"p{n}", "type": "info", "f": "phase", "i": i})
        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        recorder.write_line(b'{"time_ns":1,"process":"w","type":"ok","f":"send"}')
    lines = path.read_bytes().splitlines()
    ops = [orjson.loads(line) for line in lines]
    assert len(ops) == 8001
    assert {(o["process"], o["i"]) for o in ops if "i" in o} == {(f"p{n}", i) for n in range(4) for i in range(2000)}
    assert all("time_ns" in o for o in ops)


def test_op_writer_flushes_into_the_stream() -> None:
    stream = io.BytesIO()
    out = OpWriter(stream, "producer-0", flush_interval_s=3600)
    out.op("invoke", "send", id=0, topic="t", key=None, value="v")
    assert stream.getvalue() == b""
    out.flush()
    op = orjson.loads(stream.getvalue())
    assert (op["process"], op["type"], op["f"], op["id"]) == ("producer-0", "invoke", "send", 0)


def test_values_are_unique_and_padded_to_the_record_size() -> None:
    values = {value_for("producer-0", i, 100) for i in range(1000)}
    assert len(values) == 1000 and all(len(v) == 100 for v in values)
    assert value_for("p", 7, 0) == "p:7"


def test_only_errors_that_prove_no_append_are_failures() -> None:
    from confluent_kafka import KafkaError

    assert send_outcome(KafkaError(KafkaError.NOT_ENOUGH_REPLICAS)) == "fail"
    assert send_outcome(KafkaError(KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND)) == "info"
    assert send_outcome(KafkaError(KafkaError._MSG_TIMED_OUT)) == "info"
    assert send_outcome(KafkaError(KafkaError.REQUEST_TIMED_OUT)) == "info"
