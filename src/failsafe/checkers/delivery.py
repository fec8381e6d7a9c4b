"""Delivery: every acknowledged write was read (by a consumer, or acquired by a share group), once, where the broker
said it was.

A write is known by (topic, value): failsafe's producers write values unique across the run, so a
value read at some offset is that write, whatever offset the producer was told. The anomalies
are defined in docs/checkers.md. Questions over all records are asked of 64-bit keys
(checkers/keys.py); what they find is confirmed on the real columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import (
    UNKNOWN,
    CheckerResult,
    Side,
    examples,
    read_options,
    result,
    unread_writes,
    with_share_reads,
)
from failsafe.checkers.evidence import allowed_loss, before_share_start, durable_writers, lossy_writers, read_partitions
from failsafe.checkers.keys import IDENTITY, PLACED, POSITION, having_keys, key
from failsafe.history.model import History
from failsafe.history.ops import OpType

# No options: which writers may lose is what the history records (evidence.lossy_writers), and a duplicate a scenario
# expects is a cited [[known]] entry, never an option.
DEFAULTS: dict[str, Any] = {}
# What this checker can report, and whose behaviour each is about (known anomalies are matched against it).
VIOLATIONS = {
    "lost": Side.PRODUCERS,
    "lost-after-read": Side.PRODUCERS,
    "duplicate": Side.PRODUCERS,
    "duplicate-acknowledged": Side.PRODUCERS,
    "duplicate-unacknowledged": Side.PRODUCERS,
    "inconsistent-offsets": Side.PRODUCERS,
    "failed-but-present": Side.PRODUCERS,
}
_SEND_EXAMPLE = ("id", "process", "topic", "partition", "offset", "value")
_UNKNOWN = pl.col("outcome").is_null() | (pl.col("outcome") == OpType.INFO)


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    read_options(options, DEFAULTS, "delivery")
    recorded = history
    history = with_share_reads(history)
    columns = ["id", "process", "topic", "partition", "offset", "value", "outcome", "error"]
    sends = history.sends.select(columns).filter(pl.col("value").is_not_null()).with_columns(key(IDENTITY))
    read_keys, log_keys = (_placed_keys(frame) for frame in (history.reads, history.log))
    observed = pl.concat([read_keys, log_keys])
    # Each of these counts is a pass over every record: taken once, in one select.
    n_writes, n_positions, n_placed = (
        observed.select(pl.col(name).n_unique() for name in ("k", "p", "c")).row(0) if observed.height else (0, 0, 0)
    )

    acked = sends.filter(pl.col("outcome") == OpType.OK)
    unread = unread_writes(acked, history.reads, read_keys.select("k"))
    # The acknowledged writes some consumer read, with an offset: what a later truncation of the log could have taken.
    read = _placed_by_reads(
        acked if unread.height == 0 else acked.join(unread.select("k"), on="k", how="anti"), history.reads
    )
    logged = _logged_partitions(history)
    lost = _classify_lost(unread, history)
    # A write in the log that only share groups which began after it were to read: not theirs to get (or undecided).
    start = before_share_start(recorded, lost).fill_null("")
    in_log = lost["log"] == "lost-in-log-not-consumed"
    before_start, start_undecided = (
        lost.filter(in_log & (start == "before")),
        lost.filter(in_log & (start == "undecided")),
    )
    lost = lost.filter(~(in_log & start.is_in(["before", "undecided"])))
    gone = _lost_after_read(read, logged, log_keys, history)
    # Gone from the head of the log, not cut from its tail: retention or DeleteRecords took them, in time or not, which
    # durability judges against the topic's retention (deleted-early is a loss there); here they are unverified.
    below = _below_log_start(gone, history)
    truncated = gone.filter(~below)
    unverified = pl.concat(
        [_read_but_unverified(read, logged, history), gone.filter(below).drop("log_value")], how="vertical"
    )
    duplicates, conflicting = _observed_anomalies(history, observed, n_writes, n_positions, n_placed)
    misplaced = _misplaced_acks(acked, observed, n_placed, history)
    failed = sends.filter(pl.col("outcome") == OpType.FAIL)
    failed_present = _present(failed, observed, history)
    unknown = sends.filter(_UNKNOWN)
    recovered = _present(unknown, observed, history)

    lossy = lossy_writers(history)
    lost_allowed = lost.filter(allowed_loss(lossy))
    # Read writes of writers that may not lose, on partitions the final read did not read completely: truncation after
    # the read cannot be ruled out.
    unverified_durable = unverified.filter(~allowed_loss(lossy))
    truncated_allowed = truncated.filter(allowed_loss(lossy))
    n_duplicate = duplicates.select(pl.struct(IDENTITY).n_unique()).item() if duplicates.height else 0
    duplicate_writes = _duplicate_writes(duplicates, sends)
    n_duplicate_acked = int((duplicate_writes["outcome"] == OpType.OK).sum()) if duplicate_writes.height else 0
    n_conflicting = conflicting.select(pl.struct(POSITION).n_unique()).item() if conflicting.height else 0
    n_inconsistent = n_conflicting + misplaced.height
    lost_write = lost.filter(pl.col("jepsen") == "lost-write")
    unseen = lost.filter(pl.col("jepsen") == "unseen")
    by_log = {
        name: lost.filter(pl.col("log") == name)
        for name in ("lost-not-in-log", "lost-in-log-not-consumed", "lost-unverified")
    }
    counts = {
        "acknowledged": acked.height,
        "acknowledged-without-offset": acked["offset"].null_count(),
        "read": acked.height - unread.height,
        "lost": lost.height,
        "lost-after-read": truncated.height,
        # Of those, by writers the scenario lets lose (acks 0 or 1): counted, not violations.
        "lost-allowed": lost_allowed.height,
        "unread-before-share-start": before_start.height,
        "unread-share-start-undecided": start_undecided.height,
        "lost-after-read-allowed": truncated_allowed.height,
        "lost-after-read-unverified": unverified.height,
        "lost-write": lost_write.height,
        "unseen": unseen.height,
        **{name: frame.height for name, frame in by_log.items()},
        "duplicate": n_duplicate,
        "duplicate-acknowledged": n_duplicate_acked,
        "duplicate-unacknowledged": n_duplicate - n_duplicate_acked,
        "inconsistent-offsets": n_inconsistent,
        "failed": failed.height,
        "failed-but-present": failed_present.height,
        "unknown": unknown.height,
        "recovered": recovered.height,
        "unknown-not-recovered": unknown.height - recovered.height,
    }
    example_rows = {
        "lost-write": examples(lost_write, *_SEND_EXAMPLE),
        "lost-after-read": examples(truncated, *_SEND_EXAMPLE, "log_value"),
        "lost-after-read-unverified": examples(unverified, *_SEND_EXAMPLE),
        "unseen": examples(unseen, *_SEND_EXAMPLE),
        "unread-share-start-undecided": examples(start_undecided, *_SEND_EXAMPLE),
        **{name: examples(frame, *_SEND_EXAMPLE) for name, frame in by_log.items()},
        "duplicate": examples(duplicate_writes),
        "inconsistent-offsets": (
            _grouped_examples(conflicting, POSITION, "value")
            + examples(
                misplaced, "id", "process", "topic", "value", "partition", "offset", "read_partition", "read_offset"
            )
        )[:5],
        "failed-but-present": examples(failed_present, *_SEND_EXAMPLE, "error"),
        "unknown-not-recovered": examples(unknown.join(recovered, on=["process", "id"], how="anti"), *_SEND_EXAMPLE),
    }
    violations = []
    if lost.height > lost_allowed.height:
        violations.append("lost")
    if truncated.height > truncated_allowed.height:
        violations.append("lost-after-read")
    if n_duplicate:
        # Named by which copy was acknowledged where the counts split them, so a known anomaly can match one kind only.
        violations += [name for name in ("duplicate-acknowledged", "duplicate-unacknowledged") if counts.get(name)] or [
            "duplicate"
        ]
    violations += [
        name
        for name, n in (("inconsistent-offsets", n_inconsistent), ("failed-but-present", failed_present.height))
        if n
    ]
    # No violation, but writes that must not be lost could not be checked against the log: the checker cannot decide.
    undecided_durable = start_undecided.filter(~allowed_loss(lossy))
    valid: bool | str = (
        False if violations else UNKNOWN if unverified_durable.height or undecided_durable.height else True
    )
    return result(
        valid,
        counts,
        example_rows,
        violations,
        by_process=_by_process(history.sends, lost, truncated, recovered, durable_writers(history), lossy),
        processes=_writers_of(violations, duplicate_writes, failed_present),
    )


def _writers_of(
    violations: list[str], duplicate_writes: pl.DataFrame, failed_present: pl.DataFrame
) -> dict[str, list[str]]:
    """The producers behind each violation about writes that can be known (duplicates, failed-but-present), so a known
    anomaly is matched against them, not every producer. A violation with a write of no known producer is left out:
    it is then matched against every producer, as before."""
    acked = pl.col("outcome") == OpType.OK
    frames = {
        "duplicate": duplicate_writes,
        "duplicate-acknowledged": duplicate_writes.filter(acked),
        "duplicate-unacknowledged": duplicate_writes.filter(~acked.fill_null(False)),
        "failed-but-present": failed_present,
    }
    out = {}
    for name in violations:
        frame = frames.get(name)
        if frame is not None and frame.height and frame["process"].null_count() == 0:
            out[name] = sorted(frame["process"].unique().to_list())
    return out


def _placed_keys(frame: pl.DataFrame) -> pl.DataFrame:
    """k (the write), p (the place) and c (the write at the place) of every record of frame (reads or log) that has a
    value."""
    return frame.select(PLACED).drop_nulls("value").select(key(IDENTITY, "k"), key(POSITION, "p"), key(PLACED, "c"))


def observed_rows(history: History, columns: tuple[str, ...], keys: pl.Series) -> pl.DataFrame:
    """The distinct (topic, partition, offset, value) read or logged whose key over columns is in keys."""
    frames = [
        having_keys(frame.filter(pl.col("value").is_not_null()), columns, keys).select(PLACED)
        for frame in (history.reads, history.log)
    ]
    return pl.concat(frames).unique(maintain_order=True)


def _observed_anomalies(
    history: History, observed: pl.DataFrame, n_writes: int, n_positions: int, n_placed: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Values seen at two places (duplicates), places seen with two values (conflicts); n_*: the distinct k, p and c
    observed."""
    empty = pl.DataFrame(schema={column: history.log.schema[column] for column in PLACED})
    duplicates = conflicting = empty
    # One distinct (write, place) pair per write means no write was seen at two places.
    if n_writes != n_placed:
        suspects = observed.unique(subset="c").filter(pl.col("k").is_duplicated())["k"].unique()
        rows = observed_rows(history, IDENTITY, suspects)
        duplicates = rows.filter(pl.struct(IDENTITY).is_duplicated()).sort(*IDENTITY, "partition", "offset")
    if n_positions != n_placed:
        suspects = observed.unique(subset="c").filter(pl.col("p").is_duplicated())["p"].unique()
        rows = observed_rows(history, POSITION, suspects)
        conflicting = rows.filter(pl.struct(POSITION).is_duplicated()).sort(*POSITION)
    return duplicates, conflicting


