"""The sales query's state: running totals per (window, product), the watermark, one file per micro-batch.

The pipeline reads ``demo.purchases`` once, in one stateless streaming query, and its
``foreachBatch`` sink does both outputs (dead letters and sales): Spark cannot hand one read to a
stateful aggregation and to a second sink. The windowed sum that Spark's state store kept is kept
here instead, with Spark's semantics for a windowed aggregation in update mode
(tests/pipeline/test_streaming_watermark.py runs both on the same batches):

- the watermark of batch N is the newest event time of the batches before N minus the delay
  (0, the epoch, before any data);
- a purchase is late, dropped and counted, if its window ended at or before the watermark of
  batch N-1 (Spark 3.4+ drops late rows by the previous batch's watermark, SPARK-40925);
- batch N emits, for every (window, product) it touched, the cumulative total so far;
- after batch N, windows that ended at or before its watermark leave the state.

Spark also runs a *no-data batch* when its watermark moves while no data arrives, which makes
the next data batch drop by the newer watermark; a stateless query never runs one. The rules here
are Spark's with ``spark.sql.streaming.noDataMicroBatches.enabled=false``: when a live stream
pauses, Spark may drop a purchase that this state still counts, never the other way round.

Exactly-once: batch N reads the state of the newest batch before N and writes ``N.json``; a
replay of N reads the same state and, with the same offsets, computes the same rows and the same
file. The arithmetic here is pure; reading and writing the files is ``SalesStateStore``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

STATE_VERSION = 2
KEEP_FILES = 10
_STATE_FILE = re.compile(r"(\d+)\.json")


@dataclass(frozen=True)
class WindowTotals:
    """One (window, product) row: a micro-batch's sums, or the running totals kept in the state."""

    window_start_us: int
    window_end_us: int
    product_id: str
    product_name: str
    category: str
    purchases: int
    quantity: int
    revenue: Decimal
    member_purchases: int

    @property
    def key(self) -> tuple[int, str]:
        return self.window_start_us, self.product_id

    @property
    def member_share(self) -> float:
        return self.member_purchases / self.purchases

    def plus(self, more: WindowTotals) -> WindowTotals:
        return replace(self, purchases=self.purchases + more.purchases, quantity=self.quantity + more.quantity,
                       revenue=self.revenue + more.revenue, member_purchases=self.member_purchases + more.member_purchases)


@dataclass(frozen=True)
class BatchTotals:
    """A micro-batch's purchases summed per (window, product), with the newest event time among them."""

    totals: WindowTotals
    max_event_time_us: int


@dataclass(frozen=True)
class SalesState:
    """What the next batch starts from: its watermark, the one late purchases are judged by, the open windows."""

    watermark_us: int = 0  # the next batch's: newest event time so far minus the delay
    late_watermark_us: int = 0  # the last batch's watermark: a window that ended by it is closed
    totals: dict[tuple[int, str], WindowTotals] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchResult:
    state: SalesState
    updated: list[WindowTotals]  # the rows batch N emits, in key order
    late_purchases: int  # dropped: their window had ended by the previous batch's watermark


def apply_batch(state: SalesState, batch: Iterable[BatchTotals], watermark_delay_us: int) -> BatchResult:
    """Batch N's sums added to the state of the batches before it (the module docstring has the rules)."""
    watermark, closed_by = state.watermark_us, state.late_watermark_us
    totals = dict(state.totals)
    touched: set[tuple[int, str]] = set()
    late = 0
    max_event: int | None = None
    for row in batch:
        max_event = row.max_event_time_us if max_event is None else max(max_event, row.max_event_time_us)
        sums = row.totals
        if sums.window_end_us <= closed_by:
            late += sums.purchases
            continue
        totals[sums.key] = totals[sums.key].plus(sums) if sums.key in totals else sums
        touched.add(sums.key)
    updated = [totals[key] for key in sorted(touched)]
    kept = {key: row for key, row in totals.items() if row.window_end_us > watermark}
    next_watermark = watermark if max_event is None else max(watermark, max_event - watermark_delay_us)
    return BatchResult(SalesState(next_watermark, watermark, kept), updated, late)


def state_to_json(state: SalesState, batch_id: int) -> str:
    rows = [[t.window_start_us, t.window_end_us, t.product_id, t.product_name, t.category, t.purchases, t.quantity,
             str(t.revenue), t.member_purchases] for t in sorted(state.totals.values(), key=lambda t: t.key)]
    return json.dumps({"version": STATE_VERSION, "batch_id": batch_id, "watermark_us": state.watermark_us,
                       "late_watermark_us": state.late_watermark_us, "totals": rows})


def state_from_json(text: str, where: str) -> SalesState:
    data = json.loads(text)
    if data.get("version") != STATE_VERSION:
        raise ValueError(f"{where}: sales state version {data.get('version')!r}, this failsafe reads {STATE_VERSION}")
    totals = [WindowTotals(int(a), int(b), c, d, e, int(f), int(g), Decimal(h), int(i)) for a, b, c, d, e, f, g, h, i in data["totals"]]
    return SalesState(int(data["watermark_us"]), int(data["late_watermark_us"]), {t.key: t for t in totals})


class SalesStateStore:
    """``DIR/N.json``: the state after batch N, written whole by rename; the newest few are kept."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def before(self, batch_id: int) -> SalesState:
        """The state batch ``batch_id`` starts from: that of the newest batch before it (empty before batch 0)."""
        found = [n for n in self._batches() if n < batch_id]
        if not found:
            if batch_id > 0:
                raise ValueError(f"no sales state before batch {batch_id} in {self.directory}: the checkpoint was not "
                                 "written by this pipeline (an older failsafe kept the state in Spark); "
                                 "delete the checkpoint and the output to start over")
            return SalesState()
        path = self.directory / f"{max(found)}.json"
        return state_from_json(path.read_text(encoding="utf-8"), str(path))

    def write(self, batch_id: int, state: SalesState) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{batch_id}.json.tmp"
        tmp.write_text(state_to_json(state, batch_id), encoding="utf-8")
        os.replace(tmp, self.directory / f"{batch_id}.json")
        for old in self._batches():
            if old <= batch_id - KEEP_FILES:
                (self.directory / f"{old}.json").unlink(missing_ok=True)

    def _batches(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(m.group(1)) for p in self.directory.iterdir() if (m := _STATE_FILE.fullmatch(p.name)))


_UNITS_US = {"microsecond": 1, "millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000, "hour": 3_600_000_000,
             "day": 86_400_000_000, "week": 7 * 86_400_000_000}
_INTERVAL_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", re.IGNORECASE)


def interval_us(text: str) -> int:
    """A delay as Spark writes it for ``withWatermark`` ("2 minutes", "1 hour 30 minutes", "10 seconds") in microseconds."""
    total, position = 0.0, 0
    while position < len(text):
        match = _INTERVAL_PART.match(text, position)
        unit = match.group(2).lower().removesuffix("s") if match else ""
        if unit not in _UNITS_US:
            raise ValueError(f"{text!r} is not a delay such as '2 minutes' or '1 hour 30 minutes' "
                             f"(units: {', '.join(f'{unit}s' for unit in _UNITS_US)})")
        total += float(match.group(1)) * _UNITS_US[unit]
        position = match.end()
    if not text.strip():
        raise ValueError("the watermark delay is empty: give one such as '2 minutes'")
    return int(total)
