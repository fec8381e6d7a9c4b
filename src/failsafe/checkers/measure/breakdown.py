"""Where the time of a failover goes: detection, election, propagation, and the client's own part (docs/checkers.md,
"failover breakdown"). A measurement, never a verdict.

For each node fault (family process, disk or network; target broker or network) and each partition one of its nodes
led at its start (availability's affected partitions, checkers/availability.py; a quorum or controller fault takes no
leader and is left out, a fault whose nodes led nothing is listed in ``skipped_faults``):

    in force --detection--> fenced --election--> new leader in the metadata --propagation--> first write acknowledged

- detection: from the fault in force (``in_force_ns``) to the first node-event (DETECTION_EVENTS) about a faulted
  broker at or after it and not after the new leader's sample: KRaft ``fenced`` or ``controlled-shutdown``, ZooKeeper
  mode ``broker-gone``, ``broker-bounced`` or ``zk-session-expired``, whichever came first (millisecond log times).
- election: from there to the first topology sample showing another leader (availability's ``new_leader_ns``): an
  upper bound, the leader may have changed up to ``leader_sample_error_s`` (since the sample before) earlier.
- propagation: from that sample to the first acknowledged send on the partition completing at or after it, over
  every producer; ``clients`` has each producer's own (``gap_s``).
- client_backoff_s: for the producer that wrote first, the time from the new leader's sample to the invoke of the
  send it acknowledged, when that send was made after the sample (the client's own pacing, backoff or retry
  schedule before it sent again); null when the send was already in flight (its retries happened inside the client).
- client_visible_s: availability's window (``unavailable_ms``), reused as it is.

A component that cannot be known is null and ``why`` names the reason. Pure: reads only the History.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from failsafe.checkers.availability import acknowledged, failover_windows
from failsafe.checkers.explain.context import Context
from failsafe.history.model import History
from failsafe.history.ops import DETECTION_EVENTS, Family, NodeEvent, OpType, Target

COMPONENTS = ("detection_s", "election_s", "propagation_s", "client_backoff_s", "client_visible_s")
NODE_FAMILIES = (Family.PROCESS, Family.DISK, Family.NETWORK)
NODE_FAULT_TARGETS = (Target.BROKER, Target.NETWORK)
# failsafe's topology sampler's period (scenarios' topology watcher): the nominal bound when a row has no earlier
# sample.
TOPOLOGY_SAMPLE_INTERVAL_S = 0.25
_MS_NS = 1_000_000
_FP = ["fault_id", "topic", "partition"]

WHY_LED_NOTHING = "its nodes led no partition at its start (followers, controllers, or no replica)"
WHY_NO_SAMPLE = "no topology sample"
WHY_NO_EVENTS = "no node-event in the history: the nodes' logs were not read"
WHY_NO_NEW_LEADER = "the leader never changed: no topology sample after the fault showed another leader"
WHY_NO_DETECTION = "detection unknown (see detection_s)"
WHY_NO_WRITE = "no write acknowledged on the partition at or after the new leader's sample"
WHY_IN_FLIGHT = (
    "the first write acknowledged after the new leader was sent before it: its retries and backoff happened "
    "inside the client, which the history does not see"
)
WHY_NO_WINDOW = "availability measured no window: no write acknowledged on the partition around the fault"


def measure(history: History) -> dict[str, Any]:
    """``{"partitions": [row, ...], "summary": {component: {count, unknown, p50, p95, max}}, "skipped_faults": [...],
    "sample_interval_s", "max_sample_gap_s"}``: what results.json holds under ``measurements.failover_breakdown``."""
    t0 = Context.of(history, 0).t0_ns
    faults = history.faults.filter(pl.col("family").is_in(NODE_FAMILIES) & pl.col("target").is_in(NODE_FAULT_TARGETS))
    windows = failover_windows(history).join(faults.select("fault_id", "fault", "stop_ns"), on="fault_id", how="inner")
    windows = _sample_before(windows, history.topology).sort(_FP)
    clients = _clients(windows, history)
    rows = [
        _row(w, history, clients.get((w["fault_id"], w["topic"], w["partition"]), []), t0) for w in windows.to_dicts()
    ]
    led = set(windows["fault_id"].to_list())
    why = WHY_NO_SAMPLE if history.topology.is_empty() else WHY_LED_NOTHING
    skipped = [
        {**f, "why": why} for f in faults.select("fault_id", "fault", "nodes").to_dicts() if f["fault_id"] not in led
    ]
    return {
        "partitions": rows,
        "summary": summarize(rows),
        "skipped_faults": skipped,
        "sample_interval_s": _sample_interval_s(history.topology),
        "max_sample_gap_s": _max_gap_s(history.topology),
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per component: how many rows know it (count), how many do not (unknown), p50, p95 (nearest rank) and max."""
    summary = {}
    for name in COMPONENTS:
        values = sorted(row[name] for row in rows if row[name] is not None)
        summary[name] = {
            "count": len(values),
            "unknown": len(rows) - len(values),
            "p50": _rank(values, 0.5),
            "p95": _rank(values, 0.95),
            "max": values[-1] if values else None,
        }
    return summary


