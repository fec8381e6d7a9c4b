"""Semantics: each group sees every acknowledged write, each record goes to one member at a time.

Redelivery to another member after a rebalance is what at-least-once means (the new owner starts
from the last committed offset), so it is counted but tolerated; a record delivered to two
members with no rebalance of that partition in between (an assign or revoke of it by a member of
the group) means two members owned one partition at once.

A record delivered to a member after the group gave its partition to another, when that member's next event of the
partition is its own report that it lost it (a revoke with ``lost``: the coordinator had expelled or fenced it), no
later than one session after the read, is a ``stale-delivery``: the member handed out what it had fetched before it
learned it was expelled. It is a violation of its own (never VALID): a scenario that tolerates it declares it known,
citing the clients' documentation (librdkafka's ``rd_kafka_assignment_lost``: "Partitions that have been lost may
already be owned by other members in the group"; docs/share-groups.md has the runs behind it). A member that never
says it lost the partition, or says so later than a session after, stays a ``double-delivery``.

The groups judged are every consumer group the scenario declared (checkers/clients.py) and every
group seen in the history: a declared group that never read misses every write. Times of clients on
other clocks than failsafe's are compared with the sum of their clocks' bounds (evidence.clock_bounds):
a rebalance certainly between the two reads excuses a double delivery, one certainly outside does
not, and one within the bounds of either read leaves that double delivery undecided (UNKNOWN).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import (
    UNKNOWN,
    CheckerResult,
    Side,
    Validity,
    examples,
    read_options,
    result,
    unread_writes,
)
from failsafe.checkers.evidence import allowed_loss, bound_ns, clock_bounds, lossy_writers
from failsafe.checkers.group_protocol import DEFAULT_SESSION_MS, group_sessions_ms
from failsafe.checkers.keys import IDENTITY, distinct, having_keys, key
from failsafe.history.model import History
from failsafe.history.ops import Op, OpType, Role

# No options: the groups judged are those declared and seen; the writers that may lose, those the history says may.
DEFAULTS: dict[str, Any] = {}
VIOLATIONS = {"double-delivery": Side.CONSUMERS, "stale-delivery": Side.CONSUMERS, "missing": Side.PRODUCERS}
_MS = 1_000_000
_POSITION = ["group", "topic", "partition", "offset"]


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    read_options(options, DEFAULTS, "semantics")
    group_reads = history.reads.filter(pl.col("group").is_not_null())
    groups = _groups(history)

    handovers = _stale(_handovers(group_reads, history.membership, clock_bounds(history)), history)
    stale = handovers.filter(pl.col("stale"))
    handovers = handovers.filter(~pl.col("stale"))
    double = handovers.filter(pl.col("rebalance_between").eq_missing(False))
    tolerated = handovers.filter(pl.col("rebalance_between").eq_missing(True))
    undecided = handovers.filter(pl.col("rebalance_between").is_null())
    double_positions = double.select(_POSITION).unique()
    tolerated_positions = (
        tolerated.select(_POSITION).unique().join(double_positions, on=_POSITION, how="anti", nulls_equal=True)
    )
    undecided_positions = (
        undecided.select(_POSITION)
        .unique()
        .join(double_positions, on=_POSITION, how="anti", nulls_equal=True)
        .join(tolerated_positions, on=_POSITION, how="anti", nulls_equal=True)
    )
    stale_positions = (
        stale.select(_POSITION).unique().join(double_positions, on=_POSITION, how="anti", nulls_equal=True)
    )

    lossy = lossy_writers(history)
    declared_topics = {
        row["group"]: row["topics"] or []
        for row in history.declared.filter(pl.col("role") == Role.CONSUMER).to_dicts()
        if row["group"]
    }
    missing_allowed = 0
    missing_by_group: dict[str, int] = {}
    missing_examples: list[dict[str, Any]] = []
    acked = history.sends.select("id", "process", "topic", "partition", "offset", "value", "outcome")
    acked = acked.filter((pl.col("outcome") == OpType.OK) & pl.col("value").is_not_null()).with_columns(key(IDENTITY))
    for group in groups:
        reads = group_reads.filter(pl.col("group") == group)
        topics = (
            pl.concat(
                [
                    reads["topic"].unique(),
                    history.membership.filter(pl.col("group") == group)["topic"],
                    pl.Series("topic", declared_topics.get(group, []), dtype=pl.String),
                ]
            )
            .unique()
            .to_frame()
        )
        expected = acked.filter(pl.col("topic").is_in(topics["topic"].implode())) if topics.height else acked
        missing = unread_writes(expected, reads)
        missing_by_group[group] = missing.height
        missing_allowed += missing.filter(allowed_loss(lossy)).height
        if len(missing_examples) < 5:
            missing_examples += examples(
                missing.with_columns(pl.lit(group).alias("group")),
                "group",
                "id",
                "process",
                "topic",
                "partition",
                "offset",
                "value",
            )

    n_missing = sum(missing_by_group.values())
    counts = {
        "groups": len(groups),
        "double-delivery": double_positions.height,
        "stale-delivery": stale_positions.height,
        "redelivered-across-rebalance": tolerated_positions.height,
        "double-delivery-undecided": undecided_positions.height,
        "missing": n_missing,
        "missing-allowed": missing_allowed,
    }
    example_columns = (*_POSITION, "previous_process", "process", "previous_ns", "time_ns")
    example_rows = {
        # Ties broken by place and member: which examples are shown must not change from one check to the next.
        "double-delivery": examples(double.sort("time_ns", *_POSITION, "process"), *example_columns),
        "stale-delivery": examples(stale.sort("time_ns", *_POSITION, "process"), *example_columns, "lost_ns"),
        "redelivered-across-rebalance": examples(tolerated.sort("time_ns", *_POSITION, "process"), *example_columns),
        "double-delivery-undecided": examples(undecided.sort("time_ns", *_POSITION, "process"), *example_columns),
        "missing": missing_examples[:5],
    }
    violations = [
        name
        for name, bad in (
            ("double-delivery", double_positions.height),
            ("stale-delivery", stale_positions.height),
            ("missing", n_missing > missing_allowed),
        )
        if bad
    ]
    valid: Validity = False if violations else UNKNOWN if undecided_positions.height else True
    # The members that showed a stale delivery: a known entry's condition is checked against them (scenarios/known.py).
    processes = {"stale-delivery": sorted(set(stale["process"].to_list()))} if stale.height else {}
    return result(
        valid, counts, example_rows, violations, groups=groups, missing_by_group=missing_by_group, processes=processes
    )


def _groups(history: History) -> list[str]:
    """Every consumer group the scenario declared, and every group seen reading or rebalancing."""
    declared = history.declared.filter(pl.col("role").is_in([Role.CONSUMER])).select("group")
    seen = (
        pl.concat([history.reads.select("group"), history.membership.select("group"), declared]).drop_nulls().unique()
    )
    return sorted(seen["group"].to_list())


def _handovers(
    group_reads: pl.DataFrame, membership: pl.DataFrame, bounds: dict[str, int] | None = None
) -> pl.DataFrame:
    """Each time a record reached another member of its group than the last one that had it.

    rebalance_between: true when a member of the group was assigned or revoked that record's partition certainly between
    the previous member's last read of the record and this member's; false when no such event lies within those reads
    widened by the clocks' bounds; null (undecided) when one lies only within the widening. Two times of one clock need
    no bound; of two clocks, the sum of their bounds (evidence.clock_bounds).
    """
    bounds = bounds or {}
    keyed = group_reads.select(key(_POSITION, "gp"), key([*_POSITION, "process"], "gpp"))
    # As many distinct (position, member) pairs as positions: no position reached two members.
    if distinct(keyed, "gp") == distinct(keyed, "gpp"):
        return _empty_handovers()
    suspects = keyed.unique(subset="gpp").filter(pl.col("gp").is_duplicated())["gp"].unique()
    reread = having_keys(group_reads, _POSITION, suspects)
    # Every read of the record in time order (two at the same nanosecond in name order, the same at every check): each
    # change of member is a handover, from the previous member's last read before it (A, B, then A again is two
    # handovers).
    reads = reread.select(*_POSITION, "process", "time_ns").unique().sort("time_ns", "process")
    reads = reads.filter(pl.col("process").n_unique().over(_POSITION) > 1)
    pairs = reads.with_columns(
        pl.col("process").shift(1).over(_POSITION, order_by=["time_ns", "process"]).alias("previous_process"),
        pl.col("time_ns").shift(1).over(_POSITION, order_by=["time_ns", "process"]).alias("previous_ns"),
    ).filter(pl.col("previous_process").is_not_null() & (pl.col("previous_process") != pl.col("process")))
    if pairs.height == 0:
        return _empty_handovers()
    events = (
        membership.filter(pl.col("group").is_not_null())
        .select(
            "group", "topic", "partition", pl.col("process").alias("event_process"), pl.col("time_ns").alias("event_ns")
        )
        .unique()
    )
    pairs = pairs.with_row_index("_pair")
    joined = pairs.join(events, on=["group", "topic", "partition"], how="left").with_columns(
        (bound_ns("previous_process", bounds) + bound_ns("event_process", bounds)).alias("_before_ns"),
        (bound_ns("process", bounds) + bound_ns("event_process", bounds)).alias("_after_ns"),
    )
    event = pl.col("event_ns")
    certain = (event - pl.col("_before_ns") >= pl.col("previous_ns")) & (
        event + pl.col("_after_ns") <= pl.col("time_ns")
    )
    possible = (event + pl.col("_before_ns") >= pl.col("previous_ns")) & (
        event - pl.col("_after_ns") <= pl.col("time_ns")
    )
    decided = joined.group_by("_pair").agg(
        certain.fill_null(False).any().alias("_certain"), possible.fill_null(False).any().alias("_possible")
    )
    pairs = pairs.join(decided, on="_pair", how="left").sort("_pair")
    between = pl.when(pl.col("_certain")).then(True).when(pl.col("_possible")).then(None).otherwise(False)
    return pairs.with_columns(between.cast(pl.Boolean).alias("rebalance_between")).drop(
        "_pair", "_certain", "_possible"
    )


def _stale(handovers: pl.DataFrame, history: History) -> pl.DataFrame:
    """``stale`` (and ``lost_ns``) on each handover not certainly across a rebalance: true when the reading member's
    next assign or revoke of that partition after the read is its own revoke with ``lost``, within one session of the
    read."""
    suspect = handovers.filter(~pl.col("rebalance_between").eq_missing(True)).with_row_index("_h")
    events = history.membership.filter(pl.col("group").is_not_null()).select(
        "group",
        "topic",
        "partition",
        "process",
        pl.col("time_ns").alias("event_ns"),
        pl.col("f").alias("event_f"),
        pl.col("lost").fill_null(False).alias("event_lost"),
    )
    sessions = group_sessions_ms(history)
    session_ns = pl.col("group").replace_strict(sessions, default=DEFAULT_SESSION_MS, return_dtype=pl.Float64) * _MS
    # Ties at one nanosecond: the read came first (the woken member's poll, then its callback, in one thread).
    following = (
        suspect.join(events, on=["group", "topic", "partition", "process"], how="inner")
        .filter(pl.col("event_ns") >= pl.col("time_ns"))
        .sort("event_ns")
        .group_by("_h")
        .first()
    )
    stale_rows = following.filter(
        (pl.col("event_f") == Op.REVOKE) & pl.col("event_lost") & (pl.col("event_ns") - pl.col("time_ns") <= session_ns)
    ).select("_h", pl.col("event_ns").alias("lost_ns"))
    marked = (
        suspect.join(stale_rows, on="_h", how="left")
        .with_columns(pl.col("lost_ns").is_not_null().alias("stale"))
        .drop("_h")
    )
    settled = handovers.filter(pl.col("rebalance_between").eq_missing(True)).with_columns(
        pl.lit(None, pl.Int64).alias("lost_ns"), pl.lit(False).alias("stale")
    )
    return (
        pl.concat([settled, marked.select(settled.columns)])
        if handovers.height
        else handovers.with_columns(pl.lit(None, pl.Int64).alias("lost_ns"), pl.lit(False).alias("stale"))
    )


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
