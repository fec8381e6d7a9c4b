"""The transactions of a run in report.html: outcomes per writer, a timeline of every transaction, the ones an anomaly
names, and the dependency cycles the transactions checker explained.

Drawn from the history's ``txns`` frame and the transactions checker's result (``txn_anomalies``, and the ``G0`` /
``G1c`` cycle examples: ``{"txns": [...], "edges": [{"from", "to", "type", "topic", "value"}]}``). A transaction's
status is the checker's: committed (outcome ok), aborted (fail), unknown (info, or never completed). html.py lays the
section out; this module returns its rows and figures."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import networkx as nx
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import failsafe.reports.plots as plots
from failsafe.history.ops import OpType
from failsafe.reports.series import NS_PER_S, Timeline
from failsafe.reports.summary import DASH, fmt

if TYPE_CHECKING:
    from failsafe.history.model import History

CHECKER = "transactions"
CYCLE_ANOMALIES = ("G0", "G1c")
STATUSES = ("committed", "aborted", "unknown")
# The sends plot's colours for acknowledged, failed and unknown: one meaning per colour across the page.
STATUS_COLOURS = {"committed": "#2ca02c", "aborted": "#d62728", "unknown": "#ff7f0e"}
MARK_COLOUR = plots.ANOMALY_COLOUR
EDGE_COLOURS = {"wr": "#1f77b4", "ww": "#555555"}
OUTCOME_HEADERS = ("writer", "transactional id", "transactions", *STATUSES, "never completed", "named by an anomaly")
ANOMALY_HEADERS = ("writer", "txn", "transactional id", "status", "began s", "took ms", "anomalies")
MAX_ANOMALY_ROWS = 100
ALL = "all"  # the totals row of the outcomes table
# Spans closer than this fraction of the run are one stretch of colour on an 11-inch plot: drawn as one rectangle, so a
# run of thousands of transactions stays a small SVG.
MERGE_FRACTION = 1 / 2000
MIN_SPAN_FRACTION = 1 / 1500  # a transaction of a few ms still shows as a sliver
SPAN_HEIGHT = 0.6
CYCLE_SIZE_IN = 3.4
_TXN = ["process", "txn"]
_NUMBER = re.compile(r"(\d+)")


def checker_result(results: dict) -> dict:
    entry = (results.get("checkers") or {}).get(CHECKER)
    return entry if isinstance(entry, dict) else {}


def named_txns(results: dict) -> list[dict[str, Any]]:
    """The checker's ``txn_anomalies`` that name a transaction: {process, txn, anomalies}."""
    rows = checker_result(results).get("txn_anomalies")
    return (
        [
            row
            for row in rows or []
            if isinstance(row, dict) and row.get("process") is not None and row.get("txn") is not None
        ]
        if isinstance(rows, list)
        else []
    )


def cycles(results: dict) -> list[tuple[str, int, dict]]:
    """(anomaly, number from 1, cycle) of every G0 and G1c example with at least two transactions and its edges."""
    found = checker_result(results).get("examples")
    out = []
    for anomaly in CYCLE_ANOMALIES:
        entries = found.get(anomaly) if isinstance(found, dict) else None
        good = [
            c for c in entries or [] if isinstance(c, dict) and isinstance(c.get("edges"), list) and len(_nodes(c)) >= 2
        ]
        out += [(anomaly, i, cycle) for i, cycle in enumerate(good, start=1)]
    return out


def has_transactions(history: History, results: dict) -> bool:
    return not history.txns.is_empty() or bool(named_txns(results)) or bool(cycles(results))


def _status() -> pl.Expr:
    outcome = pl.col("outcome")
    return (
        pl.when(outcome == OpType.OK)
        .then(pl.lit("committed"))
        .when(outcome == OpType.FAIL)
        .then(pl.lit("aborted"))
        .otherwise(pl.lit("unknown"))
        .alias("status")
    )


