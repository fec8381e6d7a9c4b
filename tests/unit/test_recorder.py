"""The history recorder: every op from many threads lands once, as one JSON object per line."""

from __future__ import annotations

import io
import json
import random
import threading

import orjson
import pytest
from polars.testing import assert_frame_equal

from failsafe.history.columnar import FRAMES_DIR, read_frames
from failsafe.history.live_copy import LiveCopy
from failsafe.history.load import decode_chunk, load_history
from failsafe.history.model import FRAME_SCHEMAS, HistoryFormatError
from failsafe.history.recorder import OpWriter, Recorder
from failsafe.workloads.outcomes import send_outcome
from failsafe.workloads.producer import value_for
from tests.unit.test_checker_builders import (
    assign,
    at,
    client_config,
    fault,
    log_read,
    poll,
    rec,
    revoke,
    send,
    topology,
)


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


# -- the columnar copy the recorder leaves (history/live_copy.py) ----------------------------------------------------


def odd_lines() -> list[bytes]:
    """A history with what real and hand-written ones hold: every frame's ops, and the odd cases the loader handles."""
    ops: list[dict] = [
        client_config("producer-0", acks="all"),
        {"time_ns": at(0), "process": "runner", "type": "info", "f": "phase", "phase": "warm-up"},
        assign("consumer-0", [0, 1], ms=0),
        *send("producer-0", 1, "a", 0, ms=1),
        *send("producer-1", 1, "b", 1, ms=1, outcome="fail"),  # the same id in another producer
        *send("producer-0", 2, "c", None, ms=2, outcome="info"),
        *send("producer-0", 3, "d", None, ms=3, outcome=None),  # never completed
        send("producer-0", 9, "orphan", 5, ms=4)[1],  # a completion without its invoke
        # VerifiableConsumer: offsets only, key and value from the log.
        poll("consumer-0", [rec(0, "a"), {"topic": "t", "partition": 0, "offset": 1}], ms=10),
        poll("consumer-0", [rec(2, "e", key="k")], ms=11),
        revoke("consumer-0", [1], ms=12),
        *fault(1, start_ms=20, stop_ms=30, nodes=[2]),
        {
            "time_ns": at(31),
            "process": "nemesis",
            "type": "info",
            "f": "fault-stop",
            "fault_id": 2,
            "ok": False,
            "attempt": 1,
            "error": "x",
        },
        topology(15, [(0, 2, [2, 1, 3], [2, 1, 3])]),
        {"time_ns": at(16), "process": "topology", "type": "info", "f": "topology", "error": "timed out"},
        {
            "time_ns": at(40),
            "process": "consumer-0",
            "type": "ok",
            "f": "commit",
            "group": "g",
            "offsets": [{"topic": "t", "partition": 0, "offset": 2}],
        },
        {"time_ns": at(41), "process": "consumer-0", "type": "info", "f": "close"},
        {"time_ns": at(42), "process": "runner", "type": "info", "f": "drained", "ok": True, "drain_s": 1.5},
        {"time_ns": at(43), "process": "runner", "type": "info", "f": "controller", "controller": 1000},
        {
            "time_ns": at(44),
            "process": "runner",
            "type": "info",
            "f": "something-new",
            "records": "not a list",
            "nodes": {"a": 1},
        },
        log_read([rec(0, "a"), rec(1, "v1", key="k1"), rec(2, "e", key="k")]),
    ]
    lines = [orjson.dumps(op) for op in ops]
    # Out of order: a completion appended before its invoke, and an ok before the earlier send's.
    lines += [orjson.dumps(op) for op in reversed(send("producer-2", 7, "f", 3, ms=50))]
    # Written with spaces (json.dumps), as a hand-written history has them: one repeats producer-0's id 1.
    lines += [
        json.dumps(op).encode()
        for op in [*send("producer-0", 1, "again", 4, ms=60), *send("producer-3", 4, "g", 6, ms=61)]
    ]
    return [*lines[:5], b"", *lines[5:]]  # and an empty line


def _same_as_the_json(path) -> None:
    copy = read_frames(path)
    assert copy is not None, "no valid copy"
    parsed = load_history(path)  # the JSON path
    for name in FRAME_SCHEMAS:
        assert_frame_equal(getattr(copy, name), getattr(parsed, name), check_exact=True)
    assert copy.op_count == parsed.op_count


@pytest.mark.parametrize("chunk_bytes", [1, 300, 1 << 20])
def test_the_recorder_leaves_a_copy_equal_to_what_the_json_gives(tmp_path, chunk_bytes: int) -> None:
    path = tmp_path / "history.jsonl"
    lines = odd_lines()
    with Recorder(path, flush_interval_s=0.001, copy_chunk_bytes=chunk_bytes) as recorder:
        for i, line in enumerate(lines):
            recorder.write_line(line)
            if i % 7 == 0:
                recorder.record({"process": "runner", "type": "info", "f": "phase", "phase": f"p{i}"})
    assert recorder.copy_written
    assert path.read_bytes().count(b"\n") == len(lines) + len(range(0, len(lines), 7))
    _same_as_the_json(path)


