"""The plotted quantities, aggregated in polars so that a history of millions of ops plots in seconds.

Every time is returned in seconds since the run's first recorded event (``Timeline.t0_ns``).
The exact definitions are in docs/reports.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from failsafe.history.ops import OpType

if TYPE_CHECKING:
    from failsafe.history.model import History

NS_PER_S = 1_000_000_000
# Bins small enough to show a failover of a few seconds, few enough (at most MAX_BINS) to plot fast.
BIN_CHOICES_NS = (100_000_000, 1_000_000_000, 10_000_000_000, 60_000_000_000)
MAX_BINS = 1500
_TIME_COLUMNS = (
    ("sends", "invoke_ns"),
    ("sends", "complete_ns"),
    ("reads", "time_ns"),
    ("faults", "start_ns"),
    ("faults", "stop_ns"),
    ("topology", "time_ns"),
    ("topology_errors", "time_ns"),
    ("phases", "time_ns"),
    ("membership", "time_ns"),
    ("client_events", "time_ns"),
    ("txns", "invoke_ns"),
    ("txns", "complete_ns"),
)


@dataclass(frozen=True)
class Timeline:
    t0_ns: int
    end_ns: int
    bin_ns: int

    @property
    def end_s(self) -> float:
        return (self.end_ns - self.t0_ns) / NS_PER_S

    @property
    def bin_s(self) -> float:
        return self.bin_ns / NS_PER_S


def _frame(history: History, name: str) -> pl.DataFrame | None:
    frame = getattr(history, name, None)
    return frame if isinstance(frame, pl.DataFrame) else None


def timeline(history: History) -> Timeline | None:
    """The span of the history (first to last event) and the bin width for rates; None when it is empty."""
    lows, highs = [], []
    for name, column in _TIME_COLUMNS:
        frame = _frame(history, name)
        if frame is None or column not in frame.columns or frame.is_empty():
            continue
        low, high = frame.select(pl.col(column).min().alias("low"), pl.col(column).max().alias("high")).row(0)
        if low is not None:
            lows.append(low)
            highs.append(high)
    if not lows:
        return None
    t0, end = min(lows), max(highs)
    span = max(end - t0, 1)
    bin_ns = next((b for b in BIN_CHOICES_NS if span / b <= MAX_BINS), BIN_CHOICES_NS[-1])
    return Timeline(t0, end, bin_ns)


def _every_bin(tl: Timeline) -> pl.LazyFrame:
    last = (tl.end_ns - tl.t0_ns) // tl.bin_ns
    return pl.LazyFrame({"bin": pl.int_range(0, last + 1, eager=True, dtype=pl.Int64)})


def _seconds(column: str, tl: Timeline) -> pl.Expr:
    return (pl.col(column) - tl.t0_ns) / NS_PER_S


def send_rates(history: History, tl: Timeline) -> pl.DataFrame:
    """Sends completed per second, by outcome, in every bin from the first to the last (empty bins are 0).

    Columns: ``t_s`` (bin start), ``acknowledged``, ``failed``, ``unknown``.
    """
    sends = history.sends
    if sends.is_empty():
        return pl.DataFrame(
            schema={"t_s": pl.Float64, "acknowledged": pl.Float64, "failed": pl.Float64, "unknown": pl.Float64}
        )
    outcome = pl.col("outcome")
    binned = (
        sends.lazy()
        .select(
            bin=(pl.coalesce("complete_ns", "invoke_ns") - tl.t0_ns) // tl.bin_ns,
            acknowledged=(outcome == OpType.OK).fill_null(False),
            failed=(outcome == OpType.FAIL).fill_null(False),
            unknown=(outcome == OpType.INFO).fill_null(True),
        )
        .drop_nulls("bin")
        .group_by("bin")
        .agg(pl.col("acknowledged", "failed", "unknown").sum())
    )
    return (
        _every_bin(tl)
        .join(binned, on="bin", how="left")
        .select(
            t_s=pl.col("bin") * tl.bin_s,
            **{c: pl.col(c).fill_null(0).cast(pl.Float64) / tl.bin_s for c in ("acknowledged", "failed", "unknown")},
        )
        .sort("t_s")
        .collect()
    )


def latency(history: History, tl: Timeline) -> pl.DataFrame:
    """End-to-end latency per bin of poll time: p50, p99 and max in ms, and how many reads.

    One sample per read record: the poll's ``time_ns`` minus the ``invoke_ns`` of the send of the
    same value (the earliest, if a value was sent twice). Reads of values no send produced are ignored.
    """
    schema = {"t_s": pl.Float64, "p50_ms": pl.Float64, "p99_ms": pl.Float64, "max_ms": pl.Float64, "reads": pl.UInt32}
    reads, sends = history.reads, history.sends
    if reads.is_empty() or sends.is_empty():
        return pl.DataFrame(schema=schema)
    # Bins without a read stay in, as nulls, so the plotted line breaks where consumption stopped.
    sent = (
        sends.lazy()
        .filter(pl.col("value").is_not_null() & pl.col("invoke_ns").is_not_null())
        .group_by("value")
        .agg(pl.col("invoke_ns").min())
    )
    binned = (
        reads.lazy()
        .filter(pl.col("value").is_not_null())
        .select("value", "time_ns")
        .join(sent, on="value", how="inner")
        .select(bin=(pl.col("time_ns") - tl.t0_ns) // tl.bin_ns, ms=(pl.col("time_ns") - pl.col("invoke_ns")) / 1e6)
        .group_by("bin")
        .agg(
            p50_ms=pl.col("ms").quantile(0.5, interpolation="nearest"),
            p99_ms=pl.col("ms").quantile(0.99, interpolation="nearest"),
            max_ms=pl.col("ms").max(),
            reads=pl.len(),
        )
        .collect()
    )
    if binned.is_empty():
        return pl.DataFrame(schema=schema)
    return (
        _every_bin(tl)
        .join(binned.lazy(), on="bin", how="left")
        .select(
            (pl.col("bin") * tl.bin_s + tl.bin_s / 2).alias("t_s"),
            "p50_ms",
            "p99_ms",
            "max_ms",
            pl.col("reads").fill_null(0),
        )
        .sort("t_s")
        .collect()
        .cast(schema)
    )


def _partition_label() -> pl.Expr:
    return pl.format("{}-{}", pl.col("topic"), pl.col("partition")).alias("label")


def partitions(history: History) -> list[str]:
    """Every partition in the topology samples as ``topic-partition``, sorted by topic then partition number."""
    topo = history.topology
    if topo.is_empty():
        return []
    return (
        topo.select("topic", "partition")
        .unique()
        .sort("topic", "partition")
        .select(_partition_label())["label"]
        .to_list()
    )


def _runs(history: History, tl: Timeline, value: pl.Expr) -> pl.DataFrame:
    """Run-length encode ``value`` per partition over the topology samples.

    Columns: ``label``, ``value``, ``start_s``, ``end_s``. A run lasts from the sample where the value
    appeared to the sample where it changed, the last run to the partition's last sample.
    """
    topo = history.topology
    if topo.is_empty():
        return pl.DataFrame(schema={"label": pl.String, "value": pl.Int64, "start_s": pl.Float64, "end_s": pl.Float64})
    by = ("topic", "partition")
    return (
        topo.lazy()
        .select(*by, "time_ns", value=value.cast(pl.Int64))
        .sort(*by, "time_ns")
        .with_columns(
            last_ns=pl.col("time_ns").max().over(by),
            prev=pl.col("value").shift(1).over(by),
            first=pl.col("time_ns") == pl.col("time_ns").min().over(by),
        )
        .filter(pl.col("first") | (pl.col("value") != pl.col("prev")))
        .with_columns(next_ns=pl.col("time_ns").shift(-1).over(by))
        .select(
            _partition_label(),
            "value",
            start_s=_seconds("time_ns", tl),
            end_s=(pl.coalesce("next_ns", "last_ns") - tl.t0_ns) / NS_PER_S,
        )
        .collect()
    )


def leader_runs(history: History, tl: Timeline) -> pl.DataFrame:
    """Who led each partition when: ``value`` is the leader's broker id, -1 while it had no leader."""
    return _runs(history, tl, pl.col("leader").fill_null(-1))


