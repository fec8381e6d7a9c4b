"""Measurements that are not verdicts: what happened during each fault, send errors by name, metadata changes.

The checkers say whether a history is valid; these only count. A scenario's expectations turn
them into claims ("topic creation failed during the quorum outage"), so a number here never
makes a run valid or invalid on its own.
"""

from __future__ import annotations

import polars as pl

import failsafe.checkers.measure.breakdown as breakdown
import failsafe.checkers.measure.operations as operations
import failsafe.checkers.measure.storage as storage
from failsafe.history.model import History
from failsafe.history.ops import OPERATION_FAMILIES, Op, OpType, PhaseName, Target


def _window(faults: pl.DataFrame, end_ns: int) -> list[tuple[int, str, int, int]]:
    return [
        (row["fault_id"], row["fault"], row["start_ns"], row["stop_ns"] if row["stop_ns"] is not None else end_ns)
        for row in faults.iter_rows(named=True)
        if row["start_ns"] is not None
    ]


def _end_ns(history: History) -> int:
    candidates = [
        f.select(pl.col(c).max()).item()
        for f, c in (
            (history.sends, "complete_ns"),
            (history.sends, "invoke_ns"),
            (history.reads, "time_ns"),
            (history.topology, "time_ns"),
        )
    ]
    return max((c for c in candidates if c is not None), default=0)


NS_PER_MS = operations.NS_PER_MS


def _quorum_loss(faults: pl.DataFrame) -> pl.Expr:
    """A fault that took the whole quorum away (not a step of the migration or of a rolling upgrade, which record some
    of their windows on it)."""
    return (pl.col("target") == Target.QUORUM) & (~pl.col("family").is_in(list(OPERATION_FAMILIES))).fill_null(True)


def measure(history: History) -> dict:
    sends = history.sends
    end_ns = _end_ns(history)
    windows = _window(history.faults, end_ns)
    quorum_losses = [
        (start, stop) for _, _, start, stop in _window(history.faults.filter(_quorum_loss(history.faults)), end_ns)
    ]
    nodes_of = dict(zip(history.faults["fault_id"].to_list(), history.faults["nodes"].to_list(), strict=True))
    targets = dict(zip(history.faults["fault_id"].to_list(), history.faults["target"].to_list(), strict=True))
    per_fault = []
    first_start = min((w[2] for w in windows), default=end_ns)
    for fault_id, fault, start_ns, stop_ns in windows:
        during = sends.filter(pl.col("complete_ns").is_between(start_ns, stop_ns))
        entry = {
            "fault_id": fault_id,
            "fault": fault,
            "ack_latency_ms": _latency(during),
            "acknowledged_during": during.filter(pl.col("outcome") == OpType.OK).height,
            "failed_during": during.filter(pl.col("outcome") == OpType.FAIL).height,
            "unknown_during": during.filter(pl.col("outcome") == OpType.INFO).height,
        }
        entry.update(_controller_change(history.controllers, start_ns))
        if targets.get(fault_id) == Target.BROKER:
            outage = next(((qs, qe) for qs, qe in quorum_losses if qs <= start_ns <= qe), None)
            if outage is not None:
                entry.update(
                    _leaders_in_outage(history.topology, [int(n) for n in nodes_of[fault_id] or []], start_ns, outage)
                )
        per_fault.append(entry)
    errors = sends.filter(pl.col("error").is_not_null()).group_by("error").len().sort("error")
    unacked = sends.filter(pl.col("outcome").is_in([OpType.FAIL, OpType.INFO]))
    leaderless = (
        history.topology.filter(pl.col("leader") < 0)
        .select((pl.col("topic") + "-" + pl.col("partition").cast(pl.String)).alias("name"))
        .unique()
        .sort("name")
    )
    members = (
        history.reads.filter(pl.col("group").is_not_null())
        .group_by("group")
        .agg(pl.col("process").n_unique().alias("n"))
        .sort("group")
    )
    return {
        "faults": per_fault,
        "members_with_reads": dict(zip(members["group"].to_list(), members["n"].to_list(), strict=True)),
        "send_errors": dict(zip(errors["error"].to_list(), errors["len"].to_list(), strict=True)),
        "unacknowledged": unacked.height,
        "leaderless_partitions": leaderless["name"].to_list(),
        "create_topic": _create_topic(history, end_ns),
        "new_controller_ms": max(
            (f["new_controller_ms"] for f in per_fault if f.get("new_controller_ms") is not None), default=None
        ),
        **operations.measure(history, per_fault),
        "failover_breakdown": _failover_breakdown(history),
        # Sent from the chaos phase's start until the first fault: what each fault's ack_latency_ms is held against (a
        # slow disk's cost, a gray failure's).
        "ack_latency_before_ms": _latency(
            sends.filter(pl.col("invoke_ns").is_between(_chaos_ns(history, first_start), first_start))
        ),
        "storage": storage.measure(history),
    }


def _chaos_ns(history: History, default: int) -> int:
    """When the chaos phase began (the warm-up's sends, a producer's first metadata and connections, are no
    baseline)."""
    chaos = history.phases.filter(pl.col("phase") == PhaseName.CHAOS)["time_ns"].min()
    return chaos if chaos is not None else default


