"""A DR run's summary and report.html: RPO, RTO, records read twice, the checks, and the traffic on each cluster over
time."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from matplotlib.figure import Figure
from rich.console import Console
from rich.table import Table

from failsafe.checkers.common import Verdict
from failsafe.history.ops import Op, OpType
from failsafe.reports.plots import svg_data_uri

if TYPE_CHECKING:
    from failsafe.history.model import History

_MIRROR_START = f'"f":"{Op.MIRROR_START}"'.encode()  # its flow and settings are not in the loaded history's frames
ANOMALIES = (
    "rpo-records",
    "consumed-twice",
    "consumed-twice-after-move",
    "mirror-duplicates",
    "mirror-reordered",
    "skipped",
    "target-unread",
    "groups-not-caught-up",
)


def _fmt_s(value: object) -> str:
    return f"{value:.3f} s" if isinstance(value, int | float) else "never" if value is None else str(value)


def dr_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(what, value, meaning) for the summary: the measurements first, then every count."""
    dr = results.get("checkers", {}).get("dr", {})
    if "error" in dr:
        return [("dr checker", "error", dr["error"])]
    counts = dr.get("counts", {})
    source, target = dr.get("source", "primary"), dr.get("target", "backup")
    rows = [
        (
            "RPO",
            f"{counts.get('rpo-records', 0)} records, {_fmt_s(dr.get('rpo_seconds'))}",
            f"acknowledged on the {source}, absent on the {target}; seconds of data before the move",
        ),
        (
            "RTO, first read",
            _fmt_s(dr.get("rto_first_read_s")),
            f"from the move ({dr.get('t0_kind', '?')}) to the first record read on the {target}",
        ),
        (
            "RTO, caught up",
            _fmt_s(dr.get("rto_caught_up_s")),
            f"until the group had read every mirrored record on the {target}",
        ),
    ]
    rows += [(name, str(counts[name]), "") for name in counts if name != "rpo-records"]
    return rows


def render_dr_summary(console: Console, results: dict[str, Any]) -> None:
    verdict = Verdict.of_run(results)
    dr = results.get("checkers", {}).get("dr", {})
    table = Table(
        title=f"{results.get('scenario')}: {verdict} (from the {dr.get('source', '?')} to the {dr.get('target', '?')})"
    )
    for col in ("", "value", "what it is"):
        table.add_column(col, overflow="fold")
    for row in dr_rows(results):
        table.add_row(*row)
    console.print(table)
    if dr.get("reason"):
        console.print(f"undecided: {dr['reason']}")
    for e in results.get("expectations", []):
        mark = (
            "[green]ok[/]" if e["valid"] is True else "[red]FAILED[/]" if e["valid"] is False else "[yellow]unknown[/]"
        )
        console.print(f"{mark} {e['name']}: {e.get('actual')!r} {e.get('op', '')} {e.get('value', '')}".rstrip())
    for name, rows in dr.get("examples", {}).items():
        console.print(f"[bold]{name}[/] e.g. {json.dumps(rows[:2], default=str)}")


def traffic_plot(history: History, t0_ns: int | None) -> Figure:
    """Acknowledged writes and records read per second on each cluster (the suffix of the client's name), the move
    marked."""
    fig = Figure(figsize=(10, 3.2))
    ax = fig.add_subplot()
    start = (
        min(v for v in (history.sends["invoke_ns"].min(), history.reads["time_ns"].min()) if v is not None)
        if history.sends.height or history.reads.height
        else 0
    )
    frames = {
        "acknowledged": history.sends.filter(pl.col("outcome") == OpType.OK).select(
            pl.col("complete_ns").alias("t"), "process"
        ),
        "read": history.reads.select(pl.col("time_ns").alias("t"), "process"),
    }
    for what, frame in frames.items():
        if not frame.height:
            continue
        binned = (
            frame.with_columns(
                cluster=pl.col("process").str.split("@").list.last(), s=((pl.col("t") - start) // 1_000_000_000)
            )
            .group_by("cluster", "s")
            .len()
            .sort("s")
        )
        for (cluster,), part in binned.group_by(["cluster"], maintain_order=True):
            ax.plot(
                part["s"].to_list(),
                part["len"].to_list(),
                label=f"{what} on the {cluster}",
                linestyle="-" if what == "acknowledged" else "--",
            )
    if t0_ns is not None:
        ax.axvline((t0_ns - start) / 1e9, color="red", linewidth=1)
        ax.annotate("the move", ((t0_ns - start) / 1e9, 0), color="red", xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("seconds since the first send")
    ax.set_ylabel("records per second")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    return fig


def write_dr_report(run_path: Path, results: dict[str, Any], history: History) -> Path:
    """report.html in the run directory; returns its path."""
    dr = results.get("checkers", {}).get("dr", {})
    verdict = Verdict.of_run(results)
    rows = "".join(
        f"<tr><td>{escape(a)}</td><td>{escape(b)}</td><td>{escape(c)}</td></tr>" for a, b, c in dr_rows(results)
    )
    exps = "".join(
        f"<tr><td>{escape(e['name'])}</td><td>{escape(str(e['valid']))}</td><td>{escape(str(e.get('actual')))}</td></tr>"
        for e in results.get("expectations", [])
    )
    examples = "".join(
        f"<h3>{escape(name)}</h3><pre>{escape(json.dumps(ex, indent=1, default=str))}</pre>"
        for name, ex in dr.get("examples", {}).items()
    )
    plot = svg_data_uri(traffic_plot(history, dr.get("t0_ns")))
    settings = _mirror_starts(run_path / "history.jsonl")
    html = f"""<!doctype html><html><head><meta charset="utf-8"><title>{escape(str(results.get("scenario")))}: {verdict}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}
table{{border-collapse:collapse}}pre{{background:#f6f6f6;padding:8px;overflow:auto}}</style></head><body>
<h1>{escape(str(results.get("scenario")))}: {verdict}</h1>
<p>From the {escape(str(dr.get("source")))} to the {escape(str(dr.get("target")))}; {escape(str(dr.get("reason") or ""))}</p>
<h2>Recovery</h2><table><tr><th></th><th>value</th><th>what it is</th></tr>{rows}</table>
<h2>Expectations</h2><table><tr><th>name</th><th>valid</th><th>actual</th></tr>{exps}</table>
<h2>Traffic on each cluster</h2><img alt="acknowledged writes and reads per second on each cluster" src="{plot}">
<h2>MirrorMaker</h2><pre>{escape(json.dumps(settings, indent=1))}</pre>
<h2>Examples</h2>{examples or "<p>none</p>"}
</body></html>"""
    path = run_path / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def _mirror_starts(history_path: Path) -> list[dict]:
    """The mirror-start ops of the run (flow and settings), read from history.jsonl."""
    out = []
    with history_path.open("rb") as f:
        for line in f:
            if _MIRROR_START in line:
                op = json.loads(line)
                out.append({"flow": op.get("flow"), "settings": op.get("settings")})
    return out
