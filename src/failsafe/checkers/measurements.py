"""Measurements that are not verdicts: what happened during each fault, send errors by name, metadata changes.

The checkers say whether a history is valid; these only count. A scenario's expectations turn
them into claims ("topic creation failed during the quorum outage"), so a number here never
makes a run valid or invalid on its own.
"""

from __future__ import annotations

import polars as pl

from failsafe.history.model import History


def _window(faults: pl.DataFrame, end_ns: int) -> list[tuple[int, str, int, int]]:
    return [
        (row["fault_id"], row["fault"], row["start_ns"], row["stop_ns"] if row["stop_ns"] is not None else end_ns)
        for row in faults.iter_rows(named=True)
        if row["start_ns"] is not None
    ]


def _end_ns(history: History) -> int:
    candidates = [
        f.select(pl.col(c).max()).item()
        for f, c in ((history.sends, "complete_ns"), (history.sends, "invoke_ns"), (history.reads, "time_ns"), (history.topology, "time_ns"))
    ]
    return max((c for c in candidates if c is not None), default=0)


def measure(history: History) -> dict:
    sends = history.sends
    end_ns = _end_ns(history)
    per_fault = []
    for fault_id, fault, start_ns, stop_ns in _window(history.faults, end_ns):
        during = sends.filter(pl.col("complete_ns").is_between(start_ns, stop_ns))
        per_fault.append(
            {
                "fault_id": fault_id,
                "fault": fault,
                "acknowledged_during": during.filter(pl.col("outcome") == "ok").height,
                "failed_during": during.filter(pl.col("outcome") == "fail").height,
                "unknown_during": during.filter(pl.col("outcome") == "info").height,
            }
        )
    errors = sends.filter(pl.col("error").is_not_null()).group_by("error").len().sort("error")
    unacked = sends.filter(pl.col("outcome").is_in(["fail", "info"]))
    leaderless = (
        history.topology.filter(pl.col("leader") < 0).select((pl.col("topic") + "-" + pl.col("partition").cast(pl.String)).alias("name")).unique().sort("name")
    )
    members = history.reads.filter(pl.col("group").is_not_null()).group_by("group").agg(pl.col("process").n_unique().alias("n")).sort("group")
    return {
        "faults": per_fault,
        "members_with_reads": dict(zip(members["group"].to_list(), members["n"].to_list(), strict=True)),
        "send_errors": dict(zip(errors["error"].to_list(), errors["len"].to_list(), strict=True)),
        "unacknowledged": unacked.height,
        "leaderless_partitions": leaderless["name"].to_list(),
        "create_topic": _create_topic(history, end_ns),
    }


def _create_topic(history: History, end_ns: int) -> dict:
    ops = history.admin.filter(pl.col("f") == "create-topic")
    invokes = ops.filter(pl.col("type") == "invoke").select("id", pl.col("time_ns").alias("invoke_ns"))
    outcomes = ops.filter(pl.col("type") != "invoke").select("id", "type")
    attempts = invokes.join(outcomes, on="id", how="left")
    quorum = [(start, stop) for _, fault, start, stop in _window(history.faults, end_ns) if fault == "quorum-loss"]

    def during(t: int) -> bool:
        return any(start <= t <= stop for start, stop in quorum)

    buckets: dict[str, dict[str, int]] = {k: {"attempts": 0, "ok": 0, "fail": 0, "info": 0} for k in ("during_outage", "after_outage")}
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