def _misplaced_acks(acked: pl.DataFrame, observed: pl.DataFrame, n_placed: int, history: History) -> pl.DataFrame:
    """Acknowledged writes read or logged at another (partition, offset) than the broker acknowledged (n_placed:
    distinct c observed)."""
    with_offset = acked.filter(pl.col("offset").is_not_null()).with_columns(key(PLACED, "c"))
    if pl.concat([observed["c"], with_offset["c"]]).n_unique() == n_placed:
        return with_offset.select("id", "process", "topic", "value", "partition", "offset").head(0)
    elsewhere = with_offset.join(observed.select("c"), on="c", how="anti")
    if elsewhere.height == 0:
        return with_offset.select("id", "process", "topic", "value", "partition", "offset").head(0)
    seen = observed_rows(history, IDENTITY, elsewhere["k"].unique())
    seen = seen.select(*IDENTITY, pl.col("partition").alias("read_partition"), pl.col("offset").alias("read_offset"))
    joined = elsewhere.select("id", "process", "topic", "value", "partition", "offset").join(
        seen, on=list(IDENTITY), how="inner"
    )
    wrong = joined.filter(
        (pl.col("partition") != pl.col("read_partition")) | (pl.col("offset") != pl.col("read_offset"))
    )
    # A write seen at its own place and elsewhere too is a duplicate, not a misplaced ack.
    return wrong.unique(subset=["process", "id"], keep="first", maintain_order=True).sort("process", "id")


