"""Read a history.jsonl into a History.

Parsing every line against one schema that is the union of every op's fields builds every column
for every line, and that is most of the cost at millions of lines. So the file is read as raw
lines (polars' CSV reader with a separator JSON never contains unescaped), each line's ``f`` is
found (a literal search for sends, a regular expression for the rest), and each kind of op is
decoded with only its own fields; ops of a kind this version does not know only need the fields
every op has. Any surprise (a line the fast path cannot place) sends the whole input to the plain
one-schema reader, and only when that fails too are the lines examined one by one, to name the
bad one.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path

import orjson
import polars as pl

from failsafe.history.columnar import read_frames, source_of, write_frames
from failsafe.history.model import CONFIG_ENTRY, FAULT_START_FIELDS, FRAME_SCHEMAS, History, HistoryFormatError
from failsafe.history.ops import EVENTS, MIGRATION_ROLL, Family, Op, OpType, Target

_RECORD = pl.Struct(
    {
        "topic": pl.String,
        "partition": pl.Int64,
        "offset": pl.Int64,
        "key": pl.String,
        "value": pl.String,
        "delivery_count": pl.Int64,
        # The record's timestamp (ms since the epoch), who set it (timestamp_type: CreateTime, its producer;
        # LogAppendTime, the broker) and its headers as a JSON object of name to text; the final read records them.
        "timestamp_ms": pl.Int64,
        "timestamp_type": pl.String,
        "headers": pl.String,
    }
)
_ACK = pl.Struct({"topic": pl.String, "partition": pl.Int64, "offset": pl.Int64, "ack": pl.String})
# assign/revoke partitions and topology partitions share one struct: absent fields are null.
_PARTITION = pl.Struct(
    {
        "topic": pl.String,
        "partition": pl.Int64,
        "leader": pl.Int64,
        "replicas": pl.List(pl.Int64),
        "isr": pl.List(pl.Int64),
    }
)
_SAMPLE = pl.Struct({"metric": pl.String, "labels": pl.String, "value": pl.Float64})
_OFFSET = pl.Struct({"topic": pl.String, "partition": pl.Int64, "offset": pl.Int64})
_COMMON = {"time_ns": pl.Int64, "process": pl.String, "type": pl.String, "f": pl.String, "error": pl.String}

# The fields each kind of op carries (docs/history.md); OTHER is every field of every op.
SEND_SCHEMA = {
    **_COMMON,
    "id": pl.Int64,
    "topic": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "key": pl.String,
    "value": pl.String,
    "txn": pl.Int64,
}
POLL_SCHEMA = {**_COMMON, "group": pl.String, "records": pl.List(_RECORD), "txn": pl.Int64}
LOG_READ_SCHEMA = {
    **_COMMON,
    "topic": pl.String,
    "partition": pl.Int64,
    "records": pl.List(_RECORD),
    "cluster": pl.String,
    "log_start_offset": pl.Int64,
    "high_watermark": pl.Int64,
    "retention_ms": pl.Int64,
    "retention_bytes": pl.Int64,
    "cleanup_policy": pl.String,
}
_DECLARED = pl.Struct(
    {
        "process": pl.String,
        "role": pl.String,
        "topics": pl.List(pl.String),
        "group": pl.String,
        "may_lose": pl.Boolean,
        "matches": pl.String,
    }
)
OTHER_SCHEMA: dict[str, pl.DataType] = {
    **SEND_SCHEMA,
    **POLL_SCHEMA,
    "partitions": pl.List(_PARTITION),
    "offsets": pl.List(_OFFSET),
    "acks": pl.List(_ACK),
    "lost": pl.Boolean,
    **FAULT_START_FIELDS,
    "leaderless": pl.List(pl.String),
    "in_force_ns": pl.Int64,
    "under_replicated": pl.List(pl.String),
    "ok": pl.Boolean,
    "phase": pl.String,
    "exit_code": pl.Int64,
    "drain_s": pl.Float64,
    "at_s": pl.Float64,
    "attempt": pl.Int64,
    "client": pl.String,
    "client_version": pl.String,
    "config": pl.List(CONFIG_ENTRY),
    "log": pl.String,
    "host": pl.String,
    "clock_offset_ns": pl.Int64,
    "clock_error_ns": pl.Int64,
    "controller": pl.Int64,
    "transactional_id": pl.String,
    "end": pl.String,
    "feature": pl.String,
    "level": pl.Int64,
    "publish": pl.String,
    "node": pl.Int64,
    "node_name": pl.String,
    "samples": pl.List(_SAMPLE),
    "event": pl.String,
    "broker": pl.Int64,
    "line": pl.String,
    "clients": pl.List(_DECLARED),
    "cluster": pl.String,
    "log_start_offset": pl.Int64,
    "high_watermark": pl.Int64,
}
_BULK = {Op.SEND: SEND_SCHEMA, Op.POLL: POLL_SCHEMA, Op.LOG_READ: LOG_READ_SCHEMA}
_REQUIRED = ("time_ns", "process", "type", "f")
_REQUIRED_SCHEMA = {name: _COMMON[name] for name in _REQUIRED}
# The kinds decode_chunk and history_from_kinds know, each with the columns it is decoded with.
KIND_SCHEMAS: dict[str, dict[str, pl.DataType]] = {**_BULK, "other": OTHER_SCHEMA, "unknown": _REQUIRED_SCHEMA}
# The rare ops, decoded with every field: their frames are small. Events are what the engine and the
# workloads record about the run itself (the ``events`` frame).
EVENT_KINDS = [str(f) for f in EVENTS]
OTHER_KINDS = [str(f) for f in Op if f not in _BULK]
_F_PATTERN = r'"f"\s*:\s*"([^"\\]*)"'
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark
# No valid JSON text holds a raw 0x1f (control characters must be escaped), so no line splits.
_LINE_READER = {
    "has_header": False,
    "separator": "\x1f",
    "quote_char": None,
    "new_columns": ["line"],
    "schema": {"line": pl.String},
}


class _NotFast(Exception):
    """The fast path cannot place some line; the plain reader decides."""


def load_history(path: str | Path, columnar_copy: bool = False) -> History:
    """Read history.jsonl at path. Raises HistoryFormatError naming the first malformed line.

    With ``columnar_copy``, use the Parquet copy next to it when it was made from this very file,
    and write one after parsing (see history/columnar.py): a re-check then skips the JSON.
    """
    path = Path(path)
    if columnar_copy:
        cached = read_frames(path)
        if cached is not None:
            return cached
        # Taken before reading: a copy is only written for the file as it was read.
        source = source_of(path)
    history = _parse(path, path.read_bytes)
    if columnar_copy:
        write_frames(path, history, source)
    return history


def history_from_ops(ops: Iterable[dict]) -> History:
    """The History of ops given as dicts, as if each were one line of a file (line 1 first)."""
    lines = []
    for number, op in enumerate(ops, start=1):
        try:
            lines.append(orjson.dumps(op))
        except TypeError as e:
            raise HistoryFormatError(f"line {number}: cannot be written as JSON: {e}") from e
    data = b"\n".join(lines)
    return _parse(io.BytesIO(data), lambda: data)


def _parse(source: Path | io.BytesIO, read_bytes) -> History:
    try:
        kinds = _kinds_fast(source)
    except (_NotFast, pl.exceptions.PolarsError):
        if isinstance(source, io.BytesIO):
            source.seek(0)
        try:
            kinds = _kinds_plain(source)
        except (_NotFast, pl.exceptions.PolarsError) as e:
            raise _locate_error(read_bytes()) from e
    return history_from_kinds(kinds)


def decode_chunk(data: bytes) -> dict[str, pl.DataFrame] | None:
    """The ops of ``data`` (whole lines of a history) decoded by kind, as the file's own load decodes them; None when
    the fast path cannot place some line (then only the whole file, read by load_history, can say what it holds).

    history_from_kinds of the chunks' kinds, concatenated kind by kind in file order, is the History of the file.
    """
    # polars skips a byte-order mark at the start of its input only: one opening a chunk is not the file's own.
    if data.startswith(_BOM):
        return None
    try:
        return _kinds_fast(io.BytesIO(data))
    except (_NotFast, pl.exceptions.PolarsError):
        return None


def _kinds_fast(source: Path | io.BytesIO) -> dict[str, pl.DataFrame]:
    lines = pl.read_csv(source, raise_if_empty=False, **_LINE_READER).drop_nulls()
    # Sends are most lines: a literal search finds them faster than the regular expression.
    is_send = lines["line"].str.contains(f'"f":"{Op.SEND}"', literal=True)
    rest = lines.filter(~is_send).with_columns(pl.col("line").str.extract(_F_PATTERN, 1).alias("kind"))
    sends = lines.filter(is_send)
    # rest may hold sends written with spaces ("f": "send") that the literal search missed: taken in file order, so that
    # a file decoded in chunks gives the same sends (which of two sends with one id comes first decides which is kept).
    if (rest["kind"] == Op.SEND).any():
        kind = pl.when(is_send).then(pl.lit(str(Op.SEND))).otherwise(pl.col("line").str.extract(_F_PATTERN, 1))
        sends = lines.filter(kind == Op.SEND)
    kinds = {Op.SEND: _decode(sends, SEND_SCHEMA)}
    for kind in (Op.POLL, Op.LOG_READ):
        kinds[kind] = _decode(rest.filter(pl.col("kind") == kind), _BULK[kind])
    kinds["other"] = _decode(rest.filter(pl.col("kind").is_in(OTHER_KINDS)), OTHER_SCHEMA)
    # An op this version does not know is checked for the fields every op has, then ignored:
    # its other fields may have any shape.
    kinds["unknown"] = _decode(
        rest.filter(~pl.col("kind").is_in([*_BULK, *OTHER_KINDS]) | pl.col("kind").is_null()), _REQUIRED_SCHEMA
    )
    # The first "f" in a line could in principle be a nested one: trust only the decoded field.
    if (
        any(kinds[kind].height and (kinds[kind]["f"] != kind).any() for kind in _BULK)
        or not kinds["other"]["f"].is_in(OTHER_KINDS).all()
    ):
        raise _NotFast
    return kinds


def _decode(lines: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if lines.height == 0:
        return pl.DataFrame(schema=schema)
    frame = lines.select(pl.col("line").str.json_decode(pl.Struct(schema))).unnest("line")
    if any(frame[name].null_count() for name in _REQUIRED):
        raise _NotFast
    return frame


def _kinds_plain(source: Path | io.BytesIO) -> dict[str, pl.DataFrame]:
    try:
        raw = pl.read_ndjson(source, schema=OTHER_SCHEMA)
    except pl.exceptions.NoDataError:
        raw = pl.DataFrame(schema=OTHER_SCHEMA)
    if any(raw[name].null_count() for name in _REQUIRED):
        raise _NotFast
    kinds = {kind: raw.filter(pl.col("f") == kind).select(list(schema)) for kind, schema in _BULK.items()}
    kinds["other"] = raw.filter(pl.col("f").is_in(OTHER_KINDS))
    kinds["unknown"] = raw.filter(~pl.col("f").is_in([*_BULK, *OTHER_KINDS])).select(_REQUIRED)
    return kinds


def _locate_error(data: bytes) -> HistoryFormatError:
    """The error naming the first bad line; slow, so only called once both readers refused."""
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            op = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return HistoryFormatError(f"line {number}: not JSON: {e}")
        if not isinstance(op, dict):
            return HistoryFormatError(f"line {number}: not a JSON object: {line[:80].decode(errors='replace')}")
        for name in _REQUIRED:
            if op.get(name) is None:
                return HistoryFormatError(f"line {number}: no {name!r}")
        if not isinstance(op["time_ns"], int) or isinstance(op["time_ns"], bool):
            return HistoryFormatError(f"line {number}: time_ns is not an integer: {op['time_ns']!r}")
    # Every line is a JSON object with the required fields, so some field has a type the schema
    # rejects: bisect with the plain reader to find the line.
    low, high = 0, len(lines)
    while high - low > 1:
        middle = (low + high) // 2
        if _plain_error(lines[low:middle]) is not None:
            high = middle
        else:
            low = middle
    return HistoryFormatError(f"line {low + 1}: {_plain_error(lines[low:high]) or 'a field has the wrong type'}")


def _plain_error(lines: list[bytes]) -> str | None:
    data = b"\n".join(line for line in lines if line.strip())
    if not data:
        return None
    try:
        pl.read_ndjson(io.BytesIO(data), schema=OTHER_SCHEMA)
    except pl.exceptions.PolarsError as e:
        return str(e).splitlines()[0]
    return None


def history_from_kinds(kinds: dict[str, pl.DataFrame]) -> History:
    """The History's frames from the decoded ops of each kind (send, poll, log-read, other, unknown)."""
    other = kinds["other"]
    log_reads = kinds[Op.LOG_READ]
    log = _select(_log(log_reads.filter(pl.col("type") == OpType.OK)), "log")
    # Explode and join leave frames in many chunks; one contiguous copy makes every later scan faster.
    return History(
        sends=_sends(kinds[Op.SEND]).rechunk(),
        reads=_reads(kinds[Op.POLL], log).rechunk(),
        log=log.rechunk(),
        log_failures=_select(log_reads.filter(pl.col("type") == OpType.FAIL), "log_failures"),
        log_reads=_log_reads(log_reads),
        declared=_declared(other),
        phase_ends=_select(other.filter(pl.col("f") == Op.PHASE_END), "phase_ends"),
        group_configs=_group_configs(other),
        membership=_membership(other),
        commits=_commits(other),
        client_events=_select(other.filter(pl.col("f").is_in([Op.CLOSE, Op.CRASH])), "client_events"),
        faults=_faults(other),
        topology=_topology(other),
        topology_errors=_select(
            other.filter((pl.col("f") == Op.TOPOLOGY) & pl.col("error").is_not_null()), "topology_errors"
        ),
        phases=_select(other.filter(pl.col("f") == Op.PHASE), "phases"),
        admin=_select(other.filter(pl.col("f") == Op.CREATE_TOPIC), "admin"),
        events=_select(other.filter(pl.col("f").is_in(EVENT_KINDS)), "events"),
        clients=_select(other.filter(pl.col("f") == Op.CLIENT_CONFIG), "clients"),
        controllers=_select(other.filter(pl.col("f") == Op.CONTROLLER), "controllers"),
        txns=_txns(other),
        share_deliveries=_select(
            _records(
                other.filter((pl.col("f") == Op.SHARE_POLL) & (pl.col("type") == OpType.OK)),
                "process",
                "group",
                "time_ns",
            ),
            "share_deliveries",
        ),
        share_acks=_share_acks(other),
        metrics=_select(_samples(other.filter((pl.col("f") == Op.METRICS) & pl.col("error").is_null())), "metrics"),
        metrics_errors=_select(
            other.filter((pl.col("f") == Op.METRICS) & pl.col("error").is_not_null()), "metrics_errors"
        ),
        node_events=_select(other.filter(pl.col("f") == Op.NODE_EVENT), "node_events").sort(
            "time_ns", maintain_order=True
        ),
        op_count=sum(frame.height for frame in kinds.values()),
    )


