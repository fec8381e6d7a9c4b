"""Measurements of the operations a run carried out on its cluster, each step a window of its family: the live
migration, a rolling upgrade, a dynamic quorum's changes, feature flips, a broker added and partitions reassigned.
Counts and wall times only, never a verdict (checkers/measure/faults.py says why)."""

from __future__ import annotations

import polars as pl

from failsafe.history.model import History
from failsafe.history.ops import MIGRATION_ROLL, UPGRADE_FINALIZE, UPGRADE_ROLL, Family, Op, OpType, Target

NS_PER_MS = 1_000_000


def measure(history: History, per_fault: list[dict]) -> dict:
    """Each operation's measurement under its name, only for the operations the run carried out."""
    return {
        **({"migration": migration} if (migration := _migration(history.faults, per_fault)) else {}),
        **({"upgrade": upgrade} if (upgrade := _upgrade(history.faults, per_fault)) else {}),
        **({"quorum_changes": changes} if (changes := _quorum_changes(history, per_fault)) else {}),
        **({"feature_flips": flips} if (flips := _feature_flips(history.faults)) else {}),
        **({"reassignment": moves} if (moves := _reassignment(history.faults, per_fault)) else {}),
    }


def _wall_ms(row: dict) -> float | None:
    return round((row["stop_ns"] - row["start_ns"]) / NS_PER_MS, 1) if row["stop_ns"] is not None else None


LAST_MIGRATION_STEP = "retire-zookeeper"


def _migration(faults: pl.DataFrame, per_fault: list[dict]) -> dict | None:
    """The live migration's steps (each a ``roll`` or ``migration`` window): wall time, whether every step completed,
    and the broker rolls during which no write was acknowledged."""
    steps = faults.filter(pl.col("family") == Family.MIGRATION)
    if steps.is_empty():
        return None
    unfinished = steps.filter(pl.col("stop_ns").is_null())
    last = steps.tail(1).row(0, named=True)
    completed = unfinished.is_empty() and (last["role"] or "").startswith(LAST_MIGRATION_STEP)
    stop = steps["stop_ns"].max()
    broker_rolls = steps.filter((pl.col("fault") == MIGRATION_ROLL) & (pl.col("target") == Target.BROKER))[
        "fault_id"
    ].to_list()
    acked = {f["fault_id"]: f["acknowledged_during"] for f in per_fault}
    return {
        "completed": completed,
        "steps": steps.height,
        "broker_rolls": len(broker_rolls),
        "broker_rolls_without_acks": sum(1 for fault_id in broker_rolls if not acked.get(fault_id)),
        "wall_ms": round((stop - steps["start_ns"].min()) / NS_PER_MS, 1) if stop is not None else None,
        "failed_step": unfinished["role"][0] if not unfinished.is_empty() else None,
        "failed_error": unfinished["error"][0] if not unfinished.is_empty() else None,
    }


def _upgrade(faults: pl.DataFrame, per_fault: list[dict]) -> dict | None:
    """A rolling upgrade's steps (each a ``roll`` of a node or the ``finalize``): whether every step completed, how
    many rolls, whether the features were finalized, each step's wall time and acknowledged writes, and the whole
    upgrade's wall time."""
    steps = faults.filter(pl.col("family") == Family.UPGRADE)
    if steps.is_empty():
        return None
    unfinished = steps.filter(pl.col("stop_ns").is_null())
    acked = {f["fault_id"]: f["acknowledged_during"] for f in per_fault}
    stop = steps["stop_ns"].max()
    listed = [
        {
            "fault_id": row["fault_id"],
            "step": row["fault"],
            "target": row["target"],
            "nodes": row["nodes"],
            "description": row["role"],
            "wall_ms": round((row["stop_ns"] - row["start_ns"]) / NS_PER_MS, 1) if row["stop_ns"] is not None else None,
            "acknowledged_during": acked.get(row["fault_id"]),
        }
        for row in steps.iter_rows(named=True)
    ]
    return {
        "completed": unfinished.is_empty(),
        "steps": steps.height,
        "rolls": steps.filter(pl.col("fault") == UPGRADE_ROLL).height,
        "finalized": steps.filter((pl.col("fault") == UPGRADE_FINALIZE) & pl.col("stop_ns").is_not_null()).height > 0,
        "wall_ms": round((stop - steps["start_ns"].min()) / NS_PER_MS, 1) if stop is not None else None,
        "failed_step": unfinished["role"][0] if not unfinished.is_empty() else None,
        "failed_error": unfinished["error"][0] if not unfinished.is_empty() else None,
        "by_step": listed,
    }


