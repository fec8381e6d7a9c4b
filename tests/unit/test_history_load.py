from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from failsafe.history.load import history_from_ops, load_history
from failsafe.history.model import FRAME_SCHEMAS, History, HistoryFormatError
from tests.unit.test_checker_builders import assign, at, fault, log_read, poll, rec, send, topology

OPS = [
    *send("producer-0", 1, "v1", 0, ms=1),
    *send("producer-0", 2, "v2", None, ms=2, outcome="info"),
    *send("producer-1", 3, "v3", None, ms=3, outcome=None),
    assign("consumer-0", [0], ms=0),
    poll("consumer-0", [rec(0, "v1", key="k")], ms=10),
    poll("consumer-0", [rec(1, None)], ms=11),
    *fault(1, start_ms=20, stop_ms=30, nodes=[2]),
    topology(15, [(0, 2, [2, 1, 3], [2, 1, 3])]),
    log_read([rec(0, "v1", key="k"), rec(1, "v9", key="k9")]),
    {
        "time_ns": at(40),
        "process": "consumer-0",
        "type": "ok",
        "f": "commit",
        "group": "g",
        "offsets": [{"topic": "t", "partition": 0, "offset": 2}],
    },
    {"time_ns": at(41), "process": "consumer-0", "type": "info", "f": "close"},
    {"time_ns": at(42), "process": "runner", "type": "info", "f": "phase", "phase": "chaos"},
    {"time_ns": at(43), "process": "runner", "type": "invoke", "f": "create-topic", "id": 1, "topic": "new"},
    {
        "time_ns": at(44),
        "process": "runner",
        "type": "info",
        "f": "create-topic",
        "id": 1,
        "topic": "new",
        "error": "REQUEST_TIMED_OUT",
    },
    {"time_ns": at(45), "process": "topology", "type": "info", "f": "topology", "error": "timed out"},
    {"time_ns": at(46), "process": "runner", "type": "info", "f": "something-new", "whatever": [1, {"a": 2}]},
]


def _write(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_file_and_ops_give_the_same_history(tmp_path: Path) -> None:
    from_file = load_history(_write(tmp_path, [orjson.dumps(op) for op in OPS]))
    from_ops = history_from_ops(OPS)
    for name in FRAME_SCHEMAS:
        assert getattr(from_file, name).equals(getattr(from_ops, name)), name
    assert from_file.op_count == from_ops.op_count == len(OPS)


def test_every_kind_of_op_lands_in_its_frame() -> None:
    h = history_from_ops(OPS)
    assert h.sends.sort("id")["outcome"].to_list() == ["ok", "info", None]
    assert h.reads["poll_seq"].to_list() == [0, 1]
    assert h.log.height == 2 and h.membership["f"].to_list() == ["assign"]
    assert h.faults.row(0, named=True) | {"nodes": None} == {
        "fault_id": 1,
        "fault": "kill",
        "target": "broker",
        "nodes": None,
        "role": "any",
        "family": "process",  # not recorded by this (older) op: read from its target
        "label": None,
        "sides": None,
        "one_way": None,
        "loss": None,
        "start_ns": at(20),
        "in_force_ns": at(20),  # not recorded by this (older) op: its start stands in
        "stop_ns": at(30),
        "ok": True,
        "error": None,
        "undo_attempts": 1,
    }
    assert h.faults["nodes"].to_list() == [["2"]]  # broker ids normalised to strings
    assert h.topology.row(0, named=True)["isr"] == [2, 1, 3]
    assert h.topology_errors["error"].to_list() == ["timed out"]
    assert h.commits.select("partition", "offset").row(0) == (0, 2)
    assert h.client_events["f"].to_list() == ["close"]
    assert h.phases["phase"].to_list() == ["chaos"]
    assert h.admin["type"].to_list() == ["invoke", "info"]


def test_verifiable_consumer_reads_take_key_and_value_from_the_log() -> None:
    h = history_from_ops(OPS)
    assert h.reads.select("offset", "key", "value").rows() == [(0, "k", "v1"), (1, "k9", "v9")]


def test_empty_history_has_every_frame_with_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"")
    for h in (load_history(path), history_from_ops([]), History.empty()):
        assert h.op_count == 0
        for name, schema in FRAME_SCHEMAS.items():
            frame = getattr(h, name)
            assert frame.height == 0 and dict(frame.schema) == schema, name


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    lines = [b"", orjson.dumps(OPS[0]), b"   ", orjson.dumps(OPS[1]), b""]
    assert load_history(_write(tmp_path, lines)).sends.height == 1


def test_spaced_json_takes_the_plain_path(tmp_path: Path) -> None:
    import json

    h = load_history(_write(tmp_path, [json.dumps(op).encode() for op in OPS]))
    assert h.sends.height == 3 and h.reads.height == 2


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b'{"time_ns": 1, "process": "p", "type": "ok", "f": ', "line 3: not JSON"),
        (b"[1, 2]", "line 3: not a JSON object"),
        (b'"just a string"', "line 3: not a JSON object"),
        (b'{"time_ns": 1, "type": "ok", "f": "send"}', "line 3: no 'process'"),
        (b'{"process": "p", "type": "ok", "f": "send"}', "line 3: no 'time_ns'"),
        (b'{"time_ns": "soon", "process": "p", "type": "ok", "f": "send"}', "line 3: time_ns is not an integer"),
        (b'{"time_ns": 1, "process": "p", "type": "ok", "f": "send", "offset": "x"}', "line 3:"),
    ],
)
def test_a_malformed_line_is_named(tmp_path: Path, bad: bytes, message: str) -> None:
    good = [orjson.dumps(OPS[0]), orjson.dumps(OPS[1])]
    with pytest.raises(HistoryFormatError, match=message):
        load_history(_write(tmp_path, [*good, bad, orjson.dumps(OPS[2])]))