# What a share-ack invoke with no answer after it is loaded with: its process stopped between sending it and recording
# the answer.
NO_ANSWER_RECORDED = "NO_ANSWER_RECORDED"
_SHARE_ACK_KEY = ["process", "group", "topic", "partition", "offset", "ack"]


def _share_acks(other: pl.DataFrame) -> pl.DataFrame:
    """One row per acknowledged record: ok, fail or info. A share-ack invoke (an acknowledgement sent) is dropped once
    an answer for that record by that process follows it, and is otherwise an info (NO_ANSWER_RECORDED): the broker may
    have taken it."""
    rows = (
        other.filter(pl.col("f") == Op.SHARE_ACK)
        .select("process", "group", "time_ns", "type", "error", "acks")
        .explode("acks")
        .drop_nulls("acks")
        .unnest("acks")
    )
    sent = rows.filter(pl.col("type") == OpType.INVOKE)
    answered = rows.filter(pl.col("type") != OpType.INVOKE)
    if sent.height:
        later = sent.join(
            answered.select(*_SHARE_ACK_KEY, pl.col("time_ns").alias("answer_ns")), on=_SHARE_ACK_KEY, how="inner"
        )
        later = later.filter(pl.col("answer_ns") >= pl.col("time_ns")).select(*_SHARE_ACK_KEY, "time_ns").unique()
        unanswered = sent.join(later, on=[*_SHARE_ACK_KEY, "time_ns"], how="anti", nulls_equal=True)
        unanswered = unanswered.with_columns(
            pl.lit(str(OpType.INFO)).alias("type"), pl.lit(NO_ANSWER_RECORDED).alias("error")
        )
        answered = pl.concat([answered, unanswered.select(answered.columns)]).sort("time_ns", maintain_order=True)
    return _select(answered, "share_acks")


