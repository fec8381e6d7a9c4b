"""``progress.jsonl``: one line per finished micro-batch of each query, in the contract's words."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from failsafe.pipeline.sink import PROGRESS_FILE, read_progress


def progress_line(query: str, progress: dict) -> dict:
    """The fields failsafe keeps from Spark's StreamingQueryProgress."""
    state_ops = progress.get("stateOperators") or []
    sources = progress.get("sources") or []
    end_offsets = _offsets(sources[0].get("endOffset")) if sources else None
    start_offsets = _offsets(sources[0].get("startOffset")) if sources else None
    return {
        "query": query,
        "batch_id": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "num_input_rows": progress.get("numInputRows", 0),
        "input_rows_per_second": progress.get("inputRowsPerSecond"),
        "processed_rows_per_second": progress.get("processedRowsPerSecond"),
        "duration_ms": progress.get("durationMs") or {},
        "watermark": (progress.get("eventTime") or {}).get("watermark"),
        "rows_dropped_by_watermark": sum(op.get("numRowsDroppedByWatermark", 0) for op in state_ops),
        "state_rows": sum(op.get("numRowsTotal", 0) for op in state_ops) if state_ops else None,
        "state_partitions": sum(op.get("numShufflePartitions", 0) for op in state_ops) if state_ops else None,
        "start_offsets": start_offsets,
        "end_offsets": end_offsets,
    }


def _offsets(offsets: object) -> dict | None:
    """A source's offsets as Spark reports them (a JSON string or an object; none before the first batch)."""
    return json.loads(offsets) if isinstance(offsets, str) else offsets if isinstance(offsets, dict) else None


Annotate = Callable[[str, dict], dict]


class ProgressLog:
    """Appends each query's new progress reports once, in batch order.

    ``annotate(query, line)`` adds fields Spark's report lacks to a line of a batch that read something
    (where the sales query's state partitions are: state_census.py).
    """

    def __init__(self, output_dir: Path, annotate: Annotate | None = None) -> None:
        output_dir.mkdir(parents=True, exist_ok=True)
        self.path = output_dir / PROGRESS_FILE
        self.annotate = annotate
        self._seen: set[tuple[str, int, bool]] = set()

    def record_new(self, query: str, reports: Iterable[dict]) -> list[dict]:
        new = []
        for report in reports:
            line = progress_line(query, dict(report))
            # One line per batch, except that an idle report (Spark repeats the next batch id while no
            # data comes) is followed by the batch's own report once it ran.
            key = (query, line["batch_id"], bool(line["num_input_rows"]))
            if key in self._seen or (query, line["batch_id"], True) in self._seen:
                continue
            self._seen.add(key)
            if self.annotate is not None and line["num_input_rows"]:
                line |= self.annotate(query, line)
            new.append(line)
        if new:
            with open(self.path, "a", encoding="utf-8") as f:
                for line in new:
                    f.write(json.dumps(line) + "\n")
        return new


def latest_by_query(output_dir: Path) -> dict[str, dict]:
    """The last progress line of each query so far (a line being written is not one yet)."""
    return {line["query"]: line for line in read_progress(output_dir)}