def test_the_copy_does_not_depend_on_where_chunks_end(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    data = b"".join(line + b"\n" for line in odd_lines() * 3)
    path.write_bytes(data)
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    rng = random.Random(27)
    for _ in range(5):
        copy = LiveCopy(path, chunk_bytes=rng.choice([1, 100, 2000]))
        cuts = sorted(rng.sample(ends[:-1], 8)) + [len(data)]
        start = 0
        for cut in cuts:
            copy.add(data[start:cut])
            start = cut
        assert copy.finish(len(data))
        _same_as_the_json(path)


def test_a_line_the_fast_decode_cannot_place_leaves_no_copy_and_the_json_path_names_it(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    with Recorder(path, copy_chunk_bytes=1) as recorder:
        for line in odd_lines()[:4]:
            recorder.write_line(line)
        recorder.write_line(b'{"time_ns": 1, "process": "p", "type": "ok", "f": ')
    assert not recorder.copy_written and not (tmp_path / FRAMES_DIR).exists()
    with pytest.raises(HistoryFormatError, match="line 5: not JSON"):
        load_history(path, columnar_copy=True)


def test_a_byte_order_mark_inside_the_file_is_left_to_the_json_path(tmp_path) -> None:
    line = orjson.dumps({"time_ns": 1, "process": "p", "type": "info", "f": "phase", "phase": "x"}) + b"\n"
    assert decode_chunk(line) is not None
    # polars skips a mark that opens its input: in the middle of a file it is a bad line, so a chunk must not hide it.
    assert decode_chunk(b"\xef\xbb\xbf" + line) is None


def test_no_copy_of_a_file_that_held_lines_before_the_recorder_opened_it(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(odd_lines()[0] + b"\n")
    with Recorder(path) as recorder:
        recorder.write_line(odd_lines()[1])
    assert recorder.copy is None and not recorder.copy_written
    assert load_history(path, columnar_copy=True).op_count == 2


def test_no_copy_when_another_writer_appended_to_the_file(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    with Recorder(path) as recorder:
        recorder.write_line(odd_lines()[0])
        with path.open("ab") as other:
            other.write(odd_lines()[1] + b"\n")
    assert not recorder.copy_written and not (tmp_path / FRAMES_DIR).exists()


def test_a_line_appended_after_the_close_is_read_from_the_json(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    with Recorder(path) as recorder:
        for line in odd_lines():
            recorder.write_line(line)
    before = load_history(path, columnar_copy=True).op_count
    with path.open("ab") as f:
        f.write(
            orjson.dumps({"time_ns": 2, "process": "runner", "type": "info", "f": "phase", "phase": "late"}) + b"\n"
        )
    after = load_history(path, columnar_copy=True)
    assert after.op_count == before + 1 and after.phases["phase"].to_list()[-1] == "late"


def test_an_empty_recording_leaves_an_empty_copy_and_without_the_option_none(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    with Recorder(tmp_path / "a" / "history.jsonl") as recorder:
        pass
    assert recorder.copy_written
    _same_as_the_json(tmp_path / "a" / "history.jsonl")
    (tmp_path / "b").mkdir()
    with Recorder(tmp_path / "b" / "history.jsonl", columnar_copy=False) as recorder:
        recorder.write_line(odd_lines()[0])
    assert not (tmp_path / "b" / FRAMES_DIR).exists()


def test_a_decoder_too_far_behind_gives_up_the_copy_not_the_recording(tmp_path, monkeypatch) -> None:
    from failsafe.history import live_copy

    release = threading.Event()

    def slow(data: bytes):
        release.wait(10)
        return decode_chunk(data)

    monkeypatch.setattr(live_copy, "decode_chunk", slow)
    monkeypatch.setattr(live_copy, "MAX_BACKLOG_BYTES", 10)
    path = tmp_path / "history.jsonl"
    lines = odd_lines()
    copy = LiveCopy(path, chunk_bytes=1)
    for line in lines:
        copy.add(line + b"\n")
    assert copy.failed
    release.set()
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    assert not copy.finish(path.stat().st_size) and read_frames(path) is None


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_decoder_that_crashes_leaves_no_copy_and_the_history_whole(tmp_path, monkeypatch) -> None:
    from failsafe.history import live_copy

    def broken(data: bytes):
        raise RuntimeError("a defect")

    monkeypatch.setattr(live_copy, "decode_chunk", broken)
    path = tmp_path / "history.jsonl"
    with Recorder(path, copy_chunk_bytes=1) as recorder:
        for line in odd_lines():
            recorder.write_line(line)
    assert not recorder.copy_written and read_frames(path) is None
    assert load_history(path, columnar_copy=True).op_count == len([line for line in odd_lines() if line])