def _select(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    return frame.select([pl.col(column).cast(dtype) for column, dtype in FRAME_SCHEMAS[name].items()])


def _sends(sends: pl.DataFrame) -> pl.DataFrame:
    invokes = sends.filter(pl.col("type") == OpType.INVOKE).select(
        "process", "id", "topic", "key", "value", "partition", "txn", pl.col("time_ns").alias("invoke_ns")
    )
    completions = sends.filter(pl.col("type") != OpType.INVOKE).select(
        "process",
        "id",
        pl.col("topic").alias("topic_c"),
        pl.col("key").alias("key_c"),
        pl.col("value").alias("value_c"),
        pl.col("partition").alias("partition_c"),
        "offset",
        pl.col("type").alias("outcome"),
        "error",
        pl.col("time_ns").alias("complete_ns"),
    )
    if (
        invokes["id"].n_unique() == invokes.height
        and completions["id"].n_unique() == completions.height
        and invokes["id"].null_count() == 0
    ):
        joined = _pair_by_id(invokes, completions)
    else:
        # ids repeat across producers (or a completion was written twice): pair within a process.
        key = ["process", "id"]
        invokes = invokes.unique(subset=key, keep="first", maintain_order=True)
        completions = completions.unique(subset=key, keep="first", maintain_order=True)
        joined = invokes.join(completions, on=key, how="full", coalesce=True, maintain_order="left_right")
    # The invoke says what was sent; the completion fills in what only it knows (an orphan
    # completion, the partition the partitioner chose).
    filled = [
        pl.coalesce(f"{name}_c", name).alias(name) for name in ("topic", "key", "value") if joined[name].null_count()
    ]
    return _select(joined.with_columns(*filled, pl.coalesce("partition_c", "partition").alias("partition")), "sends")


def _pair_by_id(invokes: pl.DataFrame, completions: pl.DataFrame) -> pl.DataFrame:
    """Invokes with their completions when ids are unique: a merge join on sorted ids is cheap."""
    invokes = invokes if invokes["id"].is_sorted() else invokes.sort("id")
    completions = completions.sort("id")
    joined = invokes.set_sorted("id").join(completions.drop("process").set_sorted("id"), on="id", how="left")
    matched = joined.height - joined["complete_ns"].null_count()
    if matched < completions.height:
        orphans = completions.join(invokes.select("id"), on="id", how="anti")
        joined = pl.concat([joined, orphans], how="diagonal_relaxed")
    return joined


def _records(frame: pl.DataFrame, *keep: str) -> pl.DataFrame:
    return frame.select(*keep, "records").explode("records").drop_nulls("records").unnest("records")


def _reads(polls: pl.DataFrame, log: pl.DataFrame) -> pl.DataFrame:
    polls = polls.filter(pl.col("type") == OpType.OK).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over("process").alias("poll_seq")
    )
    reads = _records(polls, "process", "group", "time_ns", "poll_seq", "txn")
    if reads.height and reads["value"].null_count() and log.height:
        # Kafka's VerifiableConsumer reports offsets only: take the record from the log.
        from_log = log.unique(subset=["topic", "partition", "offset"], keep="first").rename(
            {"key": "key_log", "value": "value_log"}
        )
        reads = reads.join(
            from_log, on=["topic", "partition", "offset"], how="left", maintain_order="left"
        ).with_columns(
            pl.when(pl.col("value").is_null()).then(pl.col("key_log")).otherwise(pl.col("key")).alias("key"),
            pl.coalesce("value", "value_log").alias("value"),
        )
    return _select(reads, "reads")