def _rank(ordered: list[float], q: float) -> float | None:
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else None


def _s(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1e9, 3)


def _row(w: dict[str, Any], history: History, clients: list[dict[str, Any]], t0: int) -> dict[str, Any]:
    nodes = [n for n in w["node_ids"] if n is not None]
    # A fault on several brokers: this partition waited for its own leader's fence, not the first of any of them.
    if w["leader_before"] in nodes:
        nodes = [w["leader_before"]]
    in_force, new_leader_ns = w["in_force_ns"], w["new_leader_ns"]
    why: dict[str, str] = {}
    detected = _detection(
        history.node_events, nodes, in_force, new_leader_ns if new_leader_ns is not None else w["stop_ns"]
    )
    if detected is None:
        why["detection_s"] = _why_undetected(history.node_events, nodes, new_leader_ns is not None)
    detected_ns = None if detected is None else detected["time_ns"]
    if new_leader_ns is None:
        why["election_s"] = why["propagation_s"] = why["client_backoff_s"] = WHY_NO_NEW_LEADER
    elif detected_ns is None:
        why["election_s"] = WHY_NO_DETECTION
    first = min(clients, key=lambda c: c["first_ok_ns"]) if clients else None
    if new_leader_ns is not None and first is None:
        why["propagation_s"] = why["client_backoff_s"] = WHY_NO_WRITE
    elif first is not None and first["backoff_ns"] is None:
        why["client_backoff_s"] = WHY_IN_FLIGHT
    if w["unavailable_ms"] is None:
        why["client_visible_s"] = WHY_NO_WINDOW
    return {
        "fault_id": w["fault_id"],
        "fault": w["fault"],
        "topic": w["topic"],
        "partition": w["partition"],
        "old_leader": w["leader_before"],
        "new_leader": w["new_leader"],
        "was_controller": _was_controller(history.controllers, nodes, w["start_ns"]),
        "in_force_s": _s(in_force - t0),
        "detected_s": None if detected_ns is None else _s(detected_ns - t0),
        "detected_by": detected and {k: detected[k] for k in ("event", "node", "line")},
        "new_leader_s": None if new_leader_ns is None else _s(new_leader_ns - t0),
        "leader_sample_error_s": _sample_error_s(new_leader_ns, w["sample_before_ns"]),
        "became_leader_s": _became_leader_s(history.node_events, w, t0),
        "detection_s": None if detected_ns is None else _s(detected_ns - in_force),
        "election_s": None if detected_ns is None or new_leader_ns is None else _s(new_leader_ns - detected_ns),
        "propagation_s": None if first is None else _s(first["first_ok_ns"] - new_leader_ns),
        "client_backoff_s": None if first is None else _s(first["backoff_ns"]),
        "client_visible_s": None if w["unavailable_ms"] is None else round(w["unavailable_ms"] / 1000, 3),
        "first_writer": None if first is None else first["process"],
        "clients": [
            {
                "process": c["process"],
                "first_ok_s": _s(c["first_ok_ns"] - t0),
                "gap_s": _s(c["first_ok_ns"] - new_leader_ns),
                "sent_s": _s(c["invoke_ns"] - t0),
                "backoff_s": _s(c["backoff_ns"]),
                "failed_after_leader": c["failed"],
            }
            for c in sorted(clients, key=lambda c: c["process"])
        ],
        "why": why,
    }


def _detection(events: pl.DataFrame, nodes: list[int], in_force_ns: int, until_ns: int | None) -> dict[str, Any] | None:
    """The first detection event about a faulted broker from the fault in force (its log millisecond may start up to
    1 ms before) to ``until_ns`` (the new leader's sample; else the fault's stop; else the end)."""
    found = events.filter(
        pl.col("event").is_in(DETECTION_EVENTS)
        & pl.col("broker").is_in(nodes)
        & (pl.col("time_ns") + _MS_NS > in_force_ns)
    )
    if until_ns is not None:
        found = found.filter(pl.col("time_ns") <= until_ns)
    rows = found.sort("time_ns", maintain_order=True).head(1).to_dicts()
    return rows[0] if rows else None


def _why_undetected(events: pl.DataFrame, nodes: list[int], new_leader: bool) -> str:
    if events.is_empty():
        return WHY_NO_EVENTS
    until = "the new leader's sample" if new_leader else "the fault's end"
    why = f"no fence of broker {', '.join(map(str, nodes))} in the nodes' logs between the fault in force and {until}"
    unreadable = events.filter(pl.col("event") == NodeEvent.LOG_UNREADABLE)
    if unreadable.height:
        why += "; unreadable: " + "; ".join(
            f"node {n}: {line}" for n, line in unreadable.select("node", "line").iter_rows()
        )
    return why