def _present(sends: pl.DataFrame, observed: pl.DataFrame, history: History) -> pl.DataFrame:
    """The sends whose write some consumer read or the log holds."""
    if sends.height == 0:
        return sends
    hits = observed.filter(pl.col("k").is_in(sends["k"].implode()))["k"].unique()
    suspects = sends.filter(pl.col("k").is_in(hits.implode()))
    rows = observed_rows(history, IDENTITY, hits)
    return suspects.join(rows.select(IDENTITY).unique(), on=list(IDENTITY), how="semi", maintain_order="left")


def _logged_partitions(history: History) -> pl.DataFrame:
    """(topic, partition) the final read read completely (evidence.read_partitions), an empty partition included."""
    reads = read_partitions(history)
    return reads.filter(pl.col("complete")).select("topic", "partition").unique()


def _placed_by_reads(read: pl.DataFrame, reads: pl.DataFrame) -> pl.DataFrame:
    """The acknowledged writes some consumer read, each at the place it was read where its acknowledgement gave none
    (acks=0): what a consumer saw is what a later truncation of the log could have taken."""
    if read.height == 0 or read["offset"].null_count() == 0:
        return read
    seen = (
        reads.drop_nulls("value")
        .select(*IDENTITY, pl.col("partition").alias("read_partition"), pl.col("offset").alias("read_offset"))
        .unique(subset=list(IDENTITY), keep="first", maintain_order=True)
    )
    placed = read.join(seen, on=list(IDENTITY), how="left", maintain_order="left")
    return (
        placed.with_columns(
            pl.coalesce("partition", "read_partition").alias("partition"),
            pl.coalesce("offset", "read_offset").alias("offset"),
        )
        .drop("read_partition", "read_offset")
        .filter(pl.col("offset").is_not_null())
    )


