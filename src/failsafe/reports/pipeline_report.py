"""report.html of a pipeline run: the verdict, the ledger against the sink, and the streaming queries over time.

Pure in what it computes: it is handed the run's progress lines (one per micro-batch, from
``progress.jsonl``), the sink's commit times (``_commits.jsonl``), the ledger's purchases and the
history, and draws, with the lab report's time axis (faults shaded, phases marked):

- input and processing rate per micro-batch of each query (rows/s, Spark's own numbers);
- batch duration (Spark's ``triggerExecution``);
- end-to-end latency: for each acknowledged purchase, the time its batch was committed to the sink
  minus its event time. Only with the simulator's wall clock, where event time is send time; with the
  accelerated clock event time is simulated and the plot says so instead of drawing a wrong number;
- rows held in the windowed sum's state store.
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

import failsafe.reports.plots as plots
import failsafe.reports.series as series
from failsafe.reports.html import CSS, _badge, _json_details, _section, _table
from failsafe.reports.summary import fmt, verdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from failsafe.history.model import History

SALES_QUERY = "sales-by-product"
QUERY_COLOURS = {SALES_QUERY: "#1f77b4", "dead-letters": "#ff7f0e"}
QUERY_LABELS = {SALES_QUERY: "sales", "dead-letters": "dead letters"}
BATCH_COLUMNS = {
    "query": pl.String,
    "batch_id": pl.Int64,
    "t_s": pl.Float64,
    "input_rows": pl.Int64,
    "input_per_s": pl.Float64,
    "processed_per_s": pl.Float64,
    "duration_s": pl.Float64,
    "state_rows": pl.Int64,
    "dropped": pl.Int64,
}
LATENCY_COLUMNS = {
    "batch_id": pl.Int64,
    "t_s": pl.Float64,
    "records": pl.Int64,
    "p50_s": pl.Float64,
    "p99_s": pl.Float64,
    "max_s": pl.Float64,
}


def _epoch_ns(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1e9)


def batch_frame(progress: list[dict], t0_ns: int) -> pl.DataFrame:
    """One row per micro-batch that read something, at the time it finished (trigger start + triggerExecution)."""
    rows = []
    for line in progress:
        if not line.get("num_input_rows") or not line.get("timestamp"):
            continue
        duration_ms = (line.get("duration_ms") or {}).get("triggerExecution") or 0
        rows.append(
            {
                "query": line["query"],
                "batch_id": line["batch_id"],
                "t_s": (_epoch_ns(line["timestamp"]) - t0_ns) / 1e9 + duration_ms / 1000,
                "input_rows": line["num_input_rows"],
                "input_per_s": line.get("input_rows_per_second"),
                "processed_per_s": line.get("processed_rows_per_second"),
                "duration_s": duration_ms / 1000,
                "state_rows": line.get("state_rows"),
                "dropped": line.get("rows_dropped_by_watermark"),
            }
        )
    return pl.DataFrame(rows, schema=BATCH_COLUMNS)


def record_latencies(
    purchases: pl.DataFrame, progress: list[dict], commits: dict[int, float], topic: str
) -> pl.DataFrame:
    """Each ledger purchase's batch (the first sales batch whose end offset passed it) and its latency in seconds:
    the batch's commit time minus the purchase's event time. Purchases no committed batch covered are left out."""
    batches = sorted(
        (line["batch_id"], (line.get("end_offsets") or {}).get(topic) or {})
        for line in progress
        if line["query"] == SALES_QUERY and line.get("num_input_rows")
    )
    parts = []
    for partition, rows in purchases.select("partition", "offset", "transaction_time").group_by("partition"):
        covering = [(int(ends[str(partition[0])]), batch_id) for batch_id, ends in batches if str(partition[0]) in ends]
        if not covering:
            continue
        ends = np.array([end for end, _ in covering])
        ids = np.array([batch_id for _, batch_id in covering])
        at = np.searchsorted(ends, rows["offset"].to_numpy(), side="right")
        inside = at < len(ends)
        parts.append(
            pl.DataFrame(
                {"batch_id": ids[at[inside]], "event_us": rows["transaction_time"].dt.epoch("us").to_numpy()[inside]}
            )
        )
    if not parts:
        return pl.DataFrame(schema={"batch_id": pl.Int64, "latency_s": pl.Float64})
    committed = pl.DataFrame(
        {"batch_id": list(commits), "commit_s": list(commits.values())},
        schema={"batch_id": pl.Int64, "commit_s": pl.Float64},
    )
    return (
        pl.concat(parts)
        .with_columns(pl.col("batch_id").cast(pl.Int64))
        .join(committed, on="batch_id", how="inner")
        .select("batch_id", (pl.col("commit_s") - pl.col("event_us") / 1e6).alias("latency_s"))
    )


def latency_frame(latencies: pl.DataFrame, commits: dict[int, float], t0_ns: int) -> pl.DataFrame:
    """Per committed batch: when it was committed (seconds on the run's axis) and its records' latency p50 / p99 /
    max."""
    if latencies.is_empty():
        return pl.DataFrame(schema=LATENCY_COLUMNS)
    return (
        latencies.group_by("batch_id")
        .agg(
            pl.len().cast(pl.Int64).alias("records"),
            pl.col("latency_s").median().alias("p50_s"),
            pl.col("latency_s").quantile(0.99, "nearest").alias("p99_s"),
            pl.col("latency_s").max().alias("max_s"),
        )
        .with_columns(
            pl.col("batch_id").replace_strict(commits, default=None).cast(pl.Float64).sub(t0_ns / 1e9).alias("t_s")
        )
        .select(list(LATENCY_COLUMNS))
        .sort("batch_id")
    )


def _query_plot(
    title: str,
    ylabel: str,
    history: History,
    tl: series.Timeline | None,
    batches: pl.DataFrame,
    columns: list[tuple[str, str, str]],
) -> Figure:
    fig, ax = plots._figure(title, plots.MARGINS["left"])
    handles = plots._axis_or_no_data(ax, history, tl, batches)
    if handles is None:
        return fig
    for (query,), rows in batches.sort("t_s").group_by("query", maintain_order=True):
        for column, style, what in columns:
            ax.plot(
                rows["t_s"],
                rows[column],
                style,
                color=QUERY_COLOURS.get(query, "#555555"),
                markersize=3,
                linewidth=1.2,
                label=f"{QUERY_LABELS.get(query, query)} {what}".strip(),
            )
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    plots._legend(ax, handles)
    return fig


def _latency_plot(history: History, tl: series.Timeline | None, latency: pl.DataFrame, clock: str | None) -> Figure:
    fig, ax = plots._figure("end-to-end latency: committed to the sink minus event time", plots.MARGINS["left"])
    if clock != "wall":
        plots._no_data(
            ax,
            tl,
            f"event time is the {clock or 'unknown'} clock's, not send time: no latency to measure "
            "(run the simulator with --clock wall)",
        )
        return fig
    handles = plots._axis_or_no_data(ax, history, tl, latency)
    if handles is None:
        return fig
    for column, style in (("p50_s", "o-"), ("p99_s", "s--"), ("max_s", ":")):
        ax.plot(latency["t_s"], latency[column], style, markersize=3, linewidth=1.1, label=column.removesuffix("_s"))
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    plots._legend(ax, handles)
    return fig


def render_pipeline_html(
    results: dict[str, Any],
    history: History,
    progress: list[dict],
    commits: dict[int, float],
    latencies: pl.DataFrame,
    clock: str | None,
    scenario: dict | None = None,
) -> str:
    tl = series.timeline(history)
    t0_ns = tl.t0_ns if tl is not None else 0
    batches = batch_frame(progress, t0_ns)
    latency = latency_frame(latencies, commits, t0_ns)
    word = verdict(results.get("valid"))
    name = results.get("scenario") or (scenario or {}).get("name") or "pipeline run"
    figures = [
        (
            "rates",
            "input and processing rate per micro-batch",
            _query_plot(
                "rows per second, per micro-batch (Spark's input and processing rates)",
                "rows/s",
                history,
                tl,
                batches,
                [("input_per_s", "o-", "in"), ("processed_per_s", "x--", "processed")],
            ),
        ),
        (
            "durations",
            "batch duration",
            _query_plot(
                "micro-batch duration (triggerExecution)", "seconds", history, tl, batches, [("duration_s", "o-", "")]
            ),
        ),
        ("latency", "end-to-end latency", _latency_plot(history, tl, latency, clock)),
        (
            "state",
            "state rows",
            _query_plot(
                "rows in the windowed sum's state store",
                "rows",
                history,
                tl,
                batches.filter(pl.col("query") == SALES_QUERY).drop_nulls("state_rows"),
                [("state_rows", "o-", "")],
            ),
        ),
    ]
    verification = results.get("verification") or {}
    totals = verification.get("totals") or {}
    ledger, sink = totals.get("ledger") or {}, totals.get("sink") or {}
    total_rows = [(key.replace("_", " "), fmt(ledger.get(key)), fmt(sink.get(key))) for key in ledger]
    facts = results.get("pipeline") or {}
    all_latency = latencies["latency_s"] if clock == "wall" and not latencies.is_empty() else None
    fact_rows = [
        ("pipeline starts", fmt(facts.get("starts"))),
        ("stopped by itself", fmt(len(facts.get("unexpected_exits") or []))),
        ("drained to the log end", f"yes, in {facts.get('drain_s')} s" if facts.get("drained") else "no"),
        (
            "micro-batches that read records",
            ", ".join(f"{q}: {n}" for q, n in sorted(batches.group_by("query").len().iter_rows())) or "0",
        ),
        ("event-time clock", clock or "unknown"),
        (
            "latency p50 / p99 / max (s)",
            "n/a"
            if all_latency is None
            else f"{all_latency.median():.2f} / {all_latency.quantile(0.99, 'nearest'):.2f} / {all_latency.max():.2f}",
        ),
    ]
    body = [
        f"<h1>{escape(str(name))} {_badge(word)}</h1>",
        f'<p class="meta">{escape(" ".join(((scenario or {}).get("description") or "").split()))}</p>',
        _section(
            "ledger and sink",
            _table("totals", ("total", "ledger", "sink"), total_rows, numeric_from=1)
            if total_rows
            else f'<p class="empty">{escape("; ".join(results.get("reasons") or []) or "no verification")}</p>',
            "verification",
        ),
        _section("the pipeline", _table("facts", ("fact", "value"), fact_rows), "pipeline"),
        _enriched_section((results.get("checkers") or {}).get("enriched")),
        _published_section((results.get("checkers") or {}).get("published")),
        _section(
            "over time",
            "".join(
                f'<figure id="plot-{fid}"><img alt="{escape(alt)}" src="{plots.svg_data_uri(fig)}">'
                f"<figcaption>{escape(alt)}</figcaption></figure>"
                for fid, alt, fig in figures
            ),
            "plots",
        ),
        _json_details("results.json", results, "results"),
    ]
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(str(name))}: {escape(word)}</title>'
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    )


def _enriched_section(enriched: dict[str, Any] | None) -> str:
    """The enriched stream through Spark's Kafka sink (checkers.enriched), when the run had it."""
    if enriched is None:
        return ""
    counts = enriched.get("counts") or {}
    batches = ", ".join(str(b["batch_id"]) for b in enriched.get("replayed") or []) or "none"
    rows = [
        ("verdict", str(verdict(enriched.get("valid")))),
        ("records in the topic", fmt(counts.get("records"))),
        ("acknowledged purchases", fmt(counts.get("acknowledged"))),
        ("acknowledged purchases missing", fmt(counts.get("missing"))),
        (
            "copies of a record written before"
            + (" (allowed: at least once)" if enriched.get("allow_duplicates", True) else ""),
            fmt(counts.get("duplicate")),
        ),
        (
            f"of them from the batch run first after a restart ({batches})",
            fmt(counts.get("duplicate_in_replayed_batch")),
        ),
    ]
    return _section("enriched stream (Spark's Kafka sink)", _table("enriched", ("fact", "value"), rows), "enriched")


def _published_section(published: dict[str, Any] | None) -> str:
    """The totals published to demo.sales-by-product (checkers.pipeline.published), when the run judged them."""
    if published is None:
        return ""
    counts = published.get("counts") or {}
    seen = published.get("uncommitted") or {}
    mode = published.get("publish", "?")
    rows = [
        ("verdict", str(verdict(published.get("valid")))),
        ("publishing", str(mode)),
        ("records read at read_committed", fmt(counts.get("records"))),
        ("(window, product) totals", fmt(counts.get("keys"))),
        ("purchases lost (a total missing or lower than the ledger's)", fmt(counts.get("lost_purchases"))),
        (
            "copies of a batch's total" + (" (allowed: at least once)" if published.get("allow_duplicates") else ""),
            fmt(counts.get("duplicate")),
        ),
        ("keys whose last record is stale", fmt(counts.get("stale_last"))),
        ("records read at read_uncommitted", fmt(seen.get("records"))),
        *(("undecided", str(reason)) for reason in published.get("reasons") or []),
    ]
    return _section("totals published to Kafka", _table("published", ("fact", "value"), rows), "published")
