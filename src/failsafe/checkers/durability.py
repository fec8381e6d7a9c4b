"""Durability: every acknowledged write of every writer is in the final read of its partition. The one judge of loss
that every kind's runs get, whatever their other checkers (scenarios/store/check.py runs it; no kind can leave it out or
narrow it).

A write is acknowledged when its send completed ok and, for a transactional write, its transaction committed (its txn op
ok); a write of an aborted transaction, or of one whose end nobody knows, promises nothing here
(checkers/txn/transactions.py judges those). Whatever wrote it counts: a plain producer, a transactional writer or
processor, a share group's producer, a DR pair's writer on either cluster (judged against the final read of the cluster
it wrote to), the pipeline's simulator (its ledger, scenarios/kinds/pipeline). A write is found by (topic, value),
values being unique across a run.

Each acknowledged write is, by the final read (history.log_reads, evidence.read_partitions):

    present          in the log of its topic
    lost (v.)        absent, and its partition was read completely (an empty partition read completely included); a
                     write of unknown partition (acks=0) needs every partition of its topic read
    deleted-early    absent, below the log start offset the final read found, in a topic whose only retention is by
                     time (cleanup.policy=delete, retention.bytes=-1), and sent less than retention.ms before the read:
                     no retention in real time had deleted it (a broker whose clock ran ahead did;
                     docs/clock-faults.md). Counted as lost
    unverified       absent, and its partition was not read completely (never asked for, a read that failed or was cut
                     short), or its offset is below the log start offset the read found and its retention may have
                     elapsed (or the topic keeps by size, or compacts): nothing says whether the log still holds it

A loss or an unverified write of a writer that may lose (evidence.lossy_writers: declared may_lose and recorded acks 0
or 1) is counted against it and never decides the verdict. valid: false when any other writer lost a write; "unknown"
when one of its writes is unverified; true otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, Validity, examples, read_options, result
from failsafe.checkers.evidence import (
    allowed_loss,
    cluster_of,
    durable_writers,
    known_partitions,
    lossy_writers,
    multi_cluster,
    read_partitions,
)
from failsafe.history.model import History
from failsafe.history.ops import OpType

DEFAULTS: dict[str, Any] = {}
LOST_FATES = ("lost", "deleted-early")
VIOLATIONS = {"lost": Side.PRODUCERS}
_PLACE = ["cluster", "topic", "partition"]
_EXAMPLE = ("process", "id", "cluster", "topic", "partition", "offset", "value", "txn")
WRITE_SCHEMA = {
    "process": pl.String,
    "id": pl.Int64,
    "cluster": pl.String,
    "topic": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "value": pl.String,
    "txn": pl.Int64,
    # When its send was asked for (the record's CreateTime is no earlier): how old it was at the final read.
    "invoke_ns": pl.Int64,
}


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    read_options(options, DEFAULTS, "durability")
    return judge(acknowledged_writes(history), history)


def acknowledged_writes(history: History) -> pl.DataFrame:
    """Every acknowledged write (WRITE_SCHEMA): sends completed ok, outside a transaction or in one that committed."""
    sends = history.sends.filter((pl.col("outcome") == OpType.OK) & pl.col("value").is_not_null())
    committed = history.txns.filter(pl.col("outcome") == OpType.OK).select("process", "txn").unique()
    plain = sends.filter(pl.col("txn").is_null())
    in_committed = sends.filter(pl.col("txn").is_not_null()).join(committed, on=["process", "txn"], how="semi")
    writes = pl.concat([plain, in_committed])
    cluster = cluster_of() if multi_cluster(history) else pl.lit(None, dtype=pl.String)
    return writes.with_columns(cluster.alias("cluster")).select([pl.col(c).cast(t) for c, t in WRITE_SCHEMA.items()])


def judge(writes: pl.DataFrame, history: History, log: pl.DataFrame | None = None) -> CheckerResult:
    """``writes`` (WRITE_SCHEMA) against the final read of ``history`` (its log, or ``log``: the same records with the
    value a write is known by, for writers whose values the log holds inside a larger record)."""
    log = history.log if log is None else log
    lossy = lossy_writers(history)
    if not multi_cluster(history):
        log = log.with_columns(pl.lit(None, dtype=pl.String).alias("cluster"))
    found = log.select("cluster", "topic", "value").drop_nulls("value").unique()
    absent = writes.join(found, on=["cluster", "topic", "value"], how="anti", nulls_equal=True, maintain_order="left")
    fates = _fates(absent, history, log)
    lost = fates.filter(pl.col("fate").is_in(LOST_FATES))
    unverified = fates.filter(~pl.col("fate").is_in(LOST_FATES))
    may_lose = allowed_loss(lossy)
    lost_allowed, unverified_allowed = lost.filter(may_lose), unverified.filter(may_lose)
    counts = {
        "acknowledged": writes.height,
        "present": writes.height - absent.height,
        "lost": lost.height,
        "lost-allowed": lost_allowed.height,
        "lost-deleted-early": lost.filter(pl.col("fate") == "deleted-early").height,
        "unverified": unverified.height,
        "unverified-allowed": unverified_allowed.height,
        "unverified-not-read": unverified.filter(pl.col("fate") == "not-read").height,
        "unverified-below-log-start": unverified.filter(pl.col("fate") == "below-log-start").height,
        "partitions-read": int(read_partitions(history)["complete"].sum()),
    }
    example_rows = {
        "lost": examples(lost.filter(~may_lose), *_EXAMPLE, "fate", "log_value"),
        "lost-allowed": examples(lost_allowed, *_EXAMPLE),
        "unverified": examples(unverified.filter(~may_lose), *_EXAMPLE, "fate"),
    }
    violations = ["lost"] if lost.height > lost_allowed.height else []
    valid: Validity = False if violations else UNKNOWN if unverified.height > unverified_allowed.height else True
    fields: dict[str, Any] = {"by_process": _by_process(writes, lost, unverified, lossy, durable_writers(history))}
    if valid == UNKNOWN:
        fields["reason"] = (
            f"{unverified.height - unverified_allowed.height} acknowledged write(s) of writers that may not lose are "
            "in no partition the final read read completely: whether the log still holds them is unknown"
        )
    return result(
        valid,
        counts,
        example_rows,
        violations,
        processes={"lost": sorted(set(lost.filter(~may_lose)["process"].to_list()))} if violations else {},
        **fields,
    )


def _fates(absent: pl.DataFrame, history: History, log: pl.DataFrame) -> pl.DataFrame:
    """The absent writes with their ``fate`` (lost, not-read, below-log-start) and ``log_value``: what the log holds at
    the acknowledged offset now, if anything."""
    schema = {**absent.schema, "fate": pl.String, "log_value": pl.String}
    if absent.height == 0:
        return pl.DataFrame(schema=schema)
    reads = read_partitions(history)
    if not multi_cluster(history):
        reads = reads.with_columns(pl.lit(None, dtype=pl.String).alias("cluster"))
    placed = absent.filter(pl.col("partition").is_not_null()).join(
        reads, on=_PLACE, how="left", nulls_equal=True, maintain_order="left"
    )
    below = (
        pl.col("offset").is_not_null()
        & pl.col("log_start_offset").is_not_null()
        & (pl.col("offset") < pl.col("log_start_offset"))
    )
    # Retention by time only, and the write younger than it at the read: nothing in real time deleted it.
    kept = (
        (pl.col("cleanup_policy") == "delete")
        & (pl.col("retention_bytes") < 0)
        & pl.col("invoke_ns").is_not_null()
        & (
            (pl.col("retention_ms") < 0)
            | ((pl.col("invoke_ns") + pl.col("retention_ms") * 1_000_000) > pl.col("read_ns"))
        )
    ).fill_null(False)
    placed = placed.with_columns(
        pl.when(~pl.col("complete").fill_null(False))
        .then(pl.lit("not-read"))
        .when(below & kept)
        .then(pl.lit("deleted-early"))
        .when(below)
        .then(pl.lit("below-log-start"))
        .otherwise(pl.lit("lost"))
        .alias("fate")
    )
    unplaced = absent.filter(pl.col("partition").is_null())
    if unplaced.height:
        # A write of unknown partition is lost only when every partition of its topic was read completely, on its
        # cluster.
        clusters = reads.select("cluster").unique()
        topics = (
            known_partitions(history)
            .join(clusters, how="cross")
            .join(reads.select(*_PLACE, "complete"), on=_PLACE, how="left", nulls_equal=True)
        )
        whole = topics.group_by("cluster", "topic").agg(pl.col("complete").fill_null(False).all().alias("whole"))
        unplaced = unplaced.join(whole, on=["cluster", "topic"], how="left", nulls_equal=True).with_columns(
            pl.when(pl.col("whole").fill_null(False)).then(pl.lit("lost")).otherwise(pl.lit("not-read")).alias("fate")
        )
    now = log.select(*_PLACE, "offset", pl.col("value").alias("log_value")).unique(subset=[*_PLACE, "offset"])
    frames = [frame.select(*absent.columns, "fate") for frame in (placed, unplaced) if frame.height]
    fated = pl.concat(frames).join(now, on=[*_PLACE, "offset"], how="left", nulls_equal=True, maintain_order="left")
    return fated.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("process", "id", nulls_last=True)


def _by_process(
    writes: pl.DataFrame, lost: pl.DataFrame, unverified: pl.DataFrame, lossy: set[str], durable: set[str]
) -> dict[str, dict]:
    """Per writer: acknowledged, lost, unverified; whether it recorded acks=all, and whether the scenario lets it
    lose."""
    table = (
        writes.group_by("process")
        .agg(pl.len().alias("acknowledged"))
        .join(lost.group_by("process").agg(pl.len().alias("lost")), on="process", how="left")
        .join(unverified.group_by("process").agg(pl.len().alias("unverified")), on="process", how="left")
        .fill_null(0)
        .sort("process")
    )
    return {
        row["process"]: {
            "acknowledged": int(row["acknowledged"]),
            "lost": int(row["lost"]),
            "unverified": int(row["unverified"]),
            "durable": row["process"] in durable,
            "may_lose": row["process"] in lossy,
        }
        for row in table.to_dicts()
    }