def _became_leader_s(events: pl.DataFrame, w: dict[str, Any], t0: int) -> float | None:
    """When the new leader's own log says it became the partition's leader (after the fault in force)."""
    if w["new_leader"] is None:
        return None
    mine = events.filter(
        (pl.col("event") == NodeEvent.BECAME_LEADER)
        & (pl.col("broker") == w["new_leader"])
        & (pl.col("topic") == w["topic"])
        & (pl.col("partition") == w["partition"])
        & (pl.col("time_ns") + _MS_NS > w["in_force_ns"])
    )
    first = mine["time_ns"].min()
    return None if first is None else _s(first - t0)


def _was_controller(controllers: pl.DataFrame, nodes: list[int], start_ns: int) -> bool | None:
    """Whether a faulted node was the active controller when the fault began (null: no controller op before it)."""
    before = controllers.filter(pl.col("time_ns") <= start_ns).tail(1)["controller"].to_list()
    return None if not before or before[0] is None else before[0] in nodes


def _clients(windows: pl.DataFrame, history: History) -> dict[tuple, list[dict[str, Any]]]:
    """Per (fault, partition), per producer: its first acknowledged send completing at or after the new leader's sample,
    when it was sent, its backoff (sent after the sample: the sample to the send), and how many of its sends on the
    partition failed or ended unknown between the sample and that acknowledgement."""
    led = windows.filter(pl.col("new_leader_ns").is_not_null()).select(*_FP, "new_leader_ns")
    if led.is_empty():
        return {}
    acks = (
        acknowledged(history.sends)
        .join(led, on=["topic", "partition"], how="inner")
        .filter(pl.col("complete_ns") >= pl.col("new_leader_ns"))
    )
    firsts = (
        acks.sort("complete_ns")
        .group_by([*_FP, "process"], maintain_order=True)
        .agg(
            pl.col("complete_ns").first().alias("first_ok_ns"),
            pl.col("invoke_ns").first(),
            pl.col("new_leader_ns").first(),
        )
    )
    failed = (
        history.sends.filter(pl.col("outcome").is_in([OpType.FAIL, OpType.INFO]) & pl.col("complete_ns").is_not_null())
        .select("process", "topic", "partition", "complete_ns")
        .join(firsts, on=["topic", "partition", "process"], how="inner")
        .filter(pl.col("complete_ns").is_between(pl.col("new_leader_ns"), pl.col("first_ok_ns"), closed="left"))
        .group_by([*_FP, "process"])
        .agg(pl.len().alias("failed"))
    )
    firsts = firsts.join(failed, on=[*_FP, "process"], how="left").with_columns(
        pl.col("failed").fill_null(0),
        pl.when(pl.col("invoke_ns") >= pl.col("new_leader_ns"))
        .then(pl.col("invoke_ns") - pl.col("new_leader_ns"))
        .alias("backoff_ns"),
    )
    by_partition: dict[tuple, list[dict[str, Any]]] = {}
    for row in firsts.to_dicts():
        by_partition.setdefault((row["fault_id"], row["topic"], row["partition"]), []).append(row)
    return by_partition


def _sample_before(windows: pl.DataFrame, topology: pl.DataFrame) -> pl.DataFrame:
    """``sample_before_ns``: the partition's last topology sample before the one that showed its new leader."""
    samples = (
        topology.select("topic", "partition", pl.col("time_ns").alias("sample_before_ns"))
        .unique()
        .sort("sample_before_ns")
    )
    # Both sides are sorted by time, each topic-partition's rows in order: the check polars cannot make with ``by``.
    return windows.sort("new_leader_ns").join_asof(
        samples,
        left_on="new_leader_ns",
        right_on="sample_before_ns",
        by=["topic", "partition"],
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
        coalesce=False,
    )


def _sample_error_s(new_leader_ns: int | None, before_ns: int | None) -> float | None:
    """How much earlier than its sample the new leader may have come: the time since the partition's sample before."""
    if new_leader_ns is None:
        return None
    return TOPOLOGY_SAMPLE_INTERVAL_S if before_ns is None else _s(new_leader_ns - before_ns)


def _sample_times(topology: pl.DataFrame) -> pl.Series:
    return topology["time_ns"].unique().sort().diff().drop_nulls()


def _sample_interval_s(topology: pl.DataFrame) -> float | None:
    """The median time between topology samples: the usual error bound of a new leader's time."""
    gap = _sample_times(topology).median()
    return None if gap is None else _s(int(gap))


def _max_gap_s(topology: pl.DataFrame) -> float | None:
    gap = _sample_times(topology).max()
    return None if gap is None else _s(int(gap))
