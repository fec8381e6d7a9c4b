"""The report's plots, drawn with matplotlib's object API (``Figure``, never pyplot) into SVG.

Using ``Figure`` directly picks no global backend and changes no global state, so the reports can
be drawn from any thread of any program. Every time plot has the same size, margins and x range
(seconds since the first event), so the plots line up one above the other; each shades the fault
windows and marks the runner's phases.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

import failsafe.reports.series as series
from failsafe.reports.series import Timeline

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from failsafe.history.model import History

WIDTH_IN = 11.0
HEIGHT_IN = 3.2
MARGINS = {"left": 0.075, "right": 0.86, "top": 0.88, "bottom": 0.16}
FAULT_COLOUR = "#d62728"
ANOMALY_COLOUR = "#6a1b9a"
# More marks than this blur into a band: the first ones say as much.
MAX_ANOMALY_MARKS = 50
NO_LEADER_COLOUR = "#000000"
BROKER_COLOURS = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
# Beyond these, the plot would be unreadable anyway: label fewer things rather than draw slowly.
MAX_SEGMENT_LABELS = 150
MAX_ISR_LINES = 12
# Width of one character of a 7 pt label as a fraction of the axes' width (DejaVu Sans, a little generous).
LABEL_CHAR_FRACTION = 0.0065
PHASE_LABEL_GAP = 0.015  # of the x range: closer phases share a label
TICK_CHAR_IN = 0.065  # an 8 pt tick label character, in inches


def _figure(title: str, left: float, rows: int = 0) -> tuple[Figure, Axes]:
    height = HEIGHT_IN if rows <= 6 else min(HEIGHT_IN + 0.22 * (rows - 6), 14.0)
    fig = Figure(figsize=(WIDTH_IN, height), dpi=100)
    margins = {**MARGINS, "left": left}
    if rows > 6:  # keep the absolute margins of the small plots, so all plots line up
        margins["top"] = 1 - (1 - MARGINS["top"]) * HEIGHT_IN / height
        margins["bottom"] = MARGINS["bottom"] * HEIGHT_IN / height
    fig.subplots_adjust(**margins)
    ax = fig.add_subplot()
    # The pad leaves room under the title for the fault labels drawn just above the axes.
    ax.set_title(title, loc="left", fontsize=11, pad=14)
    return fig, ax


def left_margin(history: History) -> float:
    """The left margin every plot shares: wide enough for the longest partition name on the leader plot, and writer name
    on the transactions plot."""
    writers = history.txns["process"].drop_nulls().unique().to_list()
    longest = max((len(label) for label in [*series.partitions(history), *writers]), default=0)
    return min(max(MARGINS["left"], 0.02 + longest * TICK_CHAR_IN / WIDTH_IN), 0.3)


def _no_data(ax: Axes, tl: Timeline | None, what: str = "no data") -> None:
    ax.text(0.5, 0.5, what, transform=ax.transAxes, ha="center", va="center", fontsize=12, color="#666666")
    ax.set_yticks([])
    if tl is None:
        ax.set_xticks([])


def _axis_or_no_data(ax: Axes, history: History, tl: Timeline | None, data: pl.DataFrame | None) -> list[Patch] | None:
    """The time axis with the faults shaded (their legend handles), or None after drawing "no data"."""
    if tl is None or data is None or data.is_empty():
        _no_data(ax, tl)
        if tl is not None:
            _legend(ax, _time_axis(ax, tl, history))
        return None
    return _time_axis(ax, tl, history)


def _time_axis(ax: Axes, tl: Timeline, history: History) -> list[Patch]:
    """x axis in seconds since the first event; shade faults, mark phases. Returns legend handles for faults."""
    ax.set_xlim(0, max(tl.end_s, 1e-3))
    ax.set_xlabel("seconds since the first event")
    ax.grid(True, axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    label_axes = ax.get_xaxis_transform()  # x in data, y in axes fraction
    marks = series.phase_marks(history, tl)
    for t_s, _ in marks:
        ax.axvline(t_s, color="#555555", linestyle=":", linewidth=1.0, zorder=1)
    # Phases entered within a moment of each other (setup, warm-up) share one label.
    groups: list[tuple[float, list[str]]] = []
    for t_s, name in marks:
        if groups and t_s - groups[-1][0] < PHASE_LABEL_GAP * tl.end_s:
            groups[-1][1].append(name)
        else:
            groups.append((t_s, [name]))
    for t_s, names in groups:
        ax.text(
            t_s,
            0.02,
            " " + ", ".join(names),
            transform=label_axes,
            rotation=90,
            fontsize=7,
            color="#444444",
            ha="left",
            va="bottom",
        )
    windows = series.fault_windows(history, tl)
    # Two rows of fault labels: above the axes, then just inside the top; crowded faults keep only
    # their id, then nothing, rather than print over each other.
    rows = [
        (1.01, "bottom", None),
        (0.985, "top", {"facecolor": "white", "edgecolor": "none", "alpha": 0.75, "pad": 0.5}),
    ]
    free_from = [float("-inf")] * len(rows)
    for w in windows:
        ax.axvspan(w.start_s, w.end_s, color=FAULT_COLOUR, alpha=0.14, linewidth=0, zorder=0)
        # Edges on top of the data: the leader bars would hide the shade alone.
        for edge in (w.start_s, w.end_s) if not w.open else (w.start_s,):
            ax.axvline(edge, color=FAULT_COLOUR, linewidth=0.9, linestyle="--", alpha=0.8, zorder=4)
        placed = False
        for label in (w.label + (" (not undone)" if w.open else ""), w.label.split(" ")[0]):
            for row, (y, va, box) in enumerate(rows):
                if not placed and w.start_s >= free_from[row]:
                    ax.text(
                        w.start_s,
                        y,
                        label,
                        transform=label_axes,
                        fontsize=7,
                        color=FAULT_COLOUR,
                        ha="left",
                        va=va,
                        bbox=box,
                    )
                    free_from[row] = w.start_s + (len(label) + 1) * LABEL_CHAR_FRACTION * tl.end_s
                    placed = True
    return [Patch(facecolor=FAULT_COLOUR, alpha=0.14, label="fault window")] if windows else []


def _anomaly_marks(ax: Axes, tl: Timeline, anomalies_ns: Sequence[int]) -> list[Line2D]:
    """A dotted vertical line at each explained anomaly's time (results["explanations"]); its legend handle."""
    times = sorted({(ns - tl.t0_ns) / 1e9 for ns in anomalies_ns})[:MAX_ANOMALY_MARKS]
    for t_s in times:
        ax.axvline(t_s, color=ANOMALY_COLOUR, linestyle=":", linewidth=1.1, alpha=0.9, zorder=5)
    return [Line2D([], [], color=ANOMALY_COLOUR, linestyle=":", label="anomaly")] if times else []


