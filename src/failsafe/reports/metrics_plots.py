"""The report's plots of the nodes' own metrics (the ``metrics`` frame: each node's JMX exporter, scraped through the
run).

Drawn beside the topology plots and on their time axis: replication health as the brokers and the
active controller count it (under-replicated partitions per broker, offline partitions, fenced
brokers), and each broker's produce latency at the 99th percentile as Kafka's request metrics
measure it. A scrape that failed (a node down or paused) leaves a gap in its line, never a zero. Kafka's request
histograms decay over minutes, not seconds: the p99 drawn at a moment still holds the slow requests of the last minutes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

import failsafe.reports.plots as plots
from failsafe.reports.series import Timeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from failsafe.history.model import History

UNDER_REPLICATED = "kafka_server_replicamanager_underreplicatedpartitions"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"
FENCED = "kafka_controller_kafkacontroller_fencedbrokercount"
ACTIVE_CONTROLLER = "kafka_controller_kafkacontroller_activecontrollercount"
REQUEST_TIME = "kafka_network_requestmetrics_totaltimems"
PRODUCE_P99 = 'quantile="0.99",request="Produce"'
# Two samples of a node further apart than this (seconds; a scrape a second) are drawn with a gap between them, as are
# two with a failed scrape of that node between them.
GAP_S = 2.5


def _series(history: History, tl: Timeline, metric: str, labels: str = "") -> pl.DataFrame:
    """time (s since the timeline's start), node, value of one metric."""
    return (
        history.metrics.filter((pl.col("metric") == metric) & (pl.col("labels") == labels))
        .select(((pl.col("time_ns") - tl.t0_ns) / 1e9).alias("t_s"), "node", "value")
        .sort("node", "t_s")
    )


def _with_gaps(frame: pl.DataFrame, failed_s: list[float] = ()) -> tuple[list[float], list[float | None]]:
    """x and y of one node's line, with a None (matplotlib breaks the line) where samples are further apart than GAP_S
    or a scrape of the node failed between them (``failed_s``: its failed scrapes' times)."""
    xs: list[float] = []
    ys: list[float | None] = []
    previous = None
    for t_s, value in frame.select("t_s", "value").iter_rows():
        if previous is not None and (t_s - previous > GAP_S or any(previous < f < t_s for f in failed_s)):
            xs.append((t_s + previous) / 2)
            ys.append(None)
        xs.append(t_s)
        ys.append(value)
        previous = t_s
    return xs, [float("nan") if y is None else y for y in ys]


def _failed(history: History, tl: Timeline, node: int) -> list[float]:
    """When scrapes of broker ``node`` failed (seconds on the timeline)."""
    errors = history.metrics_errors.filter((pl.col("node") == node) & pl.col("node_name").str.starts_with("server-"))
    return ((errors["time_ns"] - tl.t0_ns) / 1e9).to_list()


def _controller_lines(history: History, tl: Timeline, metric: str) -> pl.DataFrame:
    """One value per scrape time of ``metric`` as the active controller served it (the others serve 0 or nothing)."""
    active = _series(history, tl, ACTIVE_CONTROLLER).filter(pl.col("value") == 1).select("t_s", "node")
    return _series(history, tl, metric).join(active, on=["t_s", "node"], how="semi")


def health_plot(history: History, tl: Timeline | None, left: float = plots.MARGINS["left"]) -> Figure:
    fig, ax = plots._figure(
        "Under-replicated partitions (URP) per broker; offline partitions and fenced brokers (nodes' metrics)", left
    )
    urp = _series(history, tl, UNDER_REPLICATED) if tl is not None else None
    faults = plots._axis_or_no_data(ax, history, tl, urp)
    if faults is None:
        return fig
    for node in sorted(urp["node"].unique().to_list()):
        xs, ys = _with_gaps(urp.filter(pl.col("node") == node), _failed(history, tl, node))
        ax.plot(
            xs,
            ys,
            drawstyle="steps-post",
            linewidth=1.3,
            color=plots.BROKER_COLOURS[node % len(plots.BROKER_COLOURS)],
            label=f"broker {node}: URP",
        )
    for metric, style, label in ((OFFLINE, "--", "offline (controller)"), (FENCED, ":", "fenced (controller)")):
        line = _controller_lines(history, tl, metric)
        if not line.is_empty():
            xs, ys = _with_gaps(line)
            ax.plot(
                xs,
                ys,
                drawstyle="steps-post",
                linewidth=1.5,
                linestyle=style,
                color="#000000" if metric == OFFLINE else "#d62728",
                label=label,
            )
    ax.set_ylim(bottom=0)
    ax.set_ylabel("partitions / brokers")
    plots._legend(ax, faults)
    return fig


def produce_latency_plot(history: History, tl: Timeline | None, left: float = plots.MARGINS["left"]) -> Figure:
    fig, ax = plots._figure("Produce request time, 99th percentile, per broker (Kafka's RequestMetrics)", left)
    p99 = _series(history, tl, REQUEST_TIME, PRODUCE_P99) if tl is not None else None
    faults = plots._axis_or_no_data(ax, history, tl, p99)
    if faults is None:
        return fig
    for node in sorted(p99["node"].unique().to_list()):
        xs, ys = _with_gaps(p99.filter(pl.col("node") == node), _failed(history, tl, node))
        ax.plot(
            xs, ys, linewidth=1.2, color=plots.BROKER_COLOURS[node % len(plots.BROKER_COLOURS)], label=f"broker {node}"
        )
    ax.set_ylim(bottom=0)
    ax.set_ylabel("ms (the broker's own histogram)")
    plots._legend(ax, faults)
    return fig


def metrics_plots(history: History, tl: Timeline | None, left: float) -> list[tuple[str, str, Figure]]:
    """The metrics plots of the report, none for a run recorded without metrics."""
    if history.metrics.is_empty():
        return []
    return [
        ("plot-health", "Replication health (nodes' metrics)", health_plot(history, tl, left)),
        ("plot-produce-p99", "Produce request time p99 (nodes' metrics)", produce_latency_plot(history, tl, left)),
    ]