def _log(reads: pl.DataFrame) -> pl.DataFrame:
    """The records of log-read ok ops, each with the cluster its op read (null: a run on one cluster)."""
    return reads.select("cluster", "records").explode("records").drop_nulls("records").unnest("records")


# What a log-read op says of its partition when the read began: its offsets and its topic's retention.
_READ_AT = ("log_start_offset", "high_watermark", "retention_ms", "retention_bytes", "cleanup_policy")


def _log_reads(reads: pl.DataFrame) -> pl.DataFrame:
    """One row per partition a log-read op read (ok, with its count of records) or failed to read.

    An op that names no partition of its own (hand-written, or from before they named one) stands for each partition its
    records are in."""
    reads = reads.filter(pl.col("type").is_in([OpType.OK, OpType.FAIL]))
    counted = reads.with_columns(
        (pl.col("type") == OpType.OK).alias("ok"), pl.col("records").list.len().cast(pl.Int64).alias("n")
    )
    named = counted.filter(pl.col("topic").is_not_null()).with_columns(
        pl.when(pl.col("ok")).then(pl.col("n")).alias("records")
    )
    unnamed = counted.filter(pl.col("topic").is_null()).drop("topic", "partition")
    if unnamed.height:
        per = (
            unnamed.select("time_ns", "cluster", "ok", "error", *_READ_AT, "records")
            .explode("records")
            .drop_nulls("records")
            .with_columns(pl.col("records").struct.field("topic", "partition"))
            .group_by(
                "time_ns",
                "cluster",
                "topic",
                "partition",
                "ok",
                "error",
                *_READ_AT,
                maintain_order=True,
            )
            .agg(pl.len().cast(pl.Int64).alias("records"))
        )
        named = pl.concat([_select(named, "log_reads"), _select(per, "log_reads")])
    return _select(named, "log_reads")