def test_malformed_ops_are_named_by_position() -> None:
    with pytest.raises(HistoryFormatError, match="line 2: no 'f'"):
        history_from_ops([OPS[0], {"time_ns": 1, "process": "p", "type": "ok"}])
    with pytest.raises(HistoryFormatError, match="line 1: not a JSON object"):
        history_from_ops([42])  # type: ignore[list-item]


def test_history_format_error_is_a_value_error() -> None:
    assert issubclass(HistoryFormatError, ValueError)


def test_duplicate_ids_across_producers_pair_within_a_process() -> None:
    h = history_from_ops([*send("producer-0", 1, "a", 0), *send("producer-1", 1, "b", 1, outcome="fail")])
    assert h.sends.sort("process").select("process", "value", "outcome").rows() == [
        ("producer-0", "a", "ok"),
        ("producer-1", "b", "fail"),
    ]


def test_a_completion_without_invoke_is_kept() -> None:
    h = history_from_ops(send("producer-0", 1, "v1", 0)[1:])
    assert h.sends.select("id", "value", "outcome", "invoke_ns").rows() == [(1, "v1", "ok", None)]


def test_poll_seq_counts_each_process_in_file_order() -> None:
    h = history_from_ops([poll("c0", [rec(0, "a")]), poll("c1", [rec(1, "b")]), poll("c0", [rec(2, "c"), rec(3, "d")])])
    assert h.reads.select("process", "poll_seq").rows() == [("c0", 0), ("c1", 0), ("c0", 1), ("c0", 1)]


def test_frames_are_polars() -> None:
    assert isinstance(history_from_ops(OPS).sends, pl.DataFrame)


def test_an_unknown_op_is_ignored_whatever_its_fields() -> None:
    future = {
        "time_ns": 1,
        "process": "runner",
        "type": "info",
        "f": "from-the-future",
        "records": "not a list",
        "nodes": {"a": 1},
    }
    h = history_from_ops([OPS[0], future])
    assert h.op_count == 2 and h.sends.height == 1


def test_an_unknown_op_still_needs_the_common_fields() -> None:
    with pytest.raises(HistoryFormatError, match="line 2: no 'process'"):
        history_from_ops([OPS[0], {"time_ns": 1, "type": "info", "f": "from-the-future"}])


CLIENT_CONFIG = {
    "time_ns": at(0),
    "process": "producer-0",
    "type": "info",
    "f": "client-config",
    "client": "librdkafka",
    "client_version": "2.12.0",
    "config": [{"name": "acks", "value": "all"}, {"name": "enable.idempotence", "value": "true"}],
    "log": "logs/producer-0.client.log",
}


def test_client_config_lands_in_the_clients_frame(tmp_path: Path) -> None:
    import json

    ops = [CLIENT_CONFIG, *OPS]
    for h in (
        history_from_ops(ops),
        load_history(_write(tmp_path, [orjson.dumps(op) for op in ops])),
        load_history(_write(tmp_path, [json.dumps(op).encode() for op in ops])),
    ):
        assert h.clients.rows(named=True) == [
            {
                "process": "producer-0",
                "time_ns": at(0),
                "client": "librdkafka",
                "client_version": "2.12.0",
                "config": [{"name": "acks", "value": "all"}, {"name": "enable.idempotence", "value": "true"}],
                "log": "logs/producer-0.client.log",
                "host": None,
                "clock_offset_ns": None,
                "clock_error_ns": None,
            }
        ]
        assert h.sends.height == 3


def test_a_history_without_client_config_has_an_empty_clients_frame(tmp_path: Path) -> None:
    h = load_history(_write(tmp_path, [orjson.dumps(op) for op in OPS]), columnar_copy=True)
    assert h.clients.height == 0 and dict(h.clients.schema) == FRAME_SCHEMAS["clients"]
    # The columnar copy round-trips the new frame too.
    again = load_history(tmp_path / "history.jsonl", columnar_copy=True)
    assert again.clients.height == 0 and dict(again.clients.schema) == FRAME_SCHEMAS["clients"]


def test_sends_written_with_spaces_keep_their_place_in_the_file(tmp_path: Path) -> None:
    import json

    # producer-0 writes id 1 twice (compact, then with spaces, then compact again): the first in the file is the one
    # kept, whether the line has spaces or not, as history_from_ops (and a file decoded in chunks) keeps it.
    ops = [
        *send("producer-0", 1, "spaced", 0, ms=1),
        *send("producer-0", 1, "compact", 1, ms=2),
        *send("producer-1", 1, "other", 2, ms=3),
    ]
    lines = [json.dumps(op).encode() for op in ops[:2]] + [orjson.dumps(op) for op in ops[2:]]
    h = load_history(_write(tmp_path, lines))
    assert h.sends.sort("process").select("process", "value").rows() == [
        ("producer-0", "spaced"),
        ("producer-1", "other"),
    ]
    assert h.sends.equals(history_from_ops(ops).sends)
