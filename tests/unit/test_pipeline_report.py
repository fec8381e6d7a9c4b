"""report.html of a pipeline run, from hand-written progress lines, commits, ledger rows and history."""

from __future__ import annotations

import datetime as dt

import polars as pl

from failsafe.history.load import history_from_ops
from failsafe.reports.pipeline_report import batch_frame, latency_frame, record_latencies, render_pipeline_html

T0 = dt.datetime(2026, 11, 24, 2, 0, tzinfo=dt.UTC)
T0_NS = int(T0.timestamp() * 1e9)
TOPIC = "demo.purchases"


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def line(
    query: str,
    batch_id: int,
    start_s: float,
    rows: int,
    ends: dict[str, int] | None,
    duration_ms: int = 500,
    state_rows: int | None = 7,
) -> dict:
    return {
        "query": query,
        "batch_id": batch_id,
        "timestamp": at(start_s),
        "num_input_rows": rows,
        "input_rows_per_second": rows / 2,
        "processed_rows_per_second": rows / (duration_ms / 1000),
        "duration_ms": {"triggerExecution": duration_ms},
        "rows_dropped_by_watermark": 0,
        "state_rows": state_rows,
        "end_offsets": {TOPIC: ends} if ends else None,
    }


PROGRESS = [
    line("sales-by-product", 0, 0.0, 0, None),
    line("sales-by-product", 1, 2.0, 4, {"0": 3, "1": 1}),
    line("dead-letters", 0, 2.0, 4, {"0": 3, "1": 1}),
    line("sales-by-product", 2, 4.0, 2, {"0": 4, "1": 2}, duration_ms=1500),
]
# Batch 1 became visible 3 s after T0, batch 2 6 s after; batch 2 was written twice (a replay): the first write counts.
COMMITS = {1: T0.timestamp() + 3.0, 2: T0.timestamp() + 6.0}


def purchases(rows: list[tuple[int, int, float]]) -> pl.DataFrame:
    """(partition, offset, event time in seconds after T0) as ledger rows."""
    return pl.DataFrame(
        {
            "partition": [p for p, _, _ in rows],
            "offset": [o for _, o, _ in rows],
            "transaction_time": [T0.replace(tzinfo=None) + dt.timedelta(seconds=s) for _, _, s in rows],
        },
        schema={"partition": pl.Int32, "offset": pl.Int64, "transaction_time": pl.Datetime("us")},
    )


def test_batches_are_placed_when_they_finished_and_empty_ones_are_left_out() -> None:
    frame = batch_frame(PROGRESS, T0_NS)
    assert frame.select("query", "batch_id").rows() == [
        ("sales-by-product", 1),
        ("dead-letters", 0),
        ("sales-by-product", 2),
    ]
    assert frame["t_s"].to_list() == [2.5, 2.5, 5.5] and frame["duration_s"].to_list() == [0.5, 0.5, 1.5]
    assert frame["state_rows"].to_list() == [7, 7, 7]


def test_each_purchase_gets_the_commit_time_of_the_batch_that_first_covered_its_offset() -> None:
    ledger = purchases([(0, 0, 1.0), (0, 2, 2.5), (1, 0, 0.5), (0, 3, 3.0), (1, 1, 4.0), (0, 9, 5.0)])
    latencies = record_latencies(ledger, PROGRESS, COMMITS, TOPIC).sort("batch_id", "latency_s")
    # Offsets 0 and 2 of partition 0 and 0 of partition 1 are in batch 1 (ends 3 and 1); 3 and 1 in batch 2; offset 9 of
    # partition 0 was read by no batch, so it has no latency (the verdict, not the plot, says it is missing).
    assert latencies.rows() == [(1, 0.5), (1, 2.0), (1, 2.5), (2, 2.0), (2, 3.0)]
    per_batch = latency_frame(latencies, COMMITS, T0_NS)
    assert per_batch.select("batch_id", "t_s", "records", "p50_s", "max_s").rows() == [
        (1, 3.0, 3, 2.0, 2.5),
        (2, 6.0, 2, 2.5, 3.0),
    ]


def test_a_batch_not_yet_committed_gives_no_latency() -> None:
    latencies = record_latencies(purchases([(0, 0, 1.0), (0, 3, 3.0)]), PROGRESS, {1: COMMITS[1]}, TOPIC)
    assert latencies.rows() == [(1, 2.0)]


