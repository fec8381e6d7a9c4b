"""Transactions: what read_committed readers and the final log saw of each transaction agrees with how it ended.

A transaction is (process, txn): its writer and the writer's number for it (history.txns); its
writes are the sends with that txn. A write is known by (topic, value), as everywhere. Evidence
is what read_committed readers returned and the log read back after the run (itself
read_committed); read_uncommitted readers may see anything and prove nothing. The anomalies, with
Jepsen's names where it has them, are defined in docs/checkers.md ("transactions"); the dependency
graph and its cycles are checkers/txn/graph.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import zip_longest
from typing import Any

import polars as pl

import failsafe.checkers.txn.graph as txn_graph
import failsafe.checkers.txn.measure as txn_measure
from failsafe.checkers.common import (
    EXAMPLES_PER_ANOMALY,
    UNKNOWN,
    CheckerResult,
    Side,
    Validity,
    examples,
    read_options,
    result,
)
from failsafe.checkers.evidence import idempotent_writers, known_partitions, read_partitions
from failsafe.checkers.keys import IDENTITY
from failsafe.history.model import History
from failsafe.history.ops import OpType

# ww_deps: also measure the cycles of the graph with write-write edges (log order) added: Kafka does not isolate writes,
# so such cycles are expected and counted (G1c-with-ww), never judged; G1c is judged on the write-read graph alone
# either way. No option excuses a violation: what a scenario expects is a cited [[known]] entry.
DEFAULTS: dict[str, Any] = {"ww_deps": False}
VIOLATIONS = {
    "aborted-read": Side.PRODUCERS,
    "precommitted-read": Side.CONSUMERS,
    "lost-write": Side.PRODUCERS,
    "torn-transaction": Side.PRODUCERS,
    "intermediate-read": Side.CONSUMERS,
    "duplicate": Side.PRODUCERS,
    "G1c": Side.PRODUCERS,
}
TXN_ANOMALIES_LIMIT = 200
_TXN = ["process", "txn"]
_TXN_EXAMPLE = ("process", "txn", "transactional_id", "outcome", "end")
_WRITE_EXAMPLE = (*_TXN_EXAMPLE, "id", "topic", "partition", "offset", "value")
_PARTITION = ["topic", "partition"]
_JAVA_DEFAULT_UNCOMMITTED = "kafka-java"  # Java's consumer defaults to read_uncommitted; librdkafka's to read_committed


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "transactions")
    reads = _with_isolation(history)
    committed_reads = reads.filter(pl.col("read_committed"))
    writes = _writes(history, committed_reads)
    txns = _txns(history, writes)
    writes = writes.join(
        txns.select(*_TXN, *_TXN_EXAMPLE[2:], "end_ns", "time_ns", "committed", "aborted"), on=_TXN, how="left"
    )

    observed = writes.filter(pl.col("aborted") & (pl.col("in_log") | pl.col("readers").is_not_null()))
    precommitted = _precommitted(committed_reads, writes)
    sent = pl.col("send_outcome").ne_missing(OpType.FAIL)
    missing = writes.filter(pl.col("committed") & ~pl.col("in_log") & sent)
    lost, unverified = missing.filter(pl.col("covered")), missing.filter(~pl.col("covered"))
    torn = _torn(writes)
    intermediate = _intermediate(committed_reads, writes, history.log)
    written_twice = pl.concat(
        [_written_twice(writes, history.log), _written_twice(_plain_idempotent(history), history.log)]
    )
    processed_twice = _processed_twice(reads, txns)
    wr = txn_graph.wr_edges(writes, committed_reads.filter(pl.col("txn").is_not_null()))
    cycles = txn_graph.find_cycles(txn_graph.dependency_graph([wr]), EXAMPLES_PER_ANOMALY)
    # With write-write edges too: measured only (what Kafka's unisolated writes produce, t0 <ww t1 <wr t0), never
    # judged.
    with_ww = (
        txn_graph.find_cycles(
            txn_graph.dependency_graph([wr, txn_graph.ww_edges(writes, history.log)]), EXAMPLES_PER_ANOMALY
        )
        if opts["ww_deps"]
        else None
    )

    status = txns["status"]
    counts = {
        "txns": txns.height,
        "committed": int((status == "committed").sum()),
        "aborted": int((status == "aborted").sum()),
        "unknown": int((status == "unknown").sum()),
        "must-have-committed": int(txns["must_have_committed"].sum()),
        "must-have-aborted": int(txns["must_have_aborted"].sum()),
        "transactional-writes": writes.height,
        "reads-read-committed": committed_reads.height,
        "reads-read-uncommitted": reads.height - committed_reads.height,
        "aborted-read": observed.height,
        "precommitted-read": precommitted.height,
        "lost-write": lost.height,
        "lost-write-unverified": unverified.height,
        "committed-with-failed-write": writes.filter(
            pl.col("committed") & (pl.col("send_outcome") == OpType.FAIL)
        ).height,
        "committed-with-failed-write-absent": writes.filter(
            pl.col("committed") & (pl.col("send_outcome") == OpType.FAIL) & ~pl.col("in_log") & pl.col("covered")
        ).height,
        "torn-transaction": torn.height,
        "intermediate-read": intermediate.height,
        "duplicate": written_twice.height + processed_twice.height,
        "duplicate-written": written_twice.height,
        "duplicate-processed": processed_twice.height,
        "visible-never-committed": txns.filter(pl.col("end").is_null() & pl.col("logged")).height,
        "G0": with_ww.counts[txn_graph.G0] if with_ww is not None else 0,
        "G1c": cycles.counts[txn_graph.G1C],
        "G1c-with-ww": with_ww.counts[txn_graph.G1C] if with_ww is not None else 0,
    }
    example_rows = {
        "aborted-read": examples(
            observed.with_columns(pl.coalesce("first_read_ns", "time_ns").alias("time_ns")),
            *_WRITE_EXAMPLE,
            "readers",
            "in_log",
            "time_ns",
        ),
        "precommitted-read": examples(precommitted, *_WRITE_EXAMPLE, "end_ns", "reader", "group", "time_ns"),
        "lost-write": examples(lost, *_WRITE_EXAMPLE, "send_outcome", "time_ns"),
        "lost-write-unverified": examples(unverified, *_WRITE_EXAMPLE, "send_outcome", "time_ns"),
        "torn-transaction": examples(torn, *_TXN_EXAMPLE, "present", "absent", "partitions", "time_ns"),
        "intermediate-read": examples(intermediate),
        "duplicate": _interleaved(examples(written_twice), examples(processed_twice)),
        txn_graph.G1C: _timed(cycles.examples[txn_graph.G1C], txns),
        **(
            {
                txn_graph.G0: _timed(with_ww.examples[txn_graph.G0], txns),
                "G1c-with-ww": _timed(with_ww.examples[txn_graph.G1C], txns),
            }
            if with_ww is not None
            else {}
        ),
    }
    violations = [name for name in VIOLATIONS if counts[name]]
    valid: Validity = False if violations else UNKNOWN if counts["committed"] == 0 or unverified.height else True
    # Per anomaly, the transactions it involves (process, txn) and the processes that showed it: writers, or readers for
    # CONSUMERS.
    cycle_members = {txn_graph.G1C: pl.DataFrame(sorted(cycles.members[txn_graph.G1C]), schema=_TXN, orient="row")}
    if with_ww is not None:
        cycle_members[txn_graph.G0] = pl.DataFrame(sorted(with_ww.members[txn_graph.G0]), schema=_TXN, orient="row")
    processed = processed_twice.select(pl.col("txns").explode().struct.unnest())
    involved = {
        "aborted-read": (observed, observed["process"]),
        "precommitted-read": (precommitted, precommitted["reader"]),
        "lost-write": (lost, lost["process"]),
        "torn-transaction": (torn, torn["process"]),
        "intermediate-read": (intermediate, intermediate["readers"].explode()),
        "duplicate": (
            pl.concat([written_twice.select(_TXN), processed]),
            pl.concat([written_twice["process"], processed["process"]]),
        ),
        **{name: (members, members["process"]) for name, members in cycle_members.items()},
    }
    return result(
        valid,
        counts,
        example_rows,
        violations,
        processes={name: sorted(set(involved[name][1].drop_nulls().to_list())) for name in violations},
        txn_anomalies=_txn_anomalies({name: frame for name, (frame, _) in involved.items()}),
        **_measured(history),
    )


def _measured(history: History) -> dict[str, Any]:
    """The per-fault commit times; a measurement that fails is reported beside the verdict, never instead of it."""
    try:
        return {"faults": txn_measure.commit_times(history)}
    except Exception as e:  # noqa: BLE001 - the safety verdict above stands whatever the measurement does
        return {"faults": [], "faults_error": f"{type(e).__name__}: {e}"}


def _with_isolation(history: History) -> pl.DataFrame:
    """The reads, each with read_committed: its reader's isolation.level, else its client's default.

    The last client-config op of a process says (its last isolation.level entry, as librdkafka takes the last one
    given); without one, librdkafka's default is read_committed and Java's read_uncommitted. A process with no
    client-config op is taken to be read_committed.
    """
    clients = history.clients.sort("time_ns", maintain_order=True).unique(
        subset="process", keep="last", maintain_order=True
    )
    levels = (
        clients.select("process", "config")
        .explode("config")
        .drop_nulls("config")
        .unnest("config")
        .filter(pl.col("name") == "isolation.level")
        .unique(subset="process", keep="last", maintain_order=True)
    )
    isolation = clients.select("process", "client").join(
        levels.select("process", pl.col("value").str.to_lowercase().alias("level")), on="process", how="left"
    )
    isolation = isolation.select(
        "process",
        pl.when(pl.col("level").is_not_null())
        .then(pl.col("level") == "read_committed")
        .otherwise(pl.col("client") != _JAVA_DEFAULT_UNCOMMITTED)
        .alias("read_committed"),
    )
    reads = history.reads.join(isolation, on="process", how="left", maintain_order="left")
    return reads.with_columns(pl.col("read_committed").fill_null(True))


def _writes(history: History, committed_reads: pl.DataFrame) -> pl.DataFrame:
    """The transactional writes, each with where it was seen: in_log, log_copies, readers (read_committed processes that
    read it, null: none), first_read_ns, and covered (the final log read read its partition completely); acked_partition
    and acked_offset: where the send was acknowledged (appended, not committed), null unless it completed ok.

    A send that never reported its partition or offset takes them from where the write was seen.
    """
    sends = history.sends.filter(pl.col("txn").is_not_null() & pl.col("value").is_not_null())
    acked = pl.col("outcome") == OpType.OK
    writes = sends.select(
        "id",
        "process",
        "txn",
        *IDENTITY,
        "partition",
        "offset",
        pl.col("outcome").alias("send_outcome"),
        pl.when(acked).then(pl.col("partition")).alias("acked_partition"),
        pl.when(acked).then(pl.col("offset")).alias("acked_offset"),
    )
    keys = writes.select(IDENTITY).unique()
    logged = (
        history.log.join(keys, on=list(IDENTITY), how="semi")
        .unique(subset=["topic", "partition", "offset"])
        .sort("partition", "offset")
        .group_by(IDENTITY)
        .agg(
            pl.col("partition").first().alias("log_partition"),
            pl.col("offset").first().alias("log_offset"),
            pl.len().alias("log_copies"),
        )
    )
    read = (
        committed_reads.join(keys, on=list(IDENTITY), how="semi")
        .sort("time_ns")
        .group_by(IDENTITY)
        .agg(
            pl.col("process").unique(maintain_order=True).sort().alias("readers"),
            pl.col("time_ns").first().alias("first_read_ns"),
            pl.col("partition").first().alias("read_partition"),
            pl.col("offset").first().alias("read_offset"),
        )
    )
    writes = writes.join(logged, on=list(IDENTITY), how="left", maintain_order="left").join(
        read, on=list(IDENTITY), how="left", maintain_order="left"
    )
    writes = writes.with_columns(
        pl.coalesce("partition", "log_partition", "read_partition").alias("partition"),
        pl.coalesce("offset", "log_offset", "read_offset").alias("offset"),
        pl.col("log_copies").is_not_null().alias("in_log"),
    )
    return _covered(writes, history)


def _covered(writes: pl.DataFrame, history: History) -> pl.DataFrame:
    """writes with covered: the final read read the write's partition completely (evidence.read_partitions; an empty
    partition read completely included); a write of unknown partition: every partition of its topic was."""
    complete = (
        read_partitions(history)
        .filter(pl.col("complete"))
        .select(_PARTITION)
        .unique()
        .with_columns(pl.lit(True).alias("_read"))
    )
    topics = (
        known_partitions(history)
        .join(complete, on=_PARTITION, how="left")
        .group_by("topic")
        .agg(pl.col("_read").fill_null(False).all().alias("_topic_read"))
    )
    joined = writes.join(complete, on=_PARTITION, how="left", maintain_order="left").join(
        topics, on="topic", how="left", maintain_order="left"
    )
    covered = (
        pl.when(pl.col("partition").is_null())
        .then(pl.col("_topic_read").fill_null(False))
        .otherwise(pl.col("_read").fill_null(False))
    )
    return joined.with_columns(covered.alias("covered")).drop("_read", "_topic_read")


def _txns(history: History, writes: pl.DataFrame) -> pl.DataFrame:
    """One row per transaction (history.txns, and any a send names that has no txn op), with its status and what was
    seen of it.

    status: committed (outcome ok), aborted (fail), unknown. must_have_committed: unknown and a write of it was read by
    a read_committed reader or is in the log; must_have_aborted: unknown, not that, and every partition it wrote was
    read completely. committed: committed or must-have-committed, unless asked to abort. aborted: aborted or asked to
    abort (end abort): what no read_committed reader may see. time_ns: its last recorded moment (completion, else end,
    else begin)."""
    known = history.txns.unique(subset=_TXN, keep="first", maintain_order=True)
    unrecorded = writes.select(_TXN).unique(maintain_order=True).join(known.select(_TXN), on=_TXN, how="anti")
    txns = pl.concat([known, unrecorded], how="diagonal_relaxed")
    seen = writes.group_by(_TXN).agg(
        pl.len().alias("writes"),
        (pl.col("in_log") | pl.col("readers").is_not_null()).any().alias("visible"),
        pl.col("in_log").any().alias("logged"),
        pl.col("covered").all().alias("all_covered"),
    )
    txns = txns.join(seen, on=_TXN, how="left", maintain_order="left").with_columns(
        pl.col("writes").fill_null(0), pl.col("visible", "logged", "all_covered").fill_null(False)
    )
    status = (
        pl.when(pl.col("outcome") == OpType.OK)
        .then(pl.lit("committed"))
        .when(pl.col("outcome") == OpType.FAIL)
        .then(pl.lit("aborted"))
        .otherwise(pl.lit("unknown"))
    )
    txns = txns.with_columns(
        status.alias("status"),
        pl.col("end").eq_missing("abort").alias("asked_abort"),
        pl.coalesce("complete_ns", "end_ns", "invoke_ns").alias("time_ns"),
    )
    unknown = pl.col("status") == "unknown"
    txns = txns.with_columns(
        (unknown & pl.col("visible")).alias("must_have_committed"),
        (unknown & ~pl.col("visible") & pl.col("all_covered") & (pl.col("writes") > 0)).alias("must_have_aborted"),
    )
    return txns.with_columns(
        ((pl.col("status") == "committed") | (pl.col("must_have_committed") & ~pl.col("asked_abort"))).alias(
            "committed"
        ),
        ((pl.col("status") == "aborted") | pl.col("asked_abort")).alias("aborted"),
    )


def _precommitted(committed_reads: pl.DataFrame, writes: pl.DataFrame) -> pl.DataFrame:
    """Per (reader, write): the first read of a write of a transaction not aborted, before its writer asked to commit it
    (read time before end_ns) or of one whose writer never asked (end null)."""
    suspects = (
        writes.filter(~pl.col("aborted"))
        .unique(subset=list(IDENTITY), keep="first", maintain_order=True)
        .select(*_TXN_EXAMPLE, "id", *IDENTITY, "end_ns")
    )
    reads = committed_reads.select(
        pl.col("process").alias("reader"), "group", "time_ns", "topic", "partition", "offset", "value"
    )
    early = reads.join(suspects, on=list(IDENTITY), how="inner").filter(
        pl.col("end").is_null() | (pl.col("time_ns") < pl.col("end_ns"))
    )
    return early.sort("time_ns").unique(subset=["reader", *IDENTITY], keep="first", maintain_order=True)


def _torn(writes: pl.DataFrame) -> pl.DataFrame:
    """Transactions with writes in the log (present) and writes absent from it on partitions it was read from completely
    (absent): of a committed one, any (Kafka refuses to commit a transaction one of whose writes failed: a failed write
    of a committed transaction must be in the log); of another, one whose send did not fail."""
    absent = (
        ~pl.col("in_log")
        & pl.col("covered")
        & (pl.col("send_outcome").ne_missing(OpType.FAIL) | pl.col("committed").fill_null(False))
    )
    per = writes.group_by(_TXN, maintain_order=True).agg(
        *[pl.col(name).first() for name in (*_TXN_EXAMPLE[2:], "time_ns")],
        pl.col("in_log").sum().alias("present"),
        absent.sum().alias("absent"),
        pl.struct(_PARTITION).unique().sort().alias("partitions"),
    )
    return per.filter((pl.col("present") > 0) & (pl.col("absent") > 0)).sort(_TXN)


def _intermediate(committed_reads: pl.DataFrame, writes: pl.DataFrame, log: pl.DataFrame) -> pl.DataFrame:
    """Per (reader, committed transaction, partition): a reader whose reads of the partition span the transaction's
    writes in it (it read something at or before the first and at or after the last, in the log's order) read some but
    not all of them.

    A reader is a group (its members' reads together) or a process of no group. Reads are placed in the log by (topic,
    value)."""
    schema = {
        "reader": pl.String,
        "group": pl.String,
        "readers": pl.List(pl.String),
        "process": pl.String,
        "txn": pl.Int64,
        "topic": pl.String,
        "partition": pl.Int64,
        "read": pl.UInt32,
        "writes": pl.UInt32,
        "first_offset": pl.Int64,
        "last_offset": pl.Int64,
        "unread": pl.List(pl.String),
        "time_ns": pl.Int64,
    }
    ranked = (
        log.drop_nulls("value")
        .unique(subset=["topic", "partition", "offset"], keep="first")
        .sort("topic", "partition", "offset")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(_PARTITION).alias("index"))
        .unique(subset=list(IDENTITY), keep="first", maintain_order=True)
        .select(*IDENTITY, "partition", "offset", "index")
    )
    mine = writes.filter(pl.col("committed")).select(*_TXN, *IDENTITY).join(ranked, on=list(IDENTITY), how="inner")
    spans = (
        mine.group_by(*_TXN, *_PARTITION)
        .agg(
            pl.col("index").min().alias("i_min"),
            pl.col("index").max().alias("i_max"),
            pl.len().alias("writes"),
            pl.col("offset").min().alias("first_offset"),
            pl.col("offset").max().alias("last_offset"),
        )
        .filter(pl.col("writes") > 1)
    )
    if spans.height == 0:
        return pl.DataFrame(schema=schema)
    reader = (
        pl.when(pl.col("group").is_not_null())
        .then(pl.format("group {}", pl.col("group")))
        .otherwise(pl.format("process {}", pl.col("process")))
    )
    reads = committed_reads.select(
        reader.alias("reader"), "group", pl.col("process").alias("reader_process"), "time_ns", *IDENTITY
    ).join(ranked.join(spans.select(_PARTITION).unique(), on=_PARTITION, how="semi"), on=list(IDENTITY), how="inner")
    reach = reads.group_by("reader", *_PARTITION).agg(
        pl.col("index").min().alias("r_min"), pl.col("index").max().alias("r_max")
    )
    hits = (
        reads.join(mine.select(*_TXN, *IDENTITY), on=list(IDENTITY), how="inner")
        .group_by("reader", *_TXN, *_PARTITION)
        .agg(
            pl.col("group").first(),
            pl.col("reader_process").unique().sort().alias("readers"),
            pl.col("value").unique().alias("read_values"),
            pl.col("time_ns").min(),
        )
    )
    cases = (
        hits.join(spans, on=[*_TXN, *_PARTITION])
        .join(reach, on=["reader", *_PARTITION])
        .filter(
            (pl.col("r_min") <= pl.col("i_min"))
            & (pl.col("r_max") >= pl.col("i_max"))
            & (pl.col("read_values").list.len() < pl.col("writes"))
        )
    )
    if cases.height == 0:
        return pl.DataFrame(schema=schema)
    values = mine.group_by(*_TXN, *_PARTITION).agg(pl.col("value").sort_by("index").alias("all_values"))
    cases = cases.join(values, on=[*_TXN, *_PARTITION]).with_columns(
        pl.col("read_values").list.len().alias("read"),
        pl.col("all_values").list.set_difference("read_values").alias("unread"),
    )
    return cases.select([pl.col(name).cast(dtype) for name, dtype in schema.items()]).sort("reader", *_TXN, *_PARTITION)


def _written_twice(writes: pl.DataFrame, log: pl.DataFrame) -> pl.DataFrame:
    """Transactional writes at two or more places of the final log: their places (partition and offset lists, as
    delivery's duplicates), where their send was acknowledged, and their transaction."""
    schema = {
        "kind": pl.String,
        **{name: writes.schema[name] for name in (*_TXN, "id", *IDENTITY)},
        "partition": pl.List(pl.Int64),
        "offset": pl.List(pl.Int64),
        "acked_partition": pl.Int64,
        "acked_offset": pl.Int64,
    }
    twice = writes.filter(pl.col("log_copies") > 1)
    if twice.height == 0:
        return pl.DataFrame(schema=schema)
    places = (
        log.join(twice.select(IDENTITY), on=list(IDENTITY), how="semi")
        .unique(subset=["topic", "partition", "offset"])
        .sort("partition", "offset")
        .group_by(IDENTITY)
        .agg("partition", "offset")
    )
    twice = twice.select(*_TXN, "id", *IDENTITY, "acked_partition", "acked_offset").unique(
        subset=list(IDENTITY), keep="first", maintain_order=True
    )
    twice = twice.join(places, on=list(IDENTITY))
    return twice.with_columns(pl.lit("written").alias("kind")).select(list(schema))


def _plain_idempotent(history: History) -> pl.DataFrame:
    """The plain (not transactional) acknowledged writes of idempotent writers (a txn scenario's feeders), as
    _written_twice takes writes: each must be in the log once, whatever no transaction says of it."""
    idempotent = sorted(idempotent_writers(history))
    sends = history.sends.filter(
        pl.col("txn").is_null()
        & pl.col("value").is_not_null()
        & (pl.col("outcome") == OpType.OK)
        & pl.col("process").is_in(idempotent)
    )
    copies = (
        history.log.join(sends.select(IDENTITY), on=list(IDENTITY), how="semi")
        .unique(subset=["topic", "partition", "offset"])
        .group_by(IDENTITY)
        .agg(pl.len().alias("log_copies"))
    )
    return (
        sends.select(
            "process",
            "txn",
            "id",
            *IDENTITY,
            pl.col("partition").alias("acked_partition"),
            pl.col("offset").alias("acked_offset"),
        )
        .join(copies, on=list(IDENTITY), how="left")
        .with_columns(pl.col("log_copies").fill_null(0))
    )


def _processed_twice(reads: pl.DataFrame, txns: pl.DataFrame) -> pl.DataFrame:
    """Input records (topic, partition, offset) consumed into two or more committed transactions of one consumer group,
    by any reader (exactly-once processing is about offsets, not isolation; each group processes its input once, so two
    groups reading one topic are two pipelines, not a duplicate): the group, the transactions, and the first such read's
    time."""
    schema = {
        "kind": pl.String,
        "group": pl.String,
        "topic": pl.String,
        "partition": pl.Int64,
        "offset": pl.Int64,
        "value": pl.String,
        "txns": pl.List(pl.Struct({"process": pl.String, "txn": pl.Int64})),
        "time_ns": pl.Int64,
    }
    into = reads.filter(pl.col("txn").is_not_null()).join(
        txns.filter(pl.col("committed")).select(_TXN), on=_TXN, how="semi"
    )
    per = (
        into.sort("time_ns")
        .group_by("group", "topic", "partition", "offset")
        .agg(
            pl.col("value").first(),
            pl.struct(_TXN).unique(maintain_order=True).alias("txns"),
            pl.col("time_ns").first(),
        )
    )
    per = per.filter(pl.col("txns").list.len() > 1).sort("group", "topic", "partition", "offset", nulls_last=True)
    return per.with_columns(pl.lit("processed").alias("kind"), pl.col("txns").list.sort()).select(
        [pl.col(n).cast(t) for n, t in schema.items()]
    )


def _interleaved(first: list[dict], second: list[dict]) -> list[dict]:
    """At most EXAMPLES_PER_ANOMALY examples taken in turn from both lists, so neither kind hides the other."""
    both = [row for pair in zip_longest(first, second) for row in pair if row is not None]
    return both[:EXAMPLES_PER_ANOMALY]


def _timed(cycles: list[dict[str, Any]], txns: pl.DataFrame) -> list[dict[str, Any]]:
    """Each cycle with time_ns: the latest begin of its transactions (when all of them were under way)."""
    out = []
    for cycle in cycles:
        begins = txns.join(
            pl.DataFrame(cycle["txns"], schema={"process": pl.String, "txn": pl.Int64}), on=_TXN, how="semi"
        )["invoke_ns"]
        out.append({**cycle, "time_ns": begins.max()})
    return out


def _txn_anomalies(involved: Mapping[str, pl.DataFrame]) -> list[dict[str, Any]]:
    """Per transaction some anomaly involves, its anomalies' names: at most TXN_ANOMALIES_LIMIT transactions, in
    (process, txn) order."""
    frames = [
        frame.select(pl.col("process").cast(pl.String), pl.col("txn").cast(pl.Int64), pl.lit(name).alias("anomaly"))
        for name, frame in involved.items()
        if frame.height
    ]
    if not frames:
        return []
    named = pl.concat(frames).drop_nulls().group_by(_TXN).agg(pl.col("anomaly").unique().sort().alias("anomalies"))
    return named.sort(_TXN).head(TXN_ANOMALIES_LIMIT).to_dicts()