def _read_but_unverified(read: pl.DataFrame, logged: pl.DataFrame, history: History) -> pl.DataFrame:
    """Acknowledged writes a consumer read whose partition the final read did not read completely (or at all): whether
    the log still holds them is unknown (check adds those gone below the log start offset)."""
    return read.join(logged, on=["topic", "partition"], how="anti", maintain_order="left").sort("process", "id")


def _below_log_start(gone: pl.DataFrame, history: History) -> pl.Series:
    """Of the read writes gone from the log, those below the log start offset the final read found for their partition
    (the lowest over clusters, when several were read): taken from the head of the log, not truncated at its tail."""
    if gone.height == 0:
        return pl.Series("below", [], dtype=pl.Boolean)
    starts = (
        read_partitions(history)
        .filter(pl.col("complete"))
        .group_by("topic", "partition")
        .agg(pl.col("log_start_offset").min())
    )
    placed = gone.select("topic", "partition", "offset").join(
        starts, on=["topic", "partition"], how="left", maintain_order="left"
    )
    below = (pl.col("offset") < pl.col("log_start_offset")).fill_null(False)
    return placed.select(below.alias("below")).to_series()


def _lost_after_read(
    read: pl.DataFrame, logged: pl.DataFrame, log_keys: pl.DataFrame, history: History
) -> pl.DataFrame:
    """Acknowledged writes a consumer read that the log no longer holds at the end: the log was truncated under them
    (a leader that acknowledged what it could not replicate lost its place, e.g. to an unclean election).
    ``log_value``: what the log holds at the acknowledged offset now, if anything."""
    if read.height == 0:
        return read.head(0).with_columns(pl.lit(None, dtype=pl.String).alias("log_value"))
    # Nearly every read write is in the log: the few that are not are then narrowed to the partitions the log reader
    # read.
    gone = read.join(log_keys.select("k"), on="k", how="anti", maintain_order="left")
    gone = gone.join(logged, on=["topic", "partition"], how="semi", maintain_order="left")
    if gone.height == 0:
        return gone.with_columns(pl.lit(None, dtype=pl.String).alias("log_value"))
    now = history.log.select("topic", "partition", "offset", pl.col("value").alias("log_value")).unique(
        subset=["topic", "partition", "offset"]
    )
    return gone.join(now, on=["topic", "partition", "offset"], how="left", maintain_order="left").sort("process", "id")


def _classify_lost(unread: pl.DataFrame, history: History) -> pl.DataFrame:
    """Each unread acknowledged write, with its Jepsen class and what the log says of it."""
    if unread.height == 0:
        return unread.with_columns(
            pl.lit(None, dtype=pl.String).alias("log"), pl.lit(None, dtype=pl.String).alias("jepsen")
        )
    in_log = having_keys(history.log, IDENTITY, unread["k"].unique())
    log_positions = in_log.select(*IDENTITY, pl.col("offset").alias("log_offset")).unique(
        subset=list(IDENTITY), keep="first"
    )
    partitions = unread.select("topic", "partition").unique()
    logged_partitions = _logged_partitions(history).with_columns(pl.lit(True).alias("partition_in_log"))
    reads = history.reads.join(partitions, on=["topic", "partition"], how="semi")
    highest_read = reads.group_by("topic", "partition").agg(pl.col("offset").max().alias("highest_read"))
    frame = (
        unread.join(log_positions, on=list(IDENTITY), how="left", maintain_order="left")
        .join(logged_partitions, on=["topic", "partition"], how="left", maintain_order="left")
        .join(highest_read, on=["topic", "partition"], how="left", maintain_order="left")
    )
    # acks=0 writes have no offset: where the log has them, the log says where they are.
    position = pl.coalesce("offset", "log_offset")
    return frame.with_columns(
        pl.when(pl.col("log_offset").is_not_null())
        .then(pl.lit("lost-in-log-not-consumed"))
        .when(pl.col("partition_in_log").fill_null(False))
        .then(pl.lit("lost-not-in-log"))
        .otherwise(pl.lit("lost-unverified"))
        .alias("log"),
        pl.when(pl.col("highest_read").is_not_null() & (position.is_null() | (position <= pl.col("highest_read"))))
        .then(pl.lit("lost-write"))
        .otherwise(pl.lit("unseen"))
        .alias("jepsen"),
    )