def _natural(text: str) -> tuple:
    """writer-2 before writer-10; writer-1 before its next incarnation writer-1.1."""
    return tuple(int(part) if part.isdigit() else part for part in _NUMBER.split(text))


def lanes(history: History) -> list[str]:
    """The writer processes, one timeline row each, in natural order."""
    return sorted(history.txns["process"].drop_nulls().unique().to_list(), key=_natural)


def _marked(results: dict) -> pl.DataFrame:
    rows = [
        (str(r["process"]), int(r["txn"]), ", ".join(str(a) for a in r.get("anomalies") or []))
        for r in named_txns(results)
    ]
    return pl.DataFrame(
        rows, schema={"process": pl.String, "txn": pl.Int64, "anomalies": pl.String}, orient="row"
    ).unique(subset=_TXN, keep="first", maintain_order=True)


def outcome_rows(history: History, results: dict) -> list[tuple[str, ...]]:
    """Per writer, then all together: its transactional id(s), how many transactions, each status, never completed, and
    named."""
    txns = history.txns.unique(subset=_TXN, keep="first", maintain_order=True).with_columns(_status())
    if txns.is_empty():
        return []
    txns = txns.join(_marked(results).with_columns(pl.lit(True).alias("named")), on=_TXN, how="left").with_columns(
        pl.col("named").fill_null(False)
    )
    aggs = [
        pl.col("transactional_id").drop_nulls().unique().sort().str.join(", ").alias("ids"),
        pl.len().alias("n"),
        *[(pl.col("status") == s).sum().alias(s) for s in STATUSES],
        pl.col("complete_ns").is_null().sum().alias("open"),
        pl.col("named").sum().alias("named"),
    ]
    per = {row["process"]: row for row in txns.group_by("process").agg(aggs).iter_rows(named=True)}
    total = txns.select(aggs).row(0, named=True)

    def cells(name: str, row: dict) -> tuple[str, ...]:
        return (
            name,
            (row["ids"] if name != ALL else None) or DASH,
            fmt(row["n"]),
            *(fmt(row[s]) for s in STATUSES),
            fmt(row["open"]),
            fmt(row["named"]),
        )

    rows = [cells(process, per[process]) for process in lanes(history)]
    return rows + [cells(ALL, total)] if len(rows) > 1 else rows


def anomaly_rows(history: History, results: dict, tl: Timeline | None) -> list[tuple[str, ...]]:
    """(writer, txn, transactional id, status, began s, took ms, anomalies) per transaction the checker named, in its
    order."""
    marked = _marked(results)
    if marked.is_empty():
        return []
    txns = history.txns.unique(subset=_TXN, keep="first", maintain_order=True).with_columns(_status())
    joined = marked.head(MAX_ANOMALY_ROWS).join(txns, on=_TXN, how="left", maintain_order="left")
    rows = []
    for row in joined.iter_rows(named=True):
        known = row["status"] is not None and any(row[c] is not None for c in ("invoke_ns", "end_ns", "complete_ns"))
        began = row["invoke_ns"] if row["invoke_ns"] is not None else row["end_ns"]
        took = None if began is None or row["complete_ns"] is None else (row["complete_ns"] - began) / 1e6
        rows.append(
            (
                row["process"],
                str(row["txn"]),
                fmt(row["transactional_id"]),
                row["status"] if known else DASH,
                DASH if began is None or tl is None else f"{(began - tl.t0_ns) / NS_PER_S:.3f}",
                fmt(took) if took is not None else "never completed" if known else DASH,
                row["anomalies"] or DASH,
            )
        )
    return rows


def txn_spans(history: History, tl: Timeline) -> pl.DataFrame:
    """One row per transaction: process, txn, status, open (never completed), start_s (its begin, else its end or
    completion) and end_s (its completion, else the end of the run)."""
    txns = history.txns.unique(subset=_TXN, keep="first", maintain_order=True).drop_nulls("process")
    return txns.select(
        "process",
        "txn",
        _status(),
        pl.col("complete_ns").is_null().alias("open"),
        start_s=(pl.coalesce("invoke_ns", "end_ns", "complete_ns") - tl.t0_ns) / NS_PER_S,
        end_s=(pl.coalesce("complete_ns", pl.lit(tl.end_ns)) - tl.t0_ns) / NS_PER_S,
    ).drop_nulls("start_s")


