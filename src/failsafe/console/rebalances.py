"""A run's rebalance history, group by group, for the console's run view (docs/console.md, "Rebalances"). Pure.

Two kinds of row, in time order:

    left    a departure the rebalance checker measured (checkers/rebalance.py): a consumer fault, crash or close of
            members of the group. Each partition the group owned then, *moved* (the leaver's, with its new owner and
            when it was assigned again) or *kept* (a survivor's, and whether the survivor gave it up), with gap_ms:
            the group's processing gap on it, from its last read before the departure to its first read after.
            ``survivors_kept``: no survivor gave a partition up (one lost with its own session aside);
            ``violations``: ``survivors-interrupted`` when one did where the protocol (or the scenario) expected them
            kept, ``never-reassigned`` when a moved partition never got an owner while members lived
    joined  a member's first assign in the group, or its first after it stopped (crashed, closed, or a consumer
            fault hit it): the partitions it was given. A restarted member's join (restart-consumer) the checker
            measured as a left row is: moved are the partitions given to the joiner, kept every other one

``measured``: the row is one of the checker's events (a pause, moved and kept partitions, survivors kept).

The history records no group generation or member epoch (docs/history.md, assign / revoke): rows are ordered by time.
The checker's events come from the run's results.json when it was checked (judged with the scenario's options), else
the checker runs here with its defaults (``source`` says which).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

import polars as pl

from failsafe.checkers import run_checkers
from failsafe.checkers.common import client_stops
from failsafe.checkers.group_protocol import group_protocols
from failsafe.checkers.rebalance import JOIN, interrupted_survivor, needlessly_interrupted, never_reassigned
from failsafe.history.model import History
from failsafe.history.ops import Op

LEFT, JOINED = "left", "joined"
FROM_RESULTS, FROM_HISTORY = "results.json", "history"
# What the view reads of each event: results.json written by an older checker may lack some.
_EVENT_FIELDS = ("processes", "group", "start_ns", "moved_partitions", "kept_partitions", "survivors_kept_expected")
_KEPT_FIELDS = ("revoked", "lost", "judged")


def rebalance_view(history: History, checked: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``checked``: the rebalance checker's result from results.json (None when the run has none)."""
    result: Mapping[str, Any]
    if _shaped(checked):
        result, source = checked, FROM_RESULTS
    else:
        result, source = run_checkers(history, None, ["rebalance"])["rebalance"], FROM_HISTORY
    protocols = group_protocols(history)
    start_ns = run_start_ns(history)
    rows: dict[str, list[dict[str, Any]]] = {}
    measured_joiners = set()
    for event in result.get("events", []):
        rows.setdefault(event["group"], []).append(_measured(event, start_ns))
        if event.get("kind") == JOIN:
            measured_joiners |= {(event["group"], process) for process in event["processes"]}
    for join in joins(history):
        if (join["group"], join["process"]) not in measured_joiners:
            rows.setdefault(join["group"], []).append(_joined(join, protocols.get(join["group"]), start_ns))
    members = (
        history.membership.filter(pl.col("group").is_not_null())
        .group_by("group")
        .agg(pl.col("process").unique().sort())
    )
    members_of = {row["group"]: row["process"] for row in members.iter_rows(named=True)}
    groups = []
    for group in sorted(rows):
        ordered = sorted(rows[group], key=lambda row: (row["time_ms"], row["kind"] != LEFT))
        left = [row for row in ordered if row["kind"] == LEFT]
        pauses = [row["pause_ms"] for row in ordered if row["measured"] and row["pause_ms"] is not None]
        groups.append(
            {
                "group": group,
                "protocol": protocols.get(group),
                "members": members_of.get(group, []),
                "departures": len(left),
                "joins": len(ordered) - len(left),
                "max_pause_ms": max(pauses, default=None),
                "survivors_interrupted": sum(
                    p["violation"] == "survivors-interrupted"
                    for row in ordered
                    if row["measured"]
                    for p in row["partitions"]
                ),
                "rebalances": ordered,
            }
        )
    return {
        "source": source,
        "valid": result.get("valid"),
        "violations": list(result.get("violations", [])),
        "error": result.get("error"),
        "start_ms": None if start_ns is None else start_ns // 1_000_000,
        "groups": groups,
    }


def _shaped(checked: object) -> TypeGuard[Mapping[str, Any]]:
    if not isinstance(checked, Mapping) or not isinstance(checked.get("events"), list):
        return False
    return all(
        isinstance(e, Mapping)
        and all(f in e for f in _EVENT_FIELDS)
        and all(all(f in k for f in _KEPT_FIELDS) for k in e["kept_partitions"])
        for e in checked["events"]
    )


