"""Liveness: a partition that never recovered after the heal.

The engine's recover phase waits for every sampled partition to have a leader and a full ISR; when
it gives up it records ``recover-timeout`` with the partitions still without a leader
(``leaderless``) and those led but short of in-sync replicas (``under_replicated``). A partition is
*never recovered* when it was either at that timeout, or leaderless in the history's last topology
sample (the cluster as the run left it), unless the scenario expects it by name
(``expect_unrecovered``: "topic-N", e.g. a partition whose every replica it removed for good).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from failsafe.history.model import History
from failsafe.history.ops import Op

SCHEMA = {"partition": pl.String, "seen": pl.String, "time_ns": pl.Int64}
# A recover-timeout recorded before the op named its partitions: which one did not recover is unknown.
UNNAMED = "?"


def never_recovered(history: History, expected: Sequence[str] | None = None) -> pl.DataFrame:
    """One row per unrecovered partition ("topic-N"): how it was seen and when, first sighting first."""
    timeouts = history.events.filter(pl.col("f") == Op.RECOVER_TIMEOUT)
    found = []
    for column, seen in (("leaderless", "no leader at the recover timeout"), ("under_replicated", "ISR not full at the recover timeout")):
        named = timeouts.select("time_ns", column).explode(column).drop_nulls(column)
        found.append(named.select(pl.col(column).alias("partition"), pl.lit(seen).alias("seen"), "time_ns").cast(SCHEMA))
    # A timeout that names no partition (recorded before it named them, or with no topology sample to name them from).
    unnamed = timeouts.filter(pl.col("leaderless").list.len().fill_null(0) + pl.col("under_replicated").list.len().fill_null(0) == 0)
    found.append(unnamed.select(pl.lit(UNNAMED).alias("partition"), pl.lit("recover timeout").alias("seen"), "time_ns").cast(SCHEMA))
    topology = history.topology
    if topology.height:
        last = topology.filter(pl.col("time_ns") == pl.col("time_ns").max())
        leaderless = last.filter(pl.col("leader").is_null() | (pl.col("leader") < 0))
        found.append(leaderless.select(pl.format("{}-{}", "topic", "partition").alias("partition"),
                                       pl.lit("no leader in the last topology sample").alias("seen"), "time_ns").cast(SCHEMA))
    rows = pl.concat(found).sort("time_ns").unique(subset=["partition"], keep="first", maintain_order=True)
    return rows.filter(~pl.col("partition").is_in(list(expected or [])))
