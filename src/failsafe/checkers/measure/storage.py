"""What the brokers said of their own files during a run: a corruption's detection, never a verdict.

A node's log recovery and checkpoint reads name what they found wrong (history.ops.STORAGE_EVENTS, read from the
nodes' logs by cluster/observe/node_logs.py): a segment's bad batch, a log cut there, an index rebuilt, a checkpoint
that did not parse, a log directory taken offline. ``measure`` lists them, and for each disk fault (a corruption, a
failing disk) says which of them its nodes said from its start until ``AFTER_S`` after its stop, with the first line
quoted: whether Kafka detected the fault, what it did, and when (seconds after the fault began). Whether anything
acknowledged was lost is the durability and delivery checkers' to say.
"""

from __future__ import annotations

import polars as pl

from failsafe.history.model import History
from failsafe.history.ops import STORAGE_EVENTS, Family

AFTER_S = 30.0
_NS = 1_000_000_000


def measure(history: History) -> dict:
    events = history.node_events.filter(pl.col("event").is_in([str(e) for e in STORAGE_EVENTS])).sort("time_ns")
    start = history.faults["start_ns"].min() if history.faults.height else None
    t0 = start if start is not None else (events["time_ns"].min() if events.height else 0)
    listed = [
        {
            "node": row["node"],
            "event": row["event"],
            "topic": row["topic"],
            "partition": row["partition"],
            "at_s": round((row["time_ns"] - t0) / _NS, 3),
            "line": row["line"],
        }
        for row in events.iter_rows(named=True)
    ]
    return {"events": listed, "faults": _per_fault(history, events)}


def _per_fault(history: History, events: pl.DataFrame) -> list[dict]:
    out = []
    for fault in history.faults.filter(pl.col("family") == str(Family.DISK)).iter_rows(named=True):
        nodes = [int(n) for n in fault["nodes"] or [] if str(n).lstrip("-").isdigit()]
        acted = fault["start_ns"]
        until = (fault["stop_ns"] if fault["stop_ns"] is not None else events["time_ns"].max() or acted) + int(
            AFTER_S * _NS
        )
        said = events.filter(pl.col("node").is_in(nodes) & pl.col("time_ns").is_between(acted, until))
        kinds = said.group_by("event").len().sort("event")
        first = said.head(1)
        out.append(
            {
                "fault_id": fault["fault_id"],
                "fault": fault["fault"],
                "nodes": nodes,
                "detected": said.height > 0,
                "events": dict(zip(kinds["event"].to_list(), kinds["len"].to_list(), strict=True)),
                "first_s": round((first["time_ns"].item() - acted) / _NS, 3) if first.height else None,
                "first_line": first["line"].item() if first.height else None,
            }
        )
    return out
