"""The enriched purchase stream of a pipeline scenario (``[pipeline] enriched = true``): its checker's inputs.

The workload reads the enriched topic back into the history (``log-read`` ops) once the pipeline has
stopped; this module takes that, the ledger's acknowledged purchases and the query's progress log to
``checkers.enriched``: which batch the query ran first after each restart of the pipeline is read from
the progress lines (Spark's trigger time) against the history's ``pipeline-start`` ops.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from failsafe.checkers.pipeline import enriched
from failsafe.history.model import History
from failsafe.history.ops import Op
from failsafe.pipeline.job import ENRICHED_QUERY, ENRICHED_TOPIC, RESULTS_PARTITIONS
from failsafe.pipeline.sink import read_progress
from failsafe.scenarios.kinds.pipeline.schema import PURCHASES_TOPIC

ENRICHED_PARTITIONS = RESULTS_PARTITIONS  # as `pipeline run --enriched-topic` creates it when missing


def replayed_batches(progress: list[dict], restarts_ns: list[int]) -> list[dict[str, Any]]:
    """For each restart, the first batch of the enriched query that read something and began after it: its source range.

    The range is Spark's own (``start_offsets`` to ``end_offsets``); a progress line written before failsafe kept the
    start takes the end of the batch logged before it. A line without a batch id, a time or offsets is left out."""
    lines = sorted(
        (
            line
            for line in progress
            if line.get("query") == ENRICHED_QUERY
            and isinstance(line.get("batch_id"), int)
            and isinstance(line.get("timestamp"), str)
            and isinstance(line.get("end_offsets"), dict)
        ),
        key=lambda line: line["batch_id"],
    )
    out = []
    for restart in restarts_ns:
        after = [line for line in lines if line.get("num_input_rows") and _ns(line["timestamp"]) >= restart]
        if not after:
            continue
        first = after[0]
        if isinstance(first.get("start_offsets"), dict):
            start = first["start_offsets"].get(PURCHASES_TOPIC, {})
        else:
            before = [line for line in lines if line["batch_id"] < first["batch_id"]]
            start = before[-1]["end_offsets"].get(PURCHASES_TOPIC, {}) if before else {}
        out.append(
            {
                "batch_id": first["batch_id"],
                "start": {str(p): int(o) for p, o in start.items()},
                "end": {str(p): int(o) for p, o in first["end_offsets"].get(PURCHASES_TOPIC, {}).items()},
            }
        )
    return out


def check_enriched(
    output: Path, ledger_purchases: pl.DataFrame, history: History, options: dict | None
) -> dict[str, Any]:
    """checkers.enriched over this run; a progress log that cannot be read leaves the copies unplaced, never the verdict
    unmade."""
    starts = history.events.filter(pl.col("f") == Op.PIPELINE_START).sort("time_ns")["time_ns"].to_list()
    try:
        replayed = replayed_batches(read_progress(output), starts[1:])
    except (OSError, ValueError) as e:
        replayed, placing = [], f"the copies are not placed: the progress log cannot be read ({e})"
    else:
        placing = None
    log = history.log.filter(pl.col("topic") == ENRICHED_TOPIC)
    failures = history.log_failures.filter(pl.col("topic") == ENRICHED_TOPIC)
    read_back = history.events.filter(pl.col("f") == Op.READ_BACK).height > 0
    result = enriched.check(ledger_purchases, log, failures, replayed, options, read_back=read_back)
    if placing:
        result["placing_error"] = placing
    return result


def _ns(timestamp: str) -> int:
    """Spark's progress timestamp (ISO 8601, UTC, 'Z') in nanoseconds since the epoch."""
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1_000_000_000)
