"""Liveness: a partition that never recovered after the heal, and a reader that never caught up.

The engine's recover phase waits for every sampled partition to have a leader and a full ISR; when
it gives up it records ``recover-timeout`` with the partitions still without a leader
(``leaderless``) and those led but short of in-sync replicas (``under_replicated``). A partition is
*never recovered* when it was either at that timeout, or leaderless in the history's last topology
sample (the cluster as the run left it), unless the scenario expects it by name
(``expect_unrecovered``: "topic-N", e.g. a partition whose every replica it removed for good).

A reader *never caught up* when, as it closed at the end of the drain, it had not read a partition to
the last record the final log read found there. The drain waits ``drain_timeout_s`` for every reader
after the heal and the recovery, so a reader still behind then is stuck, not slow: librdkafka#5586
(a consumer that assign()s its partitions never starts fetching after one NOT_COORDINATOR) is one.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from failsafe.history.model import History
from failsafe.history.ops import Family, Op

SCHEMA = {"partition": pl.String, "seen": pl.String, "time_ns": pl.Int64}
# A recover-timeout recorded before the op named its partitions: which one did not recover is unknown.
UNNAMED = "?"


def never_recovered(history: History, expected: Sequence[str] | None = None) -> pl.DataFrame:
    """One row per unrecovered partition ("topic-N"): how it was seen and when, first sighting first."""
    timeouts = history.events.filter(pl.col("f") == Op.RECOVER_TIMEOUT)
    found = []
    for column, seen in (
        ("leaderless", "no leader at the recover timeout"),
        ("under_replicated", "ISR not full at the recover timeout"),
    ):
        named = timeouts.select("time_ns", column).explode(column).drop_nulls(column)
        found.append(
            named.select(pl.col(column).alias("partition"), pl.lit(seen).alias("seen"), "time_ns").cast(SCHEMA)
        )
    # A timeout that names no partition (recorded before it named them, or with no topology sample to name them from).
    unnamed = timeouts.filter(
        pl.col("leaderless").list.len().fill_null(0) + pl.col("under_replicated").list.len().fill_null(0) == 0
    )
    found.append(
        unnamed.select(pl.lit(UNNAMED).alias("partition"), pl.lit("recover timeout").alias("seen"), "time_ns").cast(
            SCHEMA
        )
    )
    topology = history.topology
    if topology.height:
        last = topology.filter(pl.col("time_ns") == pl.col("time_ns").max())
        leaderless = last.filter(pl.col("leader").is_null() | (pl.col("leader") < 0))
        found.append(
            leaderless.select(
                pl.format("{}-{}", "topic", "partition").alias("partition"),
                pl.lit("no leader in the last topology sample").alias("seen"),
                "time_ns",
            ).cast(SCHEMA)
        )
    # Ties on time broken by how it was seen, so the same history always names the same sighting.
    rows = (
        pl.concat(found)
        .sort("time_ns", "seen", "partition")
        .unique(subset=["partition"], keep="first", maintain_order=True)
    )
    return rows.filter(~pl.col("partition").is_in(list(expected or [])))


CAUGHT_UP_SCHEMA = {
    "reader": pl.String,
    "processes": pl.List(pl.String),
    "topic": pl.String,
    "partition": pl.Int64,
    "read_upto": pl.Int64,
    "last_offset": pl.Int64,
    "unread": pl.UInt32,
    "time_ns": pl.Int64,
}


def never_caught_up(history: History) -> pl.DataFrame:
    """One row per reader and partition it never read to the end of the log: the reader's last record read there
    (``read_upto``, null: none) short of the last record the final log read found (``last_offset``).

    A reader is a consumer group (its members together) or a consumer that assigns its partitions itself (by process).
    It reads every partition of each topic it was ever assigned a partition of: a partition of such a topic that it
    was never given counts too. Readers whose every process a client fault stopped on purpose are left out (their
    partitions have nobody to read them by design), and partitions the final log read found nothing in (empty, or no
    leader to read from) say nothing. ``time_ns`` is when the reader's last process closed: the drain gave up then.
    """
    assigns = history.membership.filter(pl.col("f") == Op.ASSIGN).with_columns(
        pl.coalesce("group", "process").alias("reader")
    )
    if assigns.height == 0 or history.log.height == 0:
        return pl.DataFrame(schema=CAUGHT_UP_SCHEMA)
    stopped = _stopped_on_purpose(history)
    readers = assigns.group_by("reader").agg(pl.col("process").unique().sort().alias("processes"))
    readers = readers.filter(~pl.col("processes").list.eval(pl.element().is_in(stopped)).list.all())
    topics = assigns.select("reader", "topic").unique().join(readers.select("reader"), on="reader", how="semi")
    ends = history.log.group_by("topic", "partition").agg(pl.col("offset").max().alias("last_offset"))
    read = (
        history.reads.with_columns(pl.coalesce("group", "process").alias("reader"))
        .group_by("reader", "topic", "partition")
        .agg(pl.col("offset").max().alias("read_upto"))
    )
    behind = (
        topics.join(ends, on="topic", how="inner")
        .join(read, on=["reader", "topic", "partition"], how="left")
        .filter(pl.col("read_upto").is_null() | (pl.col("read_upto") < pl.col("last_offset")))
    )
    # How many records of the log the reader never got to: those past the last it read.
    unread = (
        behind.select("reader", "topic", "partition", "read_upto")
        .join(history.log.select("topic", "partition", "offset"), on=["topic", "partition"])
        .filter(pl.col("read_upto").is_null() | (pl.col("offset") > pl.col("read_upto")))
        .group_by("reader", "topic", "partition")
        .agg(pl.len().alias("unread"))
    )
    closed = history.client_events.group_by("process").agg(pl.col("time_ns").max())
    last_close = (
        readers.explode("processes")
        .join(closed, left_on="processes", right_on="process", how="left")
        .group_by("reader")
        .agg(pl.col("time_ns").max())
    )
    out = (
        behind.join(unread, on=["reader", "topic", "partition"], how="left")
        .join(readers, on="reader")
        .join(last_close, on="reader", how="left")
    )
    return out.select(list(CAUGHT_UP_SCHEMA)).cast(CAUGHT_UP_SCHEMA).sort("reader", "topic", "partition")


def _stopped_on_purpose(history: History) -> list[str]:
    """Processes a client fault (a consumer killed or closed by the schedule) stopped."""
    client_faults = history.faults.filter(pl.col("family") == Family.CLIENT)
    return client_faults.select(pl.col("nodes").explode()).drop_nulls().to_series().unique().to_list()