def _legend(ax: Axes, extra: Sequence[Patch | Line2D] | None = None) -> None:
    handles, labels = ax.get_legend_handles_labels()
    for patch in extra or []:
        handles.append(patch)
        labels.append(patch.get_label())
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def sends_plot(
    history: History, tl: Timeline | None, left: float = MARGINS["left"], anomalies_ns: Sequence[int] = ()
) -> Figure:
    fig, ax = _figure("Sends per second, by outcome", left)
    rates = series.send_rates(history, tl) if tl is not None else None
    faults = _axis_or_no_data(ax, history, tl, rates)
    if faults is None:
        return fig
    t = rates["t_s"].to_numpy()
    for column, colour in (("acknowledged", "#2ca02c"), ("failed", "#d62728"), ("unknown", "#ff7f0e")):
        ax.plot(t, rates[column].to_numpy(), drawstyle="steps-post", color=colour, linewidth=1.2, label=column)
    ax.set_ylabel(f"sends/s ({_bin_label(tl)} bins)")
    ax.set_ylim(bottom=0)
    _legend(ax, faults + _anomaly_marks(ax, tl, anomalies_ns))
    return fig


def _bin_label(tl: Timeline) -> str:
    return f"{tl.bin_s * 1000:.0f} ms" if tl.bin_s < 1 else f"{tl.bin_s:.0f} s"


def latency_plot(history: History, tl: Timeline | None, left: float = MARGINS["left"]) -> Figure:
    fig, ax = _figure("End-to-end latency (poll time minus send invoke time)", left)
    lat = series.latency(history, tl) if tl is not None else None
    faults = _axis_or_no_data(ax, history, tl, lat)
    if faults is None:
        return fig
    t = lat["t_s"].to_numpy()
    for column, colour, label in (
        ("max_ms", "#bbbbbb", "max"),
        ("p99_ms", "#ff7f0e", "p99"),
        ("p50_ms", "#1f77b4", "p50"),
    ):
        ax.plot(t, lat[column].to_numpy(), color=colour, linewidth=1.2, marker="o", markersize=2, label=label)
    low, high = lat.select(pl.col("p50_ms").min(), pl.col("max_ms").max()).row(0)
    # A failover turns milliseconds into seconds: a log scale keeps both readable.
    if low is not None and low > 0 and high / low > 20:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(f"ms ({_bin_label(tl)} bins)")
    _legend(ax, faults)
    return fig


def _partition_rows(history: History) -> dict[str, int]:
    return {label: i for i, label in enumerate(series.partitions(history))}