def isr_runs(history: History, tl: Timeline) -> pl.DataFrame:
    """The number of in-sync replicas of each partition over time (``value``)."""
    return _runs(history, tl, pl.col("isr").list.len().fill_null(0))


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float
    label: str
    open: bool  # never stopped: shaded to the end of the history


def fault_windows(history: History, tl: Timeline) -> list[Window]:
    faults = history.faults
    if faults.is_empty():
        return []
    windows = []
    for row in faults.sort("start_ns").iter_rows(named=True):
        if row.get("start_ns") is None:
            continue
        nodes = row.get("nodes") or []
        # A fault type that its nodes do not name says how to draw it in its fault-start (a network fault: its sides,
        # "#1 isolate {1} | {1000,0,2}"); the others are named by their nodes.
        drawn = row.get("label") or ",".join(str(n) for n in nodes)
        label = f"#{row.get('fault_id')} {row.get('fault') or 'fault'} {drawn}".strip()
        stop = row.get("stop_ns")
        windows.append(
            Window(
                (row["start_ns"] - tl.t0_ns) / NS_PER_S,
                ((stop if stop is not None else tl.end_ns) - tl.t0_ns) / NS_PER_S,
                label,
                stop is None,
            )
        )
    return windows


def phase_marks(history: History, tl: Timeline) -> list[tuple[float, str]]:
    phases = history.phases
    if phases.is_empty():
        return []
    return [
        ((t - tl.t0_ns) / NS_PER_S, str(name))
        for name, t in phases.sort("time_ns").select("phase", "time_ns").iter_rows()
        if t is not None
    ]
