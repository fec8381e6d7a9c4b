"""Semantics: each group sees every acknowledged write, each record goes to one member at a time.

Redelivery to another member after a rebalance is what at-least-once means (the new owner starts
from the last committed offset), so it is counted but tolerated; a record delivered to two
members with no rebalance in between means two members owned one partition at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import (
    CheckerResult,
    Side,
    allowed_loss,
    clock_uncertainty_ns,
    durable_writers,
    examples,
    read_options,
    result,
    unread_writes,
)
from failsafe.checkers.keys import IDENTITY, distinct, having_keys, key
from failsafe.history.model import History
from failsafe.history.ops import OpType

# lossy_writers: as the delivery checker's (writers that promise no durability); their writes a group missed are counted only.
DEFAULTS: dict[str, Any] = {"groups": None, "lossy_writers": None}
VIOLATIONS = {"double-delivery": Side.CONSUMERS, "missing": Side.PRODUCERS}
_POSITION = ["group", "topic", "partition", "offset"]


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "semantics")
    group_reads = history.reads.filter(pl.col("group").is_not_null())
    groups = _groups(history, opts["groups"])
    if opts["groups"] is not None:
        group_reads = group_reads.filter(pl.col("group").is_in(groups))

    handovers = _handovers(group_reads, history.membership, clock_uncertainty_ns(history))
    double = handovers.filter(~pl.col("rebalance_between"))
    tolerated = handovers.filter(pl.col("rebalance_between"))
    double_positions = double.select(_POSITION).unique()
    tolerated_positions = tolerated.select(_POSITION).unique().join(double_positions, on=_POSITION, how="anti", nulls_equal=True)

    durable = durable_writers(history)
    missing_allowed = 0
    missing_by_group: dict[str, int] = {}
    missing_examples: list[dict[str, Any]] = []
    acked = history.sends.select("id", "process", "topic", "partition", "offset", "value", "outcome")
    acked = acked.filter((pl.col("outcome") == OpType.OK) & pl.col("value").is_not_null()).with_columns(key(IDENTITY))
    for group in groups:
        reads = group_reads.filter(pl.col("group") == group)
        topics = pl.concat([reads["topic"].unique(), history.membership.filter(pl.col("group") == group)["topic"]]).unique().to_frame()
        expected = acked.filter(pl.col("topic").is_in(topics["topic"].implode())) if topics.height else acked
        missing = unread_writes(expected, reads)
        missing_by_group[group] = missing.height
        missing_allowed += missing.filter(allowed_loss(missing, opts["lossy_writers"], durable)).height
        if len(missing_examples) < 5:
            missing_examples += examples(missing.with_columns(pl.lit(group).alias("group")), "group", "id", "process", "topic", "partition", "offset", "value")

    n_missing = sum(missing_by_group.values())
    counts = {
        "groups": len(groups),
        "double-delivery": double_positions.height,
        "redelivered-across-rebalance": tolerated_positions.height,
        "missing": n_missing,
        "missing-allowed": missing_allowed,
    }
    example_columns = (*_POSITION, "previous_process", "process", "previous_ns", "time_ns")
    example_rows = {
        # Ties broken by place and member: which examples are shown must not change from one check to the next.
        "double-delivery": examples(double.sort("time_ns", *_POSITION, "process"), *example_columns),
        "redelivered-across-rebalance": examples(tolerated.sort("time_ns", *_POSITION, "process"), *example_columns),
        "missing": missing_examples[:5],
    }
    violations = [name for name, bad in (("double-delivery", double_positions.height), ("missing", n_missing > missing_allowed)) if bad]
    return result(not violations, counts, example_rows, violations, groups=groups, missing_by_group=missing_by_group)


def _groups(history: History, wanted: list[str] | None) -> list[str]:
    if wanted is not None:
        return list(wanted)
    seen = pl.concat([history.reads.select("group"), history.membership.select("group")]).drop_nulls().unique()
    return sorted(seen["group"].to_list())


def _handovers(group_reads: pl.DataFrame, membership: pl.DataFrame, uncertainty_ns: int = 0) -> pl.DataFrame:
    """Each time a record reached another member of its group than the last one that had it.

    rebalance_between: some member of the group was assigned or revoked partitions between
    the previous member's first read of the record and this member's, that window widened by
    ``uncertainty_ns`` each way when clients read different clocks (common.clock_uncertainty_ns).
    """
    keyed = group_reads.select(key(_POSITION, "gp"), key([*_POSITION, "process"], "gpp"))
    # As many distinct (position, member) pairs as positions: no position reached two members.
    if distinct(keyed, "gp") == distinct(keyed, "gpp"):
        return _empty_handovers()
    suspects = keyed.unique(subset="gpp").filter(pl.col("gp").is_duplicated())["gp"].unique()
    reread = having_keys(group_reads, _POSITION, suspects)
    # Two members reading a record at the same nanosecond are taken in name order, the same at every check.
    firsts = reread.group_by([*_POSITION, "process"]).agg(pl.col("time_ns").min()).sort("time_ns", "process")
    firsts = firsts.filter(pl.col("process").n_unique().over(_POSITION) > 1)
    pairs = firsts.with_columns(
        pl.col("process").shift(1).over(_POSITION, order_by=["time_ns", "process"]).alias("previous_process"),
        pl.col("time_ns").shift(1).over(_POSITION, order_by=["time_ns", "process"]).alias("previous_ns"),
    ).filter(pl.col("previous_process").is_not_null())
    if pairs.height == 0:
        return _empty_handovers()
    events = membership.filter(pl.col("group").is_not_null()).select("group", pl.col("time_ns").alias("event_ns")).unique().sort("event_ns")
    pairs = pairs.with_columns((pl.col("time_ns") + uncertainty_ns).alias("_until_ns")).sort("_until_ns")
    pairs = pairs.join_asof(events, left_on="_until_ns", right_on="event_ns", by="group", strategy="backward", check_sortedness=False)
    between = pl.col("event_ns").is_not_null() & (pl.col("event_ns") >= pl.col("previous_ns") - uncertainty_ns)
    return pairs.with_columns(between.alias("rebalance_between")).drop("_until_ns")


def _empty_handovers() -> pl.DataFrame:
    schema = {
        "group": pl.String,
        "topic": pl.String,
        "partition": pl.Int64,
        "offset": pl.Int64,
        "process": pl.String,
        "time_ns": pl.Int64,
        "previous_process": pl.String,
        "previous_ns": pl.Int64,
        "rebalance_between": pl.Boolean,
    }
    return pl.DataFrame(schema=schema)
