"""Availability: how long each partition led by a faulted node could not take writes.

Measured, not judged, unless the scenario says what to expect (max_unavailable_ms,
expect_no_rebalance). Windows come from the producer's own acknowledgements (the last before the
fault, the first after it) and leadership from the topology samples.

Beyond the led partitions, every partition's write stall during each fault is measured and
grouped by the faulted node's replica role (led, follower, unreplicated; ``all`` for controller
and quorum faults): ``stall_by_group``, per fault ``stalls``, and ``baseline_gap_ms`` (the normal
pace of acknowledgements before the first fault). The rules are in checkers/measure/stalls.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

import failsafe.checkers.measure.stalls as write_stalls
from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, end_ns, examples, ns_to_ms, read_options, result
from failsafe.checkers.evidence import bound_ns, clock_bounds
from failsafe.checkers.liveness import never_caught_up, never_recovered
from failsafe.history.model import History
from failsafe.history.ops import NODE_TARGETS, OpType, PhaseName, Target

# expect_unrecovered: partitions ("topic-N") the scenario expects to stay unavailable after the heal.
DEFAULTS: dict[str, Any] = {"expect_no_rebalance": False, "max_unavailable_ms": None, "expect_unrecovered": None}
VIOLATIONS = {
    "slow-failover": Side.PRODUCERS,
    "rebalance-during-fault": Side.CONSUMERS,
    "never-recovered": Side.CLUSTER,
    "never-caught-up": Side.CONSUMERS,
}
# A network fault acts on the nodes of its first side: the partitions they lead are its affected ones.
BROKER_TARGETS = list(NODE_TARGETS)
# Kafka's system tests give the group this long after a broker comes back before a rebalance
# stops counting as caused by the fault.
REBALANCE_GRACE_NS = 10_000_000_000
_FP = ["fault_id", "topic", "partition"]
# Windows are measured per producer, then the worst is the partition's: an acks=1 producer acknowledged by a
# leader cut off from its followers must not hide that an acks=all producer could not write there at all.
_FPP = [*_FP, "process"]


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "availability")
    faults = history.faults.filter(pl.col("target").is_in(BROKER_TARGETS))
    topology = history.topology
    acked = acknowledged(history.sends)
    partitions = failover_windows(history)
    # Times of clients on hosts are compared with failsafe's (the fault's) by more than their clock's bound
    # (evidence.clock_bounds): what is within the bound is undecided, never an excuse.
    bounds = clock_bounds(history)
    rebalances = _rebalances_during(
        faults, history
    )  # reported as measured; judged by more than each consumer's clock bound
    judged_rebalances = _rebalances_during(faults, history, bounds, certain=True)
    possible_rebalances = _rebalances_during(faults, history, bounds, certain=False)

    limit_ms = opts["max_unavailable_ms"]
    writers_bound_ms = (
        max((bounds.get(p, 0) for p in history.sends["process"].drop_nulls().unique().to_list()), default=0) / 1e6
    )
    measured = partitions.filter(pl.col("last_ok_before_ns").is_not_null() | pl.col("first_ok_after_ns").is_not_null())
    never_again = measured.filter(pl.col("first_ok_after_ns").is_null())
    limit = limit_ms if limit_ms is not None else float("inf")
    too_slow = measured.filter(
        pl.col("first_ok_after_ns").is_null() | (pl.col("unavailable_ms") - writers_bound_ms > limit)
    )
    maybe_slow = measured.filter(pl.col("unavailable_ms") > limit).join(too_slow, on=_FP, how="anti")
    if limit_ms is None:
        too_slow, maybe_slow = too_slow.head(0), maybe_slow.head(0)
    rebalancing_faults = judged_rebalances.filter(pl.col("rebalances_during") > 0)
    again, maybe_again = (_written_to_again(never_again, history.sends, bounds, certain) for certain in (True, False))
    unrecovered = _unrecovered(history, again, opts["expect_unrecovered"])
    undecided = {
        "slow-failover": maybe_slow.height,
        "rebalance-during-fault": int(
            opts["expect_no_rebalance"]
            and not rebalancing_faults.height
            and possible_rebalances["rebalances_during"].sum() > 0
        ),
        "never-recovered": maybe_again.join(again, on=_FP, how="anti")
        .filter(~pl.format("{}-{}", "topic", "partition").is_in(list(opts["expect_unrecovered"] or [])))
        .height,
    }
    stuck = never_caught_up(history)

    end_state = _end_state(topology)
    counts = {
        "faults": faults.height,
        "affected-partitions": partitions.height,
        "never-available-again": never_again.height,
        "rebalances-during-faults": int(rebalances["rebalances_during"].sum()),
        "slow-failover": too_slow.height,
        "leaderless-at-end": end_state["leaderless_at_end"],
        "never-recovered": unrecovered.height,
        "never-caught-up": stuck.height,
        **{f"{name}-undecided": n for name, n in undecided.items()},
    }
    example_rows = {
        "never-available-again": examples(never_again, "fault_id", "topic", "partition", "last_ok_before_ns"),
        "slow-failover": examples(too_slow, "fault_id", "topic", "partition", "unavailable_ms"),
        "rebalance-during-fault": examples(rebalancing_faults, "fault_id", "rebalances_during"),
        "never-recovered": examples(unrecovered),
        "never-caught-up": examples(
            stuck.with_columns(pl.col("processes").list.first().alias("process")),
            "reader",
            "process",
            "topic",
            "partition",
            "read_upto",
            "last_offset",
            "unread",
            "time_ns",
        ),
    }
    rebalanced = opts["expect_no_rebalance"] and rebalancing_faults.height
    violations = [
        name
        for name, bad in (
            ("slow-failover", too_slow.height),
            ("rebalance-during-fault", rebalanced),
            ("never-recovered", unrecovered.height),
            ("never-caught-up", stuck.height),
        )
        if bad
    ]
    if faults.height and (topology.height == 0 or acked.height == 0) and not (unrecovered.height or stuck.height):
        valid: bool | str = UNKNOWN
        violations = []
    else:
        valid = False if violations else UNKNOWN if any(undecided.values()) else True
    unavailable = partitions["unavailable_ms"].drop_nulls()
    new_leader = partitions["new_leader_ms"].drop_nulls()
    stalls = write_stalls.measure(faults, topology, acked, history.faults["start_ns"].min(), end_ns(history))
    return result(
        valid,
        counts,
        example_rows,
        violations,
        faults=_per_fault(faults, partitions, rebalances, stalls.by_fault),
        max_unavailable_ms=_float(unavailable.max()),
        median_unavailable_ms=_float(unavailable.median()),
        median_new_leader_ms=_float(new_leader.median()),
        max_sample_gap_ms=_max_gap_ms(topology),
        stall_by_group=stalls.by_group,
        baseline_gap_ms=stalls.baseline_gap_ms,
        # Whose behaviour each client-side violation is: a known anomaly is matched against these clients only.
        processes={"never-caught-up": sorted({p for ps in stuck["processes"].to_list() for p in ps})}
        if stuck.height
        else {},
        **end_state,
    )


def acknowledged(sends: pl.DataFrame) -> pl.DataFrame:
    """The acknowledged sends (process, topic, partition, offset, outcome, invoke_ns, complete_ns).

    An acks=0 "ok" (offset null) is not an acknowledgement: the client never heard from a leader, so it says nothing
    about when the partition was available.
    """
    return sends.select("process", "topic", "partition", "offset", "outcome", "invoke_ns", "complete_ns").filter(
        (pl.col("outcome") == OpType.OK)
        & pl.col("complete_ns").is_not_null()
        & pl.col("partition").is_not_null()
        & pl.col("offset").is_not_null()
    )


def failover_windows(history: History) -> pl.DataFrame:
    """One row per (node fault, partition a faulted node led at its start): what ``faults[].affected_partitions``
    reports.

    Columns: fault_id, topic, partition, start_ns, in_force_ns, node_ids, leader_before, isr_before (the affected
    partition), last_ok_before_ns, first_ok_after_ns, unavailable_ms (its window, see _windows), new_leader,
    new_leader_ns, new_leader_ms, new_leader_in_isr, isr_shrank_ns, isr_shrank, isr_shrank_ms (see _leadership).
    """
    faults = history.faults.filter(pl.col("target").is_in(BROKER_TARGETS))
    partitions = _windows(_affected_partitions(faults, history.topology), acknowledged(history.sends))
    return _leadership(partitions, history.topology)


def _written_to_again(
    never_again: pl.DataFrame, sends: pl.DataFrame, bounds: dict[str, int] | None = None, certain: bool = True
) -> pl.DataFrame:
    """The partitions never available again to which some producer did send once the fault was in force (certainly: by
    more than the producer's clock bound, for one on a host; or, not ``certain``, possibly: within it): a partition no
    send tried again (a sparse or stopped writer) says nothing about whether it would have taken one."""
    tried = sends.select("process", "topic", "partition", "invoke_ns").drop_nulls()
    pairs = never_again.select("fault_id", "topic", "partition", "in_force_ns").join(
        tried, on=["topic", "partition"], how="inner"
    )
    bound = bound_ns("process", bounds or {})
    after = (
        (pl.col("invoke_ns") - bound >= pl.col("in_force_ns"))
        if certain
        else (pl.col("invoke_ns") + bound >= pl.col("in_force_ns"))
    )
    again = pairs.filter(after).select("fault_id", "topic", "partition").unique()
    return never_again.join(again, on=["fault_id", "topic", "partition"], how="semi")


def _unrecovered(history: History, never_again: pl.DataFrame, expected: list[str] | None) -> pl.DataFrame:
    """Partitions that never recovered (checkers/liveness.py), and those no producer could write to again after a fault
    although it wrote there before: never available again."""
    stuck = never_again.select(
        pl.format("{}-{}", "topic", "partition").alias("partition"),
        pl.lit("no write acknowledged after the fault").alias("seen"),
        pl.col("last_ok_before_ns").alias("time_ns"),
    )
    stuck = stuck.filter(~pl.col("partition").is_in(list(expected or [])))
    seen = never_recovered(history, expected)
    found = pl.concat([seen, stuck.cast(seen.schema)])
    return found.unique(subset=["partition"], keep="first", maintain_order=True).sort("partition")


def _affected_partitions(faults: pl.DataFrame, topology: pl.DataFrame) -> pl.DataFrame:
    """(fault, partition) pairs: led by a faulted node in the last sample before the fault starts.

    Without a sample before the fault, the first sample stands in for it.
    """
    sample_times = topology.select(pl.col("time_ns").unique().sort().alias("sample_ns"))
    if faults.height == 0 or sample_times.height == 0:
        return _empty_partitions()
    starts = faults.select(
        "fault_id",
        "target",
        "start_ns",
        pl.coalesce("in_force_ns", "start_ns").alias("in_force_ns"),
        pl.col("nodes").list.eval(pl.element().cast(pl.Int64, strict=False)).alias("node_ids"),
    )
    starts = starts.sort("start_ns").join_asof(
        sample_times, left_on="start_ns", right_on="sample_ns", strategy="backward"
    )
    starts = starts.with_columns(pl.col("sample_ns").fill_null(sample_times["sample_ns"].min()))
    before = topology.rename({"time_ns": "sample_ns", "leader": "leader_before", "isr": "isr_before"}).drop("replicas")
    pairs = starts.join(before, on="sample_ns", how="inner")
    affected = pairs.filter((pl.col("target") == "quorum") | pl.col("node_ids").list.contains(pl.col("leader_before")))
    return affected.select(*_FP, "start_ns", "in_force_ns", "node_ids", "leader_before", "isr_before").sort(_FP)


def _empty_partitions() -> pl.DataFrame:
    schema = {
        "fault_id": pl.Int64,
        "topic": pl.String,
        "partition": pl.Int64,
        "start_ns": pl.Int64,
        "in_force_ns": pl.Int64,
        "node_ids": pl.List(pl.Int64),
        "leader_before": pl.Int64,
        "isr_before": pl.List(pl.Int64),
    }
    return pl.DataFrame(schema=schema)


def _windows(partitions: pl.DataFrame, acked: pl.DataFrame) -> pl.DataFrame:
    """Each affected partition's window: the longest stretch without an acknowledgement between the last one at or
    before the fault's start and the first one of a send made after the fault was in force (``last_ok_before_ns`` /
    ``first_ok_after_ns`` are its edges).

    Acknowledgements of sends made before the fault mean nothing about whether the partition took
    new writes, and they come at either end: a SIGSTOPped broker's answers already in its socket
    arrive just after the fault began, and sends retried to a new leader are acknowledged just
    before the first new one; and a send made while the fault was being applied (an nft process
    installing its rules takes milliseconds) may go through before it bites. So the window ends at the
    first acknowledgement of a send made after the fault was in force (``in_force_ns``, recorded with
    its start), and is the longest gap up to it. Without one, the window runs from the
    partition's last acknowledgement and never ends (``first_ok_after_ns`` null).
    """
    acks = acked.join(partitions.select("topic", "partition").unique(), on=["topic", "partition"], how="semi")
    pairs = partitions.select(*_FP, "start_ns", "in_force_ns").join(
        acks.select("process", "topic", "partition", "invoke_ns", pl.col("complete_ns").alias("ack_ns")),
        on=["topic", "partition"],
        how="inner",
    )
    # A send made before the fault was in force (its nftables rules installed, its signal delivered) can still go
    # through.
    new_send = (
        pairs.filter(pl.col("invoke_ns") >= pl.col("in_force_ns"))
        .group_by(_FPP)
        .agg(pl.col("ack_ns").min().alias("end_ns"))
    )
    before = (
        pairs.filter(pl.col("ack_ns") <= pl.col("start_ns"))
        .group_by(_FPP)
        .agg(pl.col("ack_ns").max().alias("begin_ns"))
    )
    pairs = pairs.join(new_send, on=_FPP, how="left").join(before, on=_FPP, how="left")
    # Acks from the last one before the fault (or the fault's start) up to the first of a new send; with no new send,
    # all after.
    begin = pl.coalesce("begin_ns", "start_ns")
    inside = pairs.filter(
        (pl.col("ack_ns") >= begin) & (pl.col("end_ns").is_null() | (pl.col("ack_ns") <= pl.col("end_ns")))
    )
    stretches = inside.sort("ack_ns").with_columns(pl.col("ack_ns").shift(1).over(_FPP).alias("gap_start_ns"))
    opened = stretches.filter(pl.col("gap_start_ns").is_null() & pl.col("begin_ns").is_null()).with_columns(
        pl.col("start_ns").alias("gap_start_ns")
    )
    gaps = pl.concat([stretches.filter(pl.col("gap_start_ns").is_not_null()), opened])
    longest = (
        gaps.sort("ack_ns")
        .group_by(_FPP)
        .agg(pl.all().sort_by(pl.col("ack_ns") - pl.col("gap_start_ns")).last())
        .select(*_FPP, pl.col("gap_start_ns").alias("gap_from"), pl.col("ack_ns").alias("gap_to"))
    )
    last_ack = pairs.group_by(_FPP).agg(pl.col("ack_ns").max().alias("last_ack_ns"))
    per_process = last_ack.join(longest, on=_FPP, how="left").join(
        new_send.rename({"end_ns": "first_new_ns"}), on=_FPP, how="left"
    )
    ended = pl.col("first_new_ns").is_not_null()
    per_process = per_process.with_columns(
        pl.when(ended).then(pl.col("gap_from")).otherwise(pl.col("last_ack_ns")).alias("last_ok_before_ns"),
        pl.when(ended).then(pl.col("gap_to")).otherwise(None).alias("first_ok_after_ns"),
    ).with_columns(ns_to_ms(pl.col("first_ok_after_ns") - pl.col("last_ok_before_ns")).alias("unavailable_ms"))
    # The partition's window: the longest any producer saw; it never ended only if no producer wrote there again.
    worst = per_process.group_by(_FP).agg(
        pl.all()
        .sort_by(
            pl.col("first_ok_after_ns").is_not_null(),
            pl.col("unavailable_ms"),
            pl.col("last_ok_before_ns"),
            nulls_last=False,
        )
        .last()
    )
    worst = worst.select(*_FP, "last_ok_before_ns", "first_ok_after_ns", "unavailable_ms")
    return partitions.join(worst, on=_FP, how="left").sort(_FP)


def _leadership(partitions: pl.DataFrame, topology: pl.DataFrame) -> pl.DataFrame:
    samples = partitions.select(*_FP, "start_ns", "node_ids", "isr_before").join(
        topology, on=["topic", "partition"], how="inner"
    )
    samples = samples.filter(pl.col("time_ns") > pl.col("start_ns"))
    new_leaders = (
        samples.filter((pl.col("leader") >= 0) & ~pl.col("node_ids").list.contains(pl.col("leader")))
        .sort("time_ns")
        .group_by(_FP)
        .agg(pl.col("leader").first().alias("new_leader"), pl.col("time_ns").first().alias("new_leader_ns"))
    )
    # The faulted nodes that were in the ISR: the ISR shrank once one of them left it.
    faulted_in_isr = pl.col("node_ids").list.set_intersection(pl.col("isr_before"))
    shrinks = (
        samples.filter(faulted_in_isr.list.set_difference(pl.col("isr")).list.len() > 0)
        .group_by(_FP)
        .agg(pl.col("time_ns").min().alias("isr_shrank_ns"))
    )
    joined = partitions.join(new_leaders, on=_FP, how="left").join(shrinks, on=_FP, how="left")
    return joined.with_columns(
        ns_to_ms(pl.col("new_leader_ns") - pl.col("start_ns")).alias("new_leader_ms"),
        pl.when(pl.col("new_leader").is_null())
        .then(None)
        .otherwise(pl.col("isr_before").list.contains(pl.col("new_leader")))
        .alias("new_leader_in_isr"),
        pl.col("isr_shrank_ns").is_not_null().alias("isr_shrank"),
        ns_to_ms(pl.col("isr_shrank_ns") - pl.col("start_ns")).alias("isr_shrank_ms"),
    ).sort(_FP)


def _rebalances_during(
    faults: pl.DataFrame, history: History, bounds: dict[str, int] | None = None, certain: bool = True
) -> pl.DataFrame:
    """Assign and revoke events of untouched consumers from a fault's start to 10 s after its end (or the drain phase):
    as measured, or, given the clients' clock ``bounds``, certainly inside that window (by more than the consumer's
    bound) or, not ``certain``, possibly inside it (within the bound)."""
    targeted = (
        history.faults.filter(pl.col("target") == Target.CONSUMER)
        .select(pl.col("nodes").explode().alias("process"))
        .drop_nulls()
    )
    events = history.membership.select("process", "time_ns", "f").unique().join(targeted, on="process", how="anti")
    last_ns = end_ns(history) or 0
    # The drain phase stops every consumer, and a member leaving rebalances its group: that is the
    # runner's doing, not the fault's, so the window ends where the drain begins.
    drain_ns = history.phases.filter(pl.col("phase") == PhaseName.DRAIN)["time_ns"].min()
    window_end = (
        pl.when(pl.col("stop_ns").is_null()).then(pl.lit(last_ns)).otherwise(pl.col("stop_ns") + REBALANCE_GRACE_NS)
    )
    if drain_ns is not None:
        window_end = (
            pl.when(pl.col("start_ns") < drain_ns)
            .then(pl.min_horizontal(window_end, pl.lit(drain_ns)))
            .otherwise(window_end)
        )
    windows = faults.select("fault_id", "start_ns", window_end.alias("until_ns"))
    if windows.height == 0:
        return windows.select("fault_id", pl.lit(0, dtype=pl.Int64).alias("rebalances_during"))
    bound = bound_ns("process", bounds or {}) * (1 if certain else -1)
    during = windows.join(events, how="cross").filter(
        (pl.col("time_ns") >= pl.col("start_ns") + bound) & (pl.col("time_ns") <= pl.col("until_ns") - bound)
    )
    per_fault = during.group_by("fault_id").agg(pl.len().cast(pl.Int64).alias("rebalances_during"))
    return (
        windows.select("fault_id")
        .join(per_fault, on="fault_id", how="left")
        .with_columns(pl.col("rebalances_during").fill_null(0))
    )


def _end_state(topology: pl.DataFrame) -> dict[str, Any]:
    if topology.height == 0:
        return {"isr_full_at_end": None, "preferred_leaders_at_end": None, "leaderless_at_end": 0}
    last = topology.filter(pl.col("time_ns") == pl.col("time_ns").max())
    state = last.select(
        (pl.col("isr").list.sort() == pl.col("replicas").list.sort()).all().alias("isr_full_at_end"),
        (pl.col("leader") == pl.col("replicas").list.first()).fill_null(False).all().alias("preferred_leaders_at_end"),
        (pl.col("leader").is_null() | (pl.col("leader") < 0)).sum().cast(pl.Int64).alias("leaderless_at_end"),
    ).row(0, named=True)
    return {name: (bool(value) if name != "leaderless_at_end" else int(value)) for name, value in state.items()}


def _per_fault(
    faults: pl.DataFrame,
    partitions: pl.DataFrame,
    rebalances: pl.DataFrame,
    stalls: Mapping[int, dict[str, dict[str, Any]]],
) -> list[dict[str, Any]]:
    columns = [
        "topic",
        "partition",
        "leader_before",
        "last_ok_before_ns",
        "first_ok_after_ns",
        "unavailable_ms",
        "new_leader",
        "new_leader_ms",
        "new_leader_in_isr",
        "isr_shrank",
        "isr_shrank_ms",
    ]
    by_fault: dict[int, list[dict[str, Any]]] = {}
    for row in partitions.select("fault_id", *columns).to_dicts():
        by_fault.setdefault(row.pop("fault_id"), []).append(row)
    counts = dict(rebalances.select("fault_id", "rebalances_during").iter_rows())
    listed = []
    for fault in faults.select("fault_id", "fault", "target", "nodes", "role", "start_ns", "stop_ns").to_dicts():
        affected = by_fault.get(fault["fault_id"], [])
        unavailable = [row["unavailable_ms"] for row in affected if row["unavailable_ms"] is not None]
        listed.append(
            {
                **fault,
                "affected_partitions": affected,
                "max_unavailable_ms": max(unavailable) if unavailable else None,
                "rebalances_during": int(counts.get(fault["fault_id"], 0)),
                "stalls": stalls.get(fault["fault_id"], {}),
            }
        )
    return listed


def _max_gap_ms(topology: pl.DataFrame) -> float | None:
    """The longest stretch without a topology sample: how blind the leadership numbers may be."""
    gap_ns = topology.select(pl.col("time_ns").unique().sort().diff().max()).item()
    return None if gap_ns is None else gap_ns / 1e6


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