def _stretches(spans: pl.DataFrame, gap_s: float) -> pl.DataFrame:
    """Consecutive spans of a lane with the same status and at most gap_s apart, merged: what the eye sees anyway."""
    ordered = spans.sort("y", "start_s")
    new = (
        (pl.col("status") != pl.col("status").shift(1).over("y"))
        | (pl.col("open") != pl.col("open").shift(1).over("y"))
        | (pl.col("start_s") - pl.col("end_s").shift(1).over("y") > gap_s)
    )
    return (
        ordered.with_columns(new.fill_null(True).cum_sum().alias("stretch"))
        .group_by("y", "stretch", "status", "open")
        .agg(pl.col("start_s").min(), pl.col("end_s").max())
    )


def timeline_plot(history: History, tl: Timeline | None, results: dict, left: float = plots.MARGINS["left"]) -> Figure:
    """Every transaction as a span on its writer's row, coloured by status; the ones an anomaly names outlined and
    flagged."""
    rows = {process: i for i, process in enumerate(lanes(history))}
    fig, ax = plots._figure("Transactions per writer, by status (outlined: named by an anomaly)", left, rows=len(rows))
    spans = txn_spans(history, tl) if tl is not None else None
    faults = plots._axis_or_no_data(ax, history, tl, spans)
    if faults is None:
        return fig
    ax.set_yticks(range(len(rows)), list(rows), fontsize=8 if len(rows) <= 30 else 6)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    min_width = tl.end_s * MIN_SPAN_FRACTION if tl.end_s > 0 else 1e-3
    spans = spans.with_columns(pl.col("process").replace_strict(rows, return_dtype=pl.Int64).alias("y"))
    handles: list[Patch | Line2D] = []
    for status in STATUSES:
        for still_open in (False, True):
            part = _stretches(spans, tl.end_s * MERGE_FRACTION).filter(
                (pl.col("status") == status) & (pl.col("open") == still_open)
            )
            if part.is_empty():
                continue
            width = (part["end_s"] - part["start_s"]).clip(lower_bound=min_width)
            label = status if not still_open else "never completed"
            ax.barh(
                part["y"].to_numpy(),
                width.to_numpy(),
                left=part["start_s"].to_numpy(),
                height=SPAN_HEIGHT,
                linewidth=0,
                color=STATUS_COLOURS[status],
                alpha=0.55 if still_open else 1.0,
                hatch="////" if still_open else None,
                label=label,
                zorder=2,
            )
    marked = spans.join(_marked(results), on=_TXN, how="semi")
    if not marked.is_empty():
        width = (marked["end_s"] - marked["start_s"]).clip(lower_bound=min_width)
        ax.barh(
            marked["y"].to_numpy(),
            width.to_numpy(),
            left=marked["start_s"].to_numpy(),
            height=SPAN_HEIGHT + 0.15,
            fill=False,
            edgecolor=MARK_COLOUR,
            linewidth=1.3,
            zorder=3,
        )
        # A span of a few ms is a pixel wide: the flag above its row finds it.
        ax.plot(
            (marked["start_s"] + width / 2).to_numpy(),
            (marked["y"] - SPAN_HEIGHT / 2 - 0.12).to_numpy(),
            linestyle="none",
            marker="v",
            markersize=5,
            color=MARK_COLOUR,
            zorder=5,
        )
        handles.append(Line2D([], [], color=MARK_COLOUR, marker="v", linewidth=1.3, label=f"anomaly ({marked.height})"))
    plots._legend(ax, faults + handles)
    return fig