def _latency(sends: pl.DataFrame) -> dict:
    """The acknowledged sends' latency (invoke to acknowledgement) in ms: how many, p50, p99, max."""
    acked = sends.filter((pl.col("outcome") == OpType.OK) & pl.col("invoke_ns").is_not_null())
    if not acked.height:
        return {"acknowledged": 0, "p50": None, "p99": None, "max": None}
    ms = (acked["complete_ns"] - acked["invoke_ns"]) / NS_PER_MS
    return {
        "acknowledged": acked.height,
        "p50": round(float(ms.quantile(0.5, "nearest")), 2),
        "p99": round(float(ms.quantile(0.99, "nearest")), 2),
        "max": round(float(ms.max()), 2),
    }


def _failover_breakdown(history: History) -> dict:
    """checkers/measure/breakdown.py's measure; one that raises leaves only its error here, never the other
    measurements."""
    try:
        return breakdown.measure(history)
    except Exception as e:  # noqa: BLE001 - a measurement that crashes is reported, the rest of results.json still stands
        return {"error": f"{type(e).__name__}: {e}"}


def _controller_change(controllers: pl.DataFrame, start_ns: int) -> dict:
    """The active controller when the fault started and, if one controller took over from another, when.

    Only when the controller samples show it (the engine records one at each change): a fault that
    did not move the controller has ``new_controller_ms`` null.
    """
    before = controllers.filter(pl.col("time_ns") <= start_ns).tail(1)["controller"].to_list()
    old = before[0] if before else None
    if old is None:
        return {}
    after = controllers.filter(
        (pl.col("time_ns") > start_ns) & pl.col("controller").is_not_null() & (pl.col("controller") != old)
    )
    moved = after.head(1)
    return {
        "controller_before": old,
        "new_controller": moved["controller"].item() if moved.height else None,
        "new_controller_ms": round((moved["time_ns"].item() - start_ns) / NS_PER_MS, 1) if moved.height else None,
    }


def _leaders_in_outage(topology: pl.DataFrame, nodes: list[int], start_ns: int, outage: tuple[int, int]) -> dict:
    """For a broker fault during a quorum loss: did the partitions it led get a new leader before the quorum came back?

    Seed 004: with ZooKeeper down nobody can elect one, so they stay led by the dead broker until
    ZooKeeper returns (and the broker's session expires). Read from the topology samples only.
    """
    quorum_back_ns = outage[1]
    last = topology.filter(pl.col("time_ns") <= start_ns)
    if last.is_empty():
        return {}
    led = last.filter(pl.col("time_ns") == last["time_ns"].max()).filter(pl.col("leader").is_in(nodes))
    names = [(t, p) for t, p in zip(led["topic"].to_list(), led["partition"].to_list(), strict=True)]
    moved = topology.filter((pl.col("time_ns") > start_ns) & (pl.col("leader") >= 0) & ~pl.col("leader").is_in(nodes))
    during, after_ms = [], []
    for topic, partition in names:
        first = (
            moved.filter((pl.col("topic") == topic) & (pl.col("partition") == partition)).head(1)["time_ns"].to_list()
        )
        if first and first[0] <= quorum_back_ns:
            during.append(f"{topic}-{partition}")
        elif first:
            after_ms.append((first[0] - quorum_back_ns) / NS_PER_MS)
    return {
        "led_partitions": len(names),
        "new_leader_during_quorum_loss": len(during),
        "new_leader_during_quorum_loss_partitions": during,
        "new_leader_after_quorum_back": len(after_ms),
        "max_new_leader_after_quorum_back_ms": round(max(after_ms), 1) if after_ms else None,
    }


def _create_topic(history: History, end_ns: int) -> dict:
    ops = history.admin.filter(pl.col("f") == Op.CREATE_TOPIC)
    invokes = ops.filter(pl.col("type") == OpType.INVOKE).select("id", pl.col("time_ns").alias("invoke_ns"))
    outcomes = ops.filter(pl.col("type") != OpType.INVOKE).select("id", "type")
    attempts = invokes.join(outcomes, on="id", how="left")
    quorum = [
        (start, stop) for _, _, start, stop in _window(history.faults.filter(_quorum_loss(history.faults)), end_ns)
    ]

    def during(t: int) -> bool:
        return any(start <= t <= stop for start, stop in quorum)

    buckets: dict[str, dict[str, int]] = {
        k: {"attempts": 0, "ok": 0, "fail": 0, "info": 0} for k in ("during_outage", "after_outage")
    }
    last_stop = max((stop for _, stop in quorum), default=None)
    for row in attempts.iter_rows(named=True):
        if during(row["invoke_ns"]):
            bucket = buckets["during_outage"]
        elif last_stop is not None and row["invoke_ns"] > last_stop:
            bucket = buckets["after_outage"]
        else:
            continue
        bucket["attempts"] += 1
        bucket[row["type"] or "info"] += 1
    return buckets
