"""What each fault cost the transactional writers: how long until a transaction committed again.

For each fault (history.faults) and each writer (a process with transactions), measured from the
moment the fault was in force (its in_force_ns, else its start):

    first_commit_ms        until the first commit that completed after it (a transaction begun
                           before the fault may be that one)
    first_new_commit_ms    until the first commit of a transaction begun after it
    longest_gap_ms         the longest time without a completed commit, over the fault's window
                           and until that first new commit (the writer's transactional unavailability)

null when the writer committed nothing more after the fault (killed, or the run ended first). Pure.
"""

from __future__ import annotations

import polars as pl

from failsafe.history.model import History
from failsafe.history.ops import OpType


def commit_times(history: History) -> list[dict]:
    """One entry per fault: its id, type, nodes and role, and per writer the three durations above (ms)."""
    commits = (
        history.txns.filter(pl.col("outcome") == OpType.OK)
        .select("process", "invoke_ns", "complete_ns")
        .sort("complete_ns")
    )
    writers = sorted(history.txns["process"].unique().drop_nulls().to_list())
    out = []
    for fault in history.faults.sort("start_ns").iter_rows(named=True):
        at = fault["in_force_ns"] if fault["in_force_ns"] is not None else fault["start_ns"]
        until = fault["stop_ns"] if fault["stop_ns"] is not None else at
        per_writer = {}
        for writer in writers:
            mine = commits.filter(pl.col("process") == writer)
            per_writer[writer] = _writer(mine, at, until)
        out.append(
            {
                "fault_id": fault["fault_id"],
                "fault": fault["fault"],
                "nodes": fault["nodes"],
                "role": fault["role"],
                "writers": per_writer,
            }
        )
    return out


def _writer(commits: pl.DataFrame, at: int, until: int) -> dict:
    after = commits.filter(pl.col("complete_ns") > at)
    new = after.filter(pl.col("invoke_ns") > at)
    first = after["complete_ns"].min()
    first_new = new["complete_ns"].min()
    gap = None
    if first_new is not None:
        # Commit completions from the last one before the fault to the first new one (or to the heal, if later): the
        # widest gap.
        before = commits.filter(pl.col("complete_ns") <= at)["complete_ns"].max()
        end = max(first_new, until)
        moments = [
            at if before is None else before,
            *commits.filter(pl.col("complete_ns").is_between(at, end, closed="right"))["complete_ns"],
        ]
        gap = max(b - a for a, b in zip(moments, moments[1:], strict=False)) if len(moments) > 1 else None
    return {
        "first_commit_ms": _ms(first, at),
        "first_new_commit_ms": _ms(first_new, at),
        "longest_gap_ms": None if gap is None else round(gap / 1e6, 1),
    }


def _ms(ns: int | None, at: int) -> float | None:
    return None if ns is None else round((ns - at) / 1e6, 1)