def history():
    return history_from_ops(
        [
            {"time_ns": T0_NS, "process": "runner", "type": "info", "f": "phase", "phase": "setup"},
            {
                "time_ns": T0_NS + 1_000_000_000,
                "process": "nemesis",
                "type": "info",
                "f": "fault-start",
                "fault_id": 1,
                "fault": "kill-spark-worker",
                "target": "spark-worker",
                "nodes": ["spark-worker-0"],
                "role": "spark worker",
            },
            {
                "time_ns": T0_NS + 4_000_000_000,
                "process": "nemesis",
                "type": "info",
                "f": "fault-stop",
                "fault_id": 1,
                "ok": True,
            },
            {"time_ns": T0_NS + 7_000_000_000, "process": "runner", "type": "info", "f": "phase", "phase": "drain"},
        ]
    )


RESULTS = {
    "valid": False,
    "scenario": "pipeline-executor-loss",
    "reasons": [],
    "pipeline": {"starts": 1, "unexpected_exits": [], "drained": True, "drain_s": 1.5},
    "verification": {"totals": {"ledger": {"purchases": 6}, "sink": {"purchases": 5}}},
}


def test_the_report_shows_verdict_totals_and_plots_and_refuses_latency_without_the_wall_clock() -> None:
    ledger = purchases([(0, 0, 1.0), (0, 2, 2.5), (1, 0, 0.5)])
    latencies = record_latencies(ledger, PROGRESS, COMMITS, TOPIC)
    page = render_pipeline_html(RESULTS, history(), PROGRESS, COMMITS, latencies, "wall")
    assert 'class="verdict INVALID"' in page and "pipeline-executor-loss" in page
    assert '<td>purchases</td><td class="num">6</td><td class="num">5</td>' in page
    assert page.count("<figure") == 4 and "latency p50 / p99 / max (s)</td><td>2.00 / 2.50 / 2.50" in page
    accelerated = render_pipeline_html(RESULTS, history(), PROGRESS, COMMITS, latencies, "accelerated")
    assert (
        "latency p50 / p99 / max (s)</td><td>n/a" in accelerated
        and "<td>event-time clock</td><td>accelerated</td>" in accelerated
    )


def test_the_report_shows_the_enriched_stream_only_when_the_run_had_it() -> None:
    latencies = record_latencies(purchases([(0, 0, 1.0)]), PROGRESS, COMMITS, TOPIC)
    enriched = {
        "valid": True,
        "allow_duplicates": True,
        "replayed": [{"batch_id": 7, "start": {}, "end": {}}],
        "counts": {
            "records": 5012,
            "acknowledged": 4800,
            "missing": 0,
            "duplicate": 212,
            "duplicate_in_replayed_batch": 212,
        },
    }
    page = render_pipeline_html(
        {**RESULTS, "checkers": {"enriched": enriched}}, history(), PROGRESS, COMMITS, latencies, "wall"
    )
    assert (
        "enriched stream (Spark&#x27;s Kafka sink)" in page
        and "from the batch run first after a restart (7)</td><td>212" in page
    )
    assert "enriched stream" not in render_pipeline_html(RESULTS, history(), PROGRESS, COMMITS, latencies, "wall")


def test_the_report_shows_the_published_totals_when_the_run_judged_them() -> None:
    latencies = record_latencies(purchases([(0, 0, 1.0)]), PROGRESS, COMMITS, TOPIC)
    published = {
        "valid": False,
        "publish": "exactly-once",
        "allow_duplicates": False,
        "counts": {"records": 90, "keys": 40, "lost_purchases": 0, "duplicate": 3, "stale_last": 0},
        "uncommitted": {"records": 96},
    }
    page = render_pipeline_html(
        {**RESULTS, "checkers": {"published": published}}, history(), PROGRESS, COMMITS, latencies, "wall"
    )
    assert "totals published to Kafka" in page and "<td>copies of a batch&#x27;s total</td><td>3" in page
    assert "<td>records read at read_uncommitted</td><td>96" in page
    assert "totals published to Kafka" not in render_pipeline_html(
        RESULTS, history(), PROGRESS, COMMITS, latencies, "wall"
    )