def run_start_ns(history: History) -> int | None:
    """The run's first phase, or, without phases, its first assign or revoke."""
    for frame in (history.phases, history.membership):
        if frame.height:
            return int(frame["time_ns"].min())  # type: ignore[arg-type]
    return None


def _when(time_ns: int, start_ns: int | None) -> dict[str, Any]:
    return {"time_ms": time_ns // 1_000_000, "at_s": None if start_ns is None else round((time_ns - start_ns) / 1e9, 3)}


def _measured(event: Mapping[str, Any], start_ns: int | None) -> dict[str, Any]:
    moved = [
        {
            "topic": p["topic"],
            "partition": p["partition"],
            "change": "moved",
            "owner": p["previous_owner"],
            "new_owner": p["new_owner"],
            "reassigned": p["reassigned"],
            "reassigned_ms": p["reassigned_ms"],
            "revoked": None,
            "revoked_ms": None,
            "lost": None,
            "gap_ms": p.get("gap_ms"),
            "violation": "never-reassigned" if never_reassigned(event, p) else None,
        }
        for p in event["moved_partitions"]
    ]
    kept = [
        {
            "topic": p["topic"],
            "partition": p["partition"],
            "change": "kept",
            "owner": p["owner"],
            "new_owner": None,
            "reassigned": None,
            "reassigned_ms": None,
            "revoked": p["revoked"],
            "revoked_ms": p.get("revoked_ms"),
            "lost": p["lost"],
            "gap_ms": p.get("gap_ms"),
            "violation": "survivors-interrupted" if needlessly_interrupted(event, p) else None,
        }
        for p in event["kept_partitions"]
    ]
    partitions = sorted(moved + kept, key=lambda p: (p["topic"], p["partition"]))
    interrupted = [f"{p['topic']}-{p['partition']}" for p in event["kept_partitions"] if interrupted_survivor(p)]
    violations = sorted({p["violation"] for p in partitions if p["violation"]})
    return {
        "kind": JOINED if event.get("kind") == JOIN else LEFT,
        "measured": True,
        **_when(event["start_ns"], start_ns),
        "members": list(event["processes"]),
        "source": event.get("source"),
        "fault_id": event.get("fault_id"),
        "protocol": event.get("protocol"),
        "pause_ms": event.get("pause_ms"),
        "all_reassigned": event.get("all_reassigned"),
        "new_owners": sorted({p["new_owner"] for p in moved if p["new_owner"] is not None}),
        "survivors_kept_expected": bool(event["survivors_kept_expected"]),
        "survivors_kept": not interrupted,
        "interrupted": interrupted,
        "violations": violations,
        "partitions": partitions,
    }


def _joined(join: Mapping[str, Any], protocol: str | None, start_ns: int | None) -> dict[str, Any]:
    return {
        "kind": JOINED,
        "measured": False,
        **_when(join["time_ns"], start_ns),
        "members": [join["process"]],
        "source": "rejoined" if join["rejoined"] else "first-assign",
        "protocol": protocol,
        "partitions": [{"topic": t, "partition": p, "change": "assigned"} for t, p in join["partitions"]],
        "violations": [],
    }


def joins(history: History) -> list[dict[str, Any]]:
    """Each member's first assign in a group, and its first after each time it stopped: (group, process, time_ns,
    partitions [(topic, partition)], rejoined)."""
    ops = (
        history.membership.filter(pl.col("group").is_not_null())
        .group_by("group", "process", "time_ns", "f", maintain_order=True)
        .agg(pl.struct("topic", "partition").alias("partitions"))
        .sort("time_ns", maintain_order=True)
    )
    stops: dict[str, list[int]] = {}
    for process, stop_ns in client_stops(history).iter_rows():
        stops.setdefault(process, []).append(stop_ns)
    last: dict[tuple[str, str], int] = {}
    waiting: dict[tuple[str, str], bool] = {}  # members whose next assign is a join -> whether it is a rejoin
    out = []
    for row in ops.iter_rows(named=True):
        member = (row["group"], row["process"])
        previous = last.get(member)
        if previous is None:
            waiting[member] = False
        elif any(previous <= s < row["time_ns"] for s in stops.get(row["process"], [])):
            waiting[member] = True
        last[member] = row["time_ns"]
        if row["f"] == Op.ASSIGN and member in waiting:
            out.append(
                {
                    "group": row["group"],
                    "process": row["process"],
                    "time_ns": row["time_ns"],
                    "rejoined": waiting.pop(member),
                    "partitions": sorted((p["topic"], p["partition"]) for p in row["partitions"]),
                }
            )
    return out