def _duplicate_writes(duplicates: pl.DataFrame, sends: pl.DataFrame) -> pl.DataFrame:
    """One row per duplicated write: its places, its send, and which copy the producer was acknowledged at.

    acked_partition / acked_offset are null when the send was not acknowledged with an offset;
    other_copies are the places other than the acknowledged one (every place when none was).
    """
    schema = {
        "topic": pl.String,
        "value": pl.String,
        "partition": pl.List(pl.Int64),
        "offset": pl.List(pl.Int64),
        "process": pl.String,
        "id": pl.Int64,
        "outcome": pl.String,
        "acked_partition": pl.Int64,
        "acked_offset": pl.Int64,
        "other_copies": pl.List(pl.Struct({"partition": pl.Int64, "offset": pl.Int64})),
    }
    if duplicates.height == 0:
        return pl.DataFrame(schema=schema)
    places = duplicates.group_by(list(IDENTITY), maintain_order=True).agg("partition", "offset")
    # A value's send is unique in a run; keep the first should a producer have written it twice.
    sent = sends.select(
        *IDENTITY, "process", "id", "outcome", pl.col("partition").alias("p_sent"), pl.col("offset").alias("o_sent")
    )
    sent = sent.join(places.select(IDENTITY), on=list(IDENTITY), how="semi").unique(
        subset=list(IDENTITY), keep="first", maintain_order=True
    )
    acked = pl.col("outcome") == OpType.OK
    joined = places.join(sent, on=list(IDENTITY), how="left", maintain_order="left").with_columns(
        pl.when(acked).then(pl.col("p_sent")).alias("acked_partition"),
        pl.when(acked).then(pl.col("o_sent")).alias("acked_offset"),
    )
    copies = joined.select(*IDENTITY, "partition", "offset", "acked_partition", "acked_offset").explode(
        "partition", "offset"
    )
    is_acked_copy = (pl.col("partition") == pl.col("acked_partition")) & (pl.col("offset") == pl.col("acked_offset"))
    others = (
        copies.filter(~is_acked_copy.fill_null(False))
        .group_by(list(IDENTITY), maintain_order=True)
        .agg(pl.struct("partition", "offset").alias("other_copies"))
    )
    joined = joined.join(others, on=list(IDENTITY), how="left", maintain_order="left")
    return joined.select([pl.col(name).cast(dtype) for name, dtype in schema.items()])


def _grouped_examples(frame: pl.DataFrame, by: tuple[str, ...], *collected: str) -> list[dict[str, Any]]:
    if frame.height == 0:
        return []
    return examples(frame.group_by(list(by), maintain_order=True).agg([pl.col(column) for column in collected]))


def _by_process(
    sends: pl.DataFrame,
    unread: pl.DataFrame,
    truncated: pl.DataFrame,
    recovered: pl.DataFrame,
    durable: set[str],
    lossy: set[str],
) -> dict[str, dict[str, Any]]:
    """Per writer: its counts, whether it promised durability (acks=all) and whether the scenario lets it lose."""
    totals = sends.group_by("process").agg(
        (pl.col("outcome") == OpType.OK).sum().alias("acknowledged"),
        (pl.col("outcome") == OpType.FAIL).sum().alias("failed"),
        _UNKNOWN.sum().alias("unknown"),
    )
    lost = unread.group_by("process").agg(pl.len().alias("lost"))
    after_read = truncated.group_by("process").agg(pl.len().alias("lost-after-read"))
    recovered_counts = recovered.group_by("process").agg(pl.len().alias("recovered"))
    table = (
        totals.join(lost, on="process", how="left")
        .join(after_read, on="process", how="left")
        .join(recovered_counts, on="process", how="left")
        .fill_null(0)
        .sort("process")
    )
    names = ("acknowledged", "lost", "lost-after-read", "failed", "unknown", "recovered")
    return {
        row["process"]: {
            **{name: int(row[name]) for name in names},
            "durable": row["process"] in durable,
            "may_lose": row["process"] in lossy,
        }
        for row in table.to_dicts()
    }
