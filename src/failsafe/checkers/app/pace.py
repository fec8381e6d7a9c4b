"""How long the app kept its input waiting, from the records' own timestamps: measured beside the verdict, never judged.
Pure.

    latency   (each) for every acknowledged input record carried to the output: from its send (the input producer's
              call) to the timestamp of its first output copy, p50, p99 and max in ms
    pauses    every stretch of ``PAUSE_MIN_MS`` or more in which the app wrote no output while its input was being
              acknowledged: what a rebalance of its group, a restart of an instance or a coordinator's loss costs the
              app's readers, with the faults in force during it

Only output records the broker stamped are measured (``message.timestamp.type`` LogAppendTime, which the app kind
gives its output topics unless a scenario sets it): a producer's own timestamp (CreateTime) need not be when it wrote,
and Kafka Streams gives an output record its input's timestamp. An append time is when the broker wrote the record: for
a transactional app, before its transaction committed and a read_committed reader could see it, so a transaction's
commit adds its own wait to what is measured here. The brokers' clock is failsafe's on one machine; on hosts, each
broker's own.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from failsafe.history.model import History
from failsafe.history.ops import OpType

PAUSE_MIN_MS = 1000
LOG_APPEND_TIME = "LogAppendTime"
MAX_PAUSES = 10


def pace(history: History, inputs: list[str], outputs: list[str], identity: pl.Expr | None) -> dict[str, Any]:
    """The app's pauses (and with ``identity``, the each contract's, its latency) in a run, as described above."""
    acked = history.sends.filter(pl.col("topic").is_in(inputs) & (pl.col("outcome") == OpType.OK))
    output = history.log.filter(pl.col("topic").is_in(outputs))
    written = (
        output.filter(pl.col("timestamp_ms").is_not_null() & (pl.col("timestamp_type") == LOG_APPEND_TIME))
        .select("timestamp_ms", "key", "value", "headers")
        .sort("timestamp_ms")
    )
    if written.height == 0 and output.height > 0:
        return {"measured": False, "why": "no output record has a broker's timestamp (LogAppendTime)"}
    out: dict[str, Any] = {"pause-min-ms": PAUSE_MIN_MS, **_pauses(history, acked, written)}
    if identity is not None:
        out["latency-ms"] = _latency(acked, written, identity)
    return out


def _pauses(history: History, acked: pl.DataFrame, written: pl.DataFrame) -> dict[str, Any]:
    if written.height < 2 or acked.height == 0:
        return {"pauses": [], "longest-pause-ms": None}
    zero_ns = int(acked["invoke_ns"].min())
    times = written.select(pl.col("timestamp_ms").alias("from_ms"), pl.col("timestamp_ms").shift(-1).alias("to_ms"))
    gaps = times.drop_nulls().filter(pl.col("to_ms") - pl.col("from_ms") >= PAUSE_MIN_MS)
    # Input waiting: an acknowledged input record sent within the gap, which the app did not carry to the output yet.
    sent_ms = (acked["invoke_ns"] // 1_000_000).sort()
    pauses = []
    for from_ms, to_ms in gaps.iter_rows():
        first = sent_ms.search_sorted(from_ms, side="right")
        if first >= len(sent_ms) or sent_ms[first] >= to_ms:
            continue
        pauses.append(
            {
                "ms": to_ms - from_ms,
                "at_s": round((from_ms * 1_000_000 - zero_ns) / 1e9, 2),
                "faults": _faults_during(history.faults, from_ms * 1_000_000, to_ms * 1_000_000),
            }
        )
    longest = sorted(pauses, key=lambda p: -p["ms"])
    return {
        "pauses": sorted(longest[:MAX_PAUSES], key=lambda p: p["at_s"]),
        "pauses-found": len(pauses),
        "longest-pause-ms": longest[0]["ms"] if longest else 0,
    }


def _faults_during(faults: pl.DataFrame, from_ns: int, to_ns: int) -> list[str]:
    """The faults in force at some time in [from_ns, to_ns]: FAULT NODES, in the order they started."""
    began = pl.coalesce("in_force_ns", "start_ns")
    during = faults.filter((began <= to_ns) & (pl.col("stop_ns").is_null() | (pl.col("stop_ns") >= from_ns)))
    return [
        f"{fault} {','.join(nodes or [])}".strip()
        for fault, nodes in during.sort("start_ns").select("fault", "nodes").iter_rows()
    ]


def _latency(acked: pl.DataFrame, written: pl.DataFrame, identity: pl.Expr) -> dict[str, Any] | None:
    firsts = written.with_columns(identity.alias("identity")).group_by("identity").agg(pl.col("timestamp_ms").min())
    carried = acked.join(firsts, left_on="value", right_on="identity", how="inner").select(
        (pl.col("timestamp_ms") - pl.col("invoke_ns") // 1_000_000).alias("ms")
    )
    if carried.height == 0:
        return None
    ms = carried["ms"]
    return {
        "records": carried.height,
        "p50": int(ms.quantile(0.5, "nearest")),
        "p99": int(ms.quantile(0.99, "nearest")),
        "max": int(ms.max()),
    }