def _declared(other: pl.DataFrame) -> pl.DataFrame:
    ops = (
        other.filter(pl.col("f") == Op.DECLARE)
        .select("time_ns", "clients")
        .explode("clients")
        .drop_nulls("clients")
        .unnest("clients")
    )
    return _select(ops.with_columns(pl.col("may_lose").fill_null(False)), "declared")


def _group_configs(other: pl.DataFrame) -> pl.DataFrame:
    ops = (
        other.filter(pl.col("f") == Op.GROUP_CONFIG)
        .select("time_ns", "group", "config")
        .explode("config")
        .drop_nulls("config")
    )
    return _select(ops.unnest("config"), "group_configs")


def _samples(scrapes: pl.DataFrame) -> pl.DataFrame:
    return (
        scrapes.select("time_ns", "node", "node_name", "samples")
        .explode("samples")
        .drop_nulls("samples")
        .unnest("samples")
    )


def _membership(other: pl.DataFrame) -> pl.DataFrame:
    events = other.filter(pl.col("f").is_in([Op.ASSIGN, Op.REVOKE])).select(
        "process", "group", "time_ns", "f", pl.col("lost").fill_null(False), "partitions"
    )
    exploded = events.explode("partitions").drop_nulls("partitions")
    return _select(exploded.with_columns(pl.col("partitions").struct.field("topic", "partition")), "membership")


