"""Write stalls of every partition during a fault, grouped by the faulted node's replica role.

With acks=all a leader acknowledges a write only once every ISR member has it, and a killed
follower stays in the ISR until the controller fences it (``broker.session.timeout.ms``): so a
broker fault stalls the partitions it only replicated too, not just the ones it led. The
availability checker calls :func:`measure` for its broker, controller and quorum faults.

*Stall* of a partition during a fault (window ``[start_ns, stop_ns]``, or to the end of the history when never stopped):
the longest stretch between two consecutive acknowledgements of the partition to one producer (by ``complete_ns``;
acknowledgements at the same instant count once) that contains some instant of the window, the longest over its
producers: an acks=1 producer answered by a leader its followers cannot reach does not hide an acks=all one that waits.
A stretch that starts before the fault counts from the last acknowledgement before it, one that ends after the fault
counts to the acknowledgement that ended it; a partition with no acknowledgement before the fault counts from the
fault's start. A partition with no acknowledgement after the fault's start has an *open* stall: ``stall_ms`` null,
``never_acked_after`` true, ``gap_start_ns`` its last acknowledgement. The stretch after a partition's last
acknowledgement is otherwise not counted: traffic ending is not a stall.

*Group*, from the last topology sample at or before the fault's start (the first sample when
none is earlier, as for the affected partitions): for a ``broker`` fault, and a ``network`` fault
by the brokers of its first side (the isolated node), ``led`` (a faulted node
was the partition's leader), ``follower`` (a faulted node was among its replicas, not its leader;
``in_isr`` says whether one was in its ISR), ``unreplicated`` (no faulted node had a replica),
``unsampled`` (the partition is not in that sample). A ``controller`` or ``quorum`` fault does
not target a broker's replicas: every partition is in group ``all``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from failsafe.checkers.common import ns_to_ms
from failsafe.history.ops import Target

GROUP_ORDER = ("led", "follower", "unreplicated", "unsampled", "all")
EXAMPLES_PER_GROUP = 5
_TP = ["topic", "partition"]
_EXAMPLE_COLUMNS = ["topic", "partition", "stall_ms", "gap_start_ns", "gap_end_ns", "never_acked_after", "in_isr"]


@dataclass(frozen=True)
class Stalls:
    """``by_fault``: fault id -> {group: summary with examples}; ``by_group``: the same over every fault."""

    by_fault: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)
    by_group: dict[str, dict[str, Any]] = field(default_factory=dict)
    baseline_gap_ms: float | None = None


def measure(
    faults: pl.DataFrame, topology: pl.DataFrame, acked: pl.DataFrame, first_fault_ns: int | None, end_ns: int | None
) -> Stalls:
    """Stalls per (fault, partition) of ``acked`` (ok sends with an offset: topic, partition, complete_ns).

    ``faults`` are the faults to measure; ``first_fault_ns`` the start of the run's first fault of
    any kind (the baseline is taken before it); ``end_ns`` where an unstopped fault's window ends.
    """
    # Sorted by time alone (sends come nearly in time order; a sort by topic string first is ~60x slower at
    # millions of rows): ``over`` keeps each partition's rows in that order.
    # Gaps per producer: one acknowledged by a leader its followers cannot reach must not hide another that waits.
    producer = ["process"] if "process" in acked.columns else []
    acks = acked.select(*_TP, *producer, pl.col("complete_ns").alias("gap_end_ns")).sort("gap_end_ns")
    previous = pl.col("gap_end_ns").shift(1).over([*_TP, *producer])
    acks = acks.filter(previous.ne_missing(pl.col("gap_end_ns")))
    gaps = acks.with_columns(previous.alias("gap_start_ns")).drop(producer)
    last_acks = acks.group_by(_TP).agg(pl.col("gap_end_ns").max().alias("last_ack_ns"))
    rows = [
        _fault_stalls(fault, gaps, last_acks, topology, end_ns)
        for fault in faults.select("fault_id", "target", "nodes", "start_ns", "stop_ns").sort("start_ns").to_dicts()
    ]
    by_fault = {int(fault_id): _summaries(frame, examples=True) for fault_id, frame in rows}
    every = pl.concat([frame for _, frame in rows]) if rows else _empty_stalls()
    return Stalls(by_fault, _summaries(every, examples=False), _baseline_gap_ms(gaps, first_fault_ns))


def _fault_stalls(
    fault: dict[str, Any], gaps: pl.DataFrame, last_acks: pl.DataFrame, topology: pl.DataFrame, end_ns: int | None
) -> tuple[int, pl.DataFrame]:
    start_ns = int(fault["start_ns"])
    stop_ns = fault["stop_ns"] if fault["stop_ns"] is not None else end_ns
    # A zero-length window still contains its start: the stretch around it counts.
    until_ns = max(int(stop_ns if stop_ns is not None else start_ns), start_ns + 1)
    gap_start = pl.coalesce(pl.col("gap_start_ns"), pl.lit(start_ns))
    overlapping = gaps.with_columns(gap_start.alias("gap_start_ns")).filter(
        (pl.col("gap_end_ns") > start_ns) & (pl.col("gap_start_ns") < until_ns)
    )
    closed = (
        overlapping.with_columns((pl.col("gap_end_ns") - pl.col("gap_start_ns")).alias("stall_ns"))
        .sort("stall_ns", descending=True)
        .group_by(_TP, maintain_order=True)
        .first()
        .with_columns(pl.lit(False).alias("never_acked_after"))
    )
    open_ = last_acks.filter(pl.col("last_ack_ns") <= start_ns).select(
        *_TP,
        pl.col("last_ack_ns").alias("gap_start_ns"),
        pl.lit(None, dtype=pl.Int64).alias("gap_end_ns"),
        pl.lit(None, dtype=pl.Int64).alias("stall_ns"),
        pl.lit(True).alias("never_acked_after"),
    )
    measured = pl.concat([closed.select(open_.columns), open_])
    return int(fault["fault_id"]), _grouped(measured, fault, start_ns, topology)


def _grouped(measured: pl.DataFrame, fault: dict[str, Any], start_ns: int, topology: pl.DataFrame) -> pl.DataFrame:
    node_ids = pl.Series(fault["nodes"] or [], dtype=pl.String).cast(pl.Int64, strict=False).drop_nulls().to_list()
    if fault["target"] not in (Target.BROKER, Target.NETWORK) or not node_ids:
        grouped = measured.with_columns(pl.lit("all").alias("group"), pl.lit(None, dtype=pl.Boolean).alias("in_isr"))
    else:
        sample = _sample_before(topology, start_ns).select(*_TP, "leader", "replicas", "isr")
        joined = measured.join(sample, on=_TP, how="left")
        has_faulted = pl.element().is_in(node_ids)
        group = (
            pl.when(pl.col("replicas").is_null())
            .then(pl.lit("unsampled"))
            .when(pl.col("leader").is_in(node_ids))
            .then(pl.lit("led"))
            .when(pl.col("replicas").list.eval(has_faulted).list.any())
            .then(pl.lit("follower"))
            .otherwise(pl.lit("unreplicated"))
        )
        grouped = joined.with_columns(
            group.alias("group"), pl.col("isr").list.eval(has_faulted).list.any().alias("in_isr")
        )
    return grouped.select(
        "group",
        *_TP,
        ns_to_ms(pl.col("stall_ns")).alias("stall_ms"),
        "gap_start_ns",
        "gap_end_ns",
        "never_acked_after",
        "in_isr",
    ).sort(_TP)


def _sample_before(topology: pl.DataFrame, start_ns: int) -> pl.DataFrame:
    """The last topology sample at or before ``start_ns``; without one, the first sample."""
    if topology.height == 0:
        return topology
    earlier = topology.filter(pl.col("time_ns") <= start_ns)["time_ns"].max()
    sample_ns = earlier if earlier is not None else topology["time_ns"].min()
    return topology.filter(pl.col("time_ns") == sample_ns)


def _summaries(stalls: pl.DataFrame, examples: bool) -> dict[str, dict[str, Any]]:
    """{group: {partitions, max_stall_ms, median_stall_ms, open[, in_isr for followers][, examples]}}."""
    out: dict[str, dict[str, Any]] = {}
    for group in _ordered(stalls["group"].unique().to_list()):
        rows = stalls.filter(pl.col("group") == group)
        measured = rows["stall_ms"].drop_nulls()
        summary: dict[str, Any] = {
            "partitions": rows.height,
            "max_stall_ms": _float(measured.max()),
            "median_stall_ms": _float(measured.median()),
            "open": int(rows["never_acked_after"].sum()),
        }
        if group == "follower":
            summary["in_isr"] = int(rows["in_isr"].fill_null(False).sum())
        if examples:
            # Open stalls first: they are the worst, though they have no length.
            longest = rows.sort(["never_acked_after", "stall_ms"], descending=[True, True], nulls_last=True)
            summary["examples"] = longest.head(EXAMPLES_PER_GROUP).select(_EXAMPLE_COLUMNS).to_dicts()
        out[group] = summary
    return out


def _ordered(groups: Sequence[str]) -> list[str]:
    return [g for g in GROUP_ORDER if g in groups] + sorted(g for g in groups if g not in GROUP_ORDER)


def _baseline_gap_ms(gaps: pl.DataFrame, first_fault_ns: int | None) -> float | None:
    """The median stretch between consecutive acknowledgements before the first fault: the normal pace of traffic."""
    closed = gaps.filter(pl.col("gap_start_ns").is_not_null())
    if first_fault_ns is not None:
        closed = closed.filter(pl.col("gap_end_ns") <= first_fault_ns)
    return _float(closed.select(ns_to_ms(pl.col("gap_end_ns") - pl.col("gap_start_ns")).median()).item())


def _empty_stalls() -> pl.DataFrame:
    schema = {
        "group": pl.String,
        "topic": pl.String,
        "partition": pl.Int64,
        "stall_ms": pl.Float64,
        "gap_start_ns": pl.Int64,
        "gap_end_ns": pl.Int64,
        "never_acked_after": pl.Boolean,
        "in_isr": pl.Boolean,
    }
    return pl.DataFrame(schema=schema)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