def _quorum_changes(history: History, per_fault: list[dict]) -> dict | None:
    """A dynamic quorum's changes (add-controller, remove-controller windows): whether each completed, its wall time,
    the writes acknowledged during it, when the active controller moved how long until another led, and the outcome
    of the first topic created after it (create-topic: is the metadata still writable?)."""
    steps = history.faults.filter(pl.col("family") == Family.QUORUM_CHANGE)
    if steps.is_empty():
        return None
    by_id = {f["fault_id"]: f for f in per_fault}
    ops = history.admin.filter(pl.col("f") == Op.CREATE_TOPIC)
    creates = (
        ops.filter(pl.col("type") == OpType.INVOKE)
        .select("id", pl.col("time_ns").alias("invoke_ns"))
        .join(ops.filter(pl.col("type") != OpType.INVOKE).select("id", "type"), on="id", how="left")
        .sort("invoke_ns")
    )

    def created_after(stop_ns: int | None) -> str | None:
        if stop_ns is None:
            return None
        later = creates.filter(pl.col("invoke_ns") > stop_ns).head(1)
        return (later["type"][0] or "info") if later.height else None

    listed = [
        {
            "fault_id": row["fault_id"],
            "change": row["fault"],
            "nodes": row["nodes"],
            "description": row["role"],
            "completed": row["stop_ns"] is not None,
            "error": row["error"],
            "wall_ms": round((row["stop_ns"] - row["start_ns"]) / NS_PER_MS, 1) if row["stop_ns"] is not None else None,
            "acknowledged_during": by_id.get(row["fault_id"], {}).get("acknowledged_during"),
            "new_controller_ms": by_id.get(row["fault_id"], {}).get("new_controller_ms"),
            "topic_created_after": created_after(row["stop_ns"]),
        }
        for row in steps.iter_rows(named=True)
    ]
    return {
        "completed": all(s["completed"] for s in listed),
        "changes": len(listed),
        "topics_created_after": sum(1 for s in listed if s["topic_created_after"] == OpType.OK),
        "by_change": listed,
    }


def _feature_flips(faults: pl.DataFrame) -> list[dict] | None:
    """Each feature level finalized mid-run (set-feature windows): what, whether Kafka took it, how long it took."""
    steps = faults.filter(pl.col("family") == Family.FEATURE_FLIP)
    if steps.is_empty():
        return None
    return [
        {
            "fault_id": row["fault_id"],
            "description": row["role"],
            "completed": row["stop_ns"] is not None,
            "error": row["error"],
            "wall_ms": round((row["stop_ns"] - row["start_ns"]) / NS_PER_MS, 1) if row["stop_ns"] is not None else None,
        }
        for row in steps.iter_rows(named=True)
    ]


def _reassignment(faults: pl.DataFrame, per_fault: list[dict]) -> dict | None:
    """Brokers added and partitions moved (add-broker, reassign-partitions windows): whether each completed, its wall
    time (a move: from --execute until its replicas are in force and in the ISR), the writes acknowledged during it,
    and the faults that started while a move was under way (a broker killed mid-move)."""
    steps = faults.filter(pl.col("family") == Family.REASSIGNMENT)
    if steps.is_empty():
        return None
    by_id = {f["fault_id"]: f for f in per_fault}
    others = faults.filter(pl.col("family") != Family.REASSIGNMENT)

    def faults_during(row: dict) -> list[str]:
        stop = row["stop_ns"] if row["stop_ns"] is not None else float("inf")
        hit = others.filter((pl.col("start_ns") >= row["start_ns"]) & (pl.col("start_ns") <= stop))
        return [f"{f['fault']} of {', '.join(map(str, f['nodes'] or []))}" for f in hit.iter_rows(named=True)]

    listed = [
        {
            "fault_id": row["fault_id"],
            "step": row["fault"],
            "nodes": row["nodes"],
            "description": row["role"],
            "completed": row["stop_ns"] is not None,
            "error": row["error"],
            "wall_ms": _wall_ms(row),
            "acknowledged_during": by_id.get(row["fault_id"], {}).get("acknowledged_during"),
            "faults_during": faults_during(row),
        }
        for row in steps.iter_rows(named=True)
    ]
    moves = [s for s in listed if s["step"] == "reassign-partitions"]
    return {
        "completed": all(s["completed"] for s in listed),
        "brokers_added": sum(1 for s in listed if s["step"] == "add-broker" and s["completed"]),
        "moves": len(moves),
        "moves_completed": sum(1 for s in moves if s["completed"]),
        "move_ms": max((s["wall_ms"] for s in moves if s["wall_ms"] is not None), default=None),
        "faults_during_moves": sum(len(s["faults_during"]) for s in moves),
        "by_step": listed,
    }