def _commits(other: pl.DataFrame) -> pl.DataFrame:
    commits = other.filter(pl.col("f") == Op.COMMIT).select("process", "group", "time_ns", "type", "error", "offsets")
    return _select(
        commits.explode("offsets").with_columns(pl.col("offsets").struct.field("topic", "partition", "offset")),
        "commits",
    )


def _txns(other: pl.DataFrame) -> pl.DataFrame:
    """One row per transaction: its begin (a txn invoke), its txn-end, and its first completion, by writer and txn
    number."""
    key = ["process", "txn"]

    def first(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.unique(subset=key, keep="first", maintain_order=True)

    txns = other.filter(pl.col("f") == Op.TXN)
    begins = first(
        txns.filter(pl.col("type") == OpType.INVOKE).select(
            *key, "transactional_id", pl.col("time_ns").alias("invoke_ns")
        )
    )
    ends = first(
        other.filter(pl.col("f") == Op.TXN_END).select(
            *key,
            pl.col("transactional_id").alias("transactional_id_e"),
            "end",
            pl.col("time_ns").alias("end_ns"),
            "offsets",
        )
    )
    completions = first(
        txns.filter(pl.col("type") != OpType.INVOKE).select(
            *key,
            pl.col("transactional_id").alias("transactional_id_c"),
            pl.col("type").alias("outcome"),
            "error",
            pl.col("time_ns").alias("complete_ns"),
        )
    )
    joined = begins.join(ends, on=key, how="full", coalesce=True, maintain_order="left_right").join(
        completions, on=key, how="full", coalesce=True, maintain_order="left_right"
    )
    return _select(
        joined.with_columns(
            pl.coalesce("transactional_id", "transactional_id_e", "transactional_id_c").alias("transactional_id")
        ),
        "txns",
    )


def _faults(other: pl.DataFrame) -> pl.DataFrame:
    read = {"family": _family(), "label": _label()}  # as recorded, or as histories before them tell
    starts = other.filter(pl.col("f") == Op.FAULT_START).select(
        *(read.get(name, name) for name in FAULT_START_FIELDS),
        pl.col("time_ns").alias("start_ns"),
        pl.coalesce("in_force_ns", "time_ns").alias("in_force_ns"),
        pl.col("error").alias("start_error"),
    )
    starts = starts.unique(subset=["fault_id"], keep="first", maintain_order=True)
    stops = other.filter(pl.col("f") == Op.FAULT_STOP).select(
        "fault_id", pl.col("time_ns").alias("stop_ns"), "ok", "error", pl.col("attempt").fill_null(1)
    )
    # A failed undo is recorded and tried again: the fault stopped at its first successful undo, else
    # it is still open, failed at its last attempt.
    attempts = stops.group_by("fault_id", maintain_order=True).agg(pl.len().alias("undo_attempts"))
    ok = stops.filter(pl.col("ok").fill_null(True)).unique(subset=["fault_id"], keep="first", maintain_order=True)
    failed = stops.join(ok.select("fault_id"), on="fault_id", how="anti").unique(
        subset=["fault_id"], keep="last", maintain_order=True
    )
    stops = (
        pl.concat([ok, failed.with_columns(pl.lit(None, pl.Int64).alias("stop_ns"))])
        .drop("attempt")
        .join(attempts, on="fault_id")
    )
    joined = starts.join(stops, on="fault_id", how="left", maintain_order="left").with_columns(
        pl.coalesce("error", "start_error").alias("error")
    )
    return _select(joined, "faults").sort("start_ns", maintain_order=True)


# The migration's steps were recorded without a family before it existed: their fault names tell them.
_LEGACY_MIGRATION_FAULTS = (MIGRATION_ROLL, "migration")


def _family() -> pl.Expr:
    """The fault's family as recorded; for histories written before it was, read from its target (and name)."""
    legacy = (
        pl.when(pl.col("fault").is_in(_LEGACY_MIGRATION_FAULTS))
        .then(pl.lit(Family.MIGRATION))
        .when(pl.col("target") == Target.NETWORK)
        .then(pl.lit(Family.NETWORK))
        .when(pl.col("target").is_in([Target.CONSUMER, Target.PIPELINE, Target.SPARK_WORKER]))
        .then(pl.lit(Family.CLIENT))
        .when(pl.col("target").is_not_null())
        .then(pl.lit(Family.PROCESS))
    )
    return pl.coalesce(pl.col("family"), legacy).alias("family")


def _label() -> pl.Expr:
    """How reports name the fault, as recorded; a network fault recorded before labels existed had its sides at the end
    of its role ("leader of t-0: partition {1} | {1000,0,2}"), which is where they are read from for it."""
    legacy = pl.when(pl.col("target") == Target.NETWORK).then(
        pl.col("role").str.split(": ").list.last().str.strip_prefix("partition ").str.strip_prefix("lossy link ")
    )
    return pl.coalesce(pl.col("label"), legacy).alias("label")


def _topology(other: pl.DataFrame) -> pl.DataFrame:
    samples = other.filter((pl.col("f") == Op.TOPOLOGY) & pl.col("error").is_null()).select("time_ns", "partitions")
    return _select(samples.explode("partitions").drop_nulls("partitions").unnest("partitions"), "topology")