def _nodes(cycle: dict) -> list[tuple[str, Any]]:
    """The cycle's transactions in order: its txns, else the edges' from ends."""
    listed = (
        cycle.get("txns")
        if isinstance(cycle.get("txns"), list)
        else [e.get("from") for e in cycle.get("edges") or [] if isinstance(e, dict)]
    )
    return list(dict.fromkeys((str(t.get("process")), t.get("txn")) for t in listed if isinstance(t, dict)))


def node_label(txn: object) -> str:
    return f"{txn.get('process')}#{txn.get('txn')}" if isinstance(txn, dict) else str(txn)


def cycle_caption(anomaly: str, number: int, cycle: dict) -> str:
    """The cycle as one line: each edge with its type and the write that made it."""
    steps = [
        f"{node_label(e.get('from'))} →{e.get('type')} {node_label(e.get('to'))} ({e.get('topic')}: {e.get('value')})"
        for e in cycle.get("edges") or []
        if isinstance(e, dict)
    ]
    return f"{anomaly} cycle {number}: " + "; ".join(steps)


def cycle_plot(anomaly: str, number: int, cycle: dict) -> Figure:
    """The cycle's transactions around a circle (networkx's layout, in cycle order), each edge an arrow labelled ww or
    wr."""
    nodes = _nodes(cycle)
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    edges = [
        e
        for e in cycle.get("edges") or []
        if isinstance(e, dict) and isinstance(e.get("from"), dict) and isinstance(e.get("to"), dict)
    ]
    for e in edges:
        graph.add_edge(
            (str(e["from"].get("process")), e["from"].get("txn")), (str(e["to"].get("process")), e["to"].get("txn"))
        )
    pos = nx.circular_layout(graph)
    size = min(CYCLE_SIZE_IN + 0.25 * max(len(nodes) - 4, 0), 7.0)
    fig = Figure(figsize=(size, size * 0.85), dpi=100)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.9, bottom=0.02)
    ax = fig.add_subplot()
    ax.set_title(f"{anomaly} cycle {number}", fontsize=10, loc="left")
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.35, 1.35)
    boxes = {}
    for node in graph.nodes:
        x, y = pos[node]
        text = ax.text(
            x,
            y,
            f"{node[0]}#{node[1]}",
            ha="center",
            va="center",
            fontsize=8,
            zorder=2,
            bbox={"boxstyle": "round,pad=0.3", "facecolor": "#f3e5f5", "edgecolor": MARK_COLOUR, "linewidth": 1.0},
        )
        boxes[node] = text.get_bbox_patch()
    # Two transactions that point at each other: bend both arrows, or they would lie on one line.
    rad = 0.3 if len(nodes) == 2 else 0.12
    for e in edges:
        u = (str(e["from"].get("process")), e["from"].get("txn"))
        v = (str(e["to"].get("process")), e["to"].get("txn"))
        kind = str(e.get("type"))
        colour = EDGE_COLOURS.get(kind, "#555555")
        (x1, y1), (x2, y2) = pos[u], pos[v]
        # Above the boxes, drawn after them: an arrow is cut where its box is at draw time.
        ax.annotate(
            "",
            xy=(x2, y2),
            xytext=(x1, y1),
            zorder=3,
            arrowprops={
                "arrowstyle": "-|>",
                "color": colour,
                "linewidth": 1.4,
                "mutation_scale": 14,
                "connectionstyle": f"arc3,rad={rad}",
                "patchA": boxes[u],
                "patchB": boxes[v],
                "shrinkA": 2,
                "shrinkB": 2,
            },
        )
        # The midpoint of matplotlib's arc3 curve (a quadratic Bézier), in data units as the axes are equal.
        mx, my = (x1 + x2) / 2 + rad * (y2 - y1) / 2, (y1 + y2) / 2 - rad * (x2 - x1) / 2
        ax.text(
            mx,
            my,
            kind,
            ha="center",
            va="center",
            fontsize=8,
            color=colour,
            zorder=4,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"},
        )
    return fig