def _partition_axis(ax: Axes, rows: dict[str, int]) -> None:
    ax.set_yticks(range(len(rows)), list(rows), fontsize=8 if len(rows) <= 30 else 6)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first partition on top


def leader_plot(
    history: History, tl: Timeline | None, left: float = MARGINS["left"], anomalies_ns: Sequence[int] = ()
) -> Figure:
    rows = _partition_rows(history)
    fig, ax = _figure("Leader of each partition (broker id; black = no leader)", left, rows=len(rows))
    runs = series.leader_runs(history, tl) if tl is not None else None
    faults = _axis_or_no_data(ax, history, tl, runs)
    if faults is None:
        return fig
    _partition_axis(ax, rows)
    brokers = sorted(b for b in runs["value"].unique().to_list() if b >= 0)
    # Colour by id, not by rank, so broker 2 has the same colour in every report.
    colours = {b: BROKER_COLOURS[b % len(BROKER_COLOURS)] for b in brokers}
    colours[-1] = NO_LEADER_COLOUR
    frame = runs.with_columns(
        y=pl.col("label").replace_strict(rows, return_dtype=pl.Int64), width=pl.col("end_s") - pl.col("start_s")
    )
    # A run seen in one sample only still gets a visible sliver.
    min_width = tl.end_s / 800 if tl.end_s > 0 else 1e-3
    frame = frame.with_columns(pl.max_horizontal("width", pl.lit(min_width)).alias("width"))
    for leader in [*brokers, -1]:
        part = frame.filter(pl.col("value") == leader)
        if part.is_empty():
            continue
        ax.barh(
            part["y"].to_numpy(),
            part["width"].to_numpy(),
            left=part["start_s"].to_numpy(),
            height=0.7,
            color=colours[leader],
            label="no leader" if leader < 0 else f"broker {leader}",
            linewidth=0,
        )
    wide = frame.filter(pl.col("width") > tl.end_s * 0.04).head(MAX_SEGMENT_LABELS)
    for y, start, width, leader in wide.select("y", "start_s", "width", "value").iter_rows():
        ax.text(
            start + width / 2,
            y,
            "none" if leader < 0 else str(leader),
            ha="center",
            va="center",
            fontsize=7,
            color="white",
        )
    _legend(ax, faults + _anomaly_marks(ax, tl, anomalies_ns))
    return fig


def isr_plot(history: History, tl: Timeline | None, left: float = MARGINS["left"]) -> Figure:
    fig, ax = _figure("In-sync replicas per partition (ISR size)", left)
    runs = series.isr_runs(history, tl) if tl is not None else None
    faults = _axis_or_no_data(ax, history, tl, runs)
    if faults is None:
        return fig
    labels = list(_partition_rows(history))
    many = len(labels) > MAX_ISR_LINES
    # Partitions usually share the same ISR size: a small offset per line keeps each visible.
    offset = 0.0 if many else 0.06
    for i, label in enumerate(labels):
        part = runs.filter(pl.col("label") == label).sort("start_s")
        if part.is_empty():
            continue
        x = [*part["start_s"].to_list(), part["end_s"][-1]]
        y = [*part["value"].to_list(), part["value"][-1]]
        shift = (i - (len(labels) - 1) / 2) * offset / max(len(labels) - 1, 1)
        ax.step(
            x,
            [v + shift for v in y],
            where="post",
            linewidth=0.8 if many else 1.3,
            color="#999999" if many else None,
            alpha=0.6 if many else 1.0,
            label=None if many else label,
        )
    if many:
        low = runs.select(pl.col("value").min()).item()
        ax.plot([], [], color="#999999", label=f"{len(labels)} partitions")
        ax.plot([], [], color="none", label=f"lowest ISR: {low}")
    top = int(runs["value"].max() or 0)
    ax.set_ylim(-0.3, top + 0.5)
    ax.set_yticks(range(top + 1))
    ax.set_ylabel("replicas in ISR")
    _legend(ax, faults)
    return fig


def svg_data_uri(fig: Figure) -> str:
    """The figure as an SVG data URI: an <img> keeps each plot's SVG ids to itself and the page self-contained."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def all_plots(history: History, anomalies_ns: Sequence[int] = ()) -> list[tuple[str, str, Figure]]:
    """(id, caption, figure) of every plot of the report, in page order; anomalies_ns are marked on the sends and leader
    plots."""
    tl = series.timeline(history)
    left = left_margin(history)
    return [
        ("plot-sends", "Sends per second by outcome", sends_plot(history, tl, left, anomalies_ns)),
        ("plot-latency", "End-to-end latency", latency_plot(history, tl, left)),
        ("plot-leaders", "Partition leaders", leader_plot(history, tl, left, anomalies_ns)),
        ("plot-isr", "ISR size", isr_plot(history, tl, left)),
    ]
