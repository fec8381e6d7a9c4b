"""atlas.html: one self-contained page (no script, no network) over an atlas directory's cells.

A heat map per measure (store.MEASURES): a row per fault, a column per mode, client and profile that has cells,
one coloured cell per grid cell with its p50 and p95 over the runs and a link to each run's report.html (relative
to the page, so the directory can be moved or served whole). Times are coloured on one logarithmic scale from
0.1 s (green) to 60 s (red), the same on every map and every atlas; acknowledged writes lost are green at 0 and red
above. Below the maps, each cell's runs: verdict, every measure, the failover breakdown when the runs have one,
and the errors of runs that could not be carried out. Every string from a file is escaped.
"""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from failsafe.atlas.grid import CLIENTS, FAULT_BY_NAME, FAULTS, MODE_BY_NAME, MODES, PROFILES
from failsafe.atlas.store import BREAKDOWN, MEASURES, OTHER_MEASURES
from failsafe.reports.html import CSS, REPORT_NAME

PAGE = "atlas.html"
SCALE_LOW_MS, SCALE_HIGH_MS = 100.0, 60_000.0
NONE_COLOUR = "#eeeeee"
EXTRA_CSS = """
table.heat td.cell { min-width: 6.5rem; text-align: center; border: 2px solid #fff; }
table.heat td.none { background: #fafafa; color: #bbb; text-align: center; }
table.heat .p50 { font-weight: bold; font-size: 1rem; } table.heat .p95 { color: #444; font-size: 0.8rem; display: block; }
.runs a { display: inline-block; min-width: 1.1rem; margin: 0.1rem; padding: 0 0.2rem; border-radius: 3px; color: #fff;
          font-size: 0.75rem; text-decoration: none; }
.ERROR { background: #455a64; }
.scale span { display: inline-block; padding: 0.1rem 0.5rem; font-size: 0.8rem; }
.errors { color: #555; font-size: 0.85rem; }
"""


def colour_ms(value: float | None) -> str:
    """Green at 0.1 s or less, red at 60 s or more, on a log scale; grey without a value."""
    if value is None:
        return NONE_COLOUR
    t = (math.log10(max(value, SCALE_LOW_MS)) - math.log10(SCALE_LOW_MS)) / (
        math.log10(SCALE_HIGH_MS) - math.log10(SCALE_LOW_MS)
    )
    return f"hsl({120 * (1 - min(t, 1.0)):.0f}, 65%, 78%)"


def colour_count(value: float | None) -> str:
    if value is None:
        return NONE_COLOUR
    return "hsl(120, 65%, 78%)" if value == 0 else "hsl(0, 75%, 72%)"


def show(name: str, value: object) -> str:
    if value is None:
        return "—"
    if name.endswith("_ms"):
        seconds = float(value) / 1000  # type: ignore[arg-type]
        return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"
    if name.endswith("_s"):
        return f"{float(value):.1f} s"  # type: ignore[arg-type]
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3g}"
    return f"{int(value):,}" if isinstance(value, int | float) else str(value)


def href(run_dir: str, name: str = REPORT_NAME) -> str:
    """A run's file relative to the page (run directories are stored relative to the atlas directory)."""
    path = Path(run_dir) / name
    return escape(path.resolve().as_uri() if path.is_absolute() else quote(path.as_posix()))


def _columns(cells: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    present = {(c["key"]["mode"], c["key"]["client"], c["key"]["profile"]) for c in cells}
    order = [(m.name, cl.name, p) for m in MODES for cl in CLIENTS for p in PROFILES]
    return [col for col in order if col in present] + sorted(present - set(order))


def _runs_links(cell: dict[str, Any]) -> str:
    links = [
        f'<a class="{escape(r["verdict"])}" href="{href(r["run_dir"])}" title="{escape(r["verdict"])}: '
        f'{escape(r["run_dir"])}">{i}</a>'
        for i, r in enumerate(cell["runs"], 1)
    ]
    return f'<div class="runs">{"".join(links)}</div>'


def heat_map(cells: list[dict[str, Any]], measure: str, title: str) -> str:
    columns = _columns(cells)
    faults = [f.name for f in FAULTS if any(c["key"]["fault"] == f.name for c in cells)]
    faults += sorted({c["key"]["fault"] for c in cells} - set(faults))
    by_key = {(c["key"]["fault"], c["key"]["mode"], c["key"]["client"], c["key"]["profile"]): c for c in cells}
    head = "<th>fault</th>" + "".join(f"<th>{escape(m)}<br>{escape(cl)}<br>{escape(p)}</th>" for m, cl, p in columns)
    rows = []
    for fault in faults:
        tds = []
        for mode, client, profile in columns:
            cell = by_key.get((fault, mode, client, profile))
            if cell is None:
                tds.append('<td class="none">·</td>')
                continue
            summary = cell.get("summary") or {}
            spread = summary.get(measure)
            p50 = spread["p50"] if spread else None
            # Loss in any run colours the cell, whatever the median: one lost acknowledged write is one too many.
            colour = (
                colour_count(spread["max"] if spread else None) if measure == "lost_acknowledged" else colour_ms(p50)
            )
            p95 = (
                f'<span class="p95">p95 {escape(show(measure, spread["p95"]))} · n={spread["n"]}</span>'
                if spread
                else ""
            )
            tds.append(
                f'<td class="cell" data-cell="{escape(cell["id"])}" style="background:{colour}"><a class="p50" '
                f'href="#cell-{escape(cell["id"])}">{escape(show(measure, p50))}</a>{p95}{_runs_links(cell)}</td>'
            )
        title_of = FAULT_BY_NAME[fault].title if fault in FAULT_BY_NAME else fault
        rows.append(f'<tr><th title="{escape(title_of)}">{escape(fault)}</th>{"".join(tds)}</tr>')
    return (
        f'<section id="map-{escape(measure)}"><h2>{escape(title)}</h2><p class="meta">p50 (bold) and p95 over '
        f"each cell's runs; "
        f'the numbers under it link to each run\'s report.</p><table class="heat" '
        f'data-measure="{escape(measure)}"><thead><tr>{head}'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _cell_details(cell: dict[str, Any]) -> str:
    key = cell["key"]
    measures = [*MEASURES, *OTHER_MEASURES]
    head = (
        "<th>run</th><th>verdict</th>" + "".join(f"<th>{escape(name)}</th>" for name, _ in measures) + "<th>report</th>"
    )
    rows = []
    for i, r in enumerate(cell["runs"], 1):
        values = "".join(f'<td class="num">{escape(show(name, r.get(name)))}</td>' for name, _ in measures)
        rows.append(
            f'<tr><td>{i}</td><td><span class="verdict '
            f'{escape(r["verdict"])}">{escape(r["verdict"])}</span></td>{values}'
            f'<td><a href="{href(r["run_dir"])}">{escape(r["run_dir"])}</a></td></tr>'
        )
    summary = cell.get("summary") or {}
    spreads = "".join(f'<td class="num">{escape(_spread_text(name, summary.get(name)))}</td>' for name, _ in measures)
    rows.append(
        "<tr><th>p50 / "
        f"p95</th><th>{escape(', '.join(f'{v} {n}' for v, n in (summary.get('verdicts') or {}).items()))}</th>{spreads}<td></td></tr>"
    )
    parts = [
        f"<section "
        f'id="cell-{escape(cell["id"])}"><h3>{escape(" · ".join(str(key.get(a)) for a in ("fault", "profile", "client", "mode")))}</h3>',  # noqa: E501
        f'<p class="meta">{escape(str(cell.get("scenario")))} {escape(" ".join(cell.get("overrides") or []))} · '
        f"{escape(_mode_title(key.get('mode')))} · {len(cell['runs'])} of {cell.get('runs_wanted')} runs</p>",
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>",
    ]
    anomalies = summary.get("anomalies") or {}
    if anomalies:
        parts.append(
            '<p class="meta">anomalies (runs that showed each): '
            + escape(", ".join(f"{name} {n}/{len(cell['runs'])}" for name, n in anomalies.items()))
            + "</p>"
        )
    breakdown = summary.get(BREAKDOWN) or {}
    if breakdown:
        lines = "".join(
            f"<tr><td>{escape(path)}</td><td class='num'>{escape(_spread_text(path, s))}</td></tr>"
            for path, s in breakdown.items()
        )
        parts.append(
            f"<details><summary>failover breakdown (every partition of every run, in "
            f"seconds)</summary><table><thead><tr><th>component</th>"
            f"<th>p50 / p95 over the runs</th></tr></thead><tbody>{lines}</tbody></table></details>"
        )
    if cell.get("errors"):
        parts.append(
            '<ul class="errors">'
            + "".join(f"<li>{escape(str(e.get('at')))}: {escape(str(e.get('error')))}</li>" for e in cell["errors"])
            + "</ul>"
        )
    return "".join(parts) + "</section>"


def _mode_title(mode: object) -> str:
    return MODE_BY_NAME[str(mode)].title if str(mode) in MODE_BY_NAME else str(mode)


def _spread_text(name: str, spread: dict | None) -> str:
    return "—" if not spread else f"{show(name, spread['p50'])} / {show(name, spread['p95'])}"


def render_page(cells: list[dict[str, Any]]) -> str:
    runs = sum(len(c["runs"]) for c in cells)
    scale = "".join(
        f'<span style="background:{colour_ms(ms)}">{escape(show("x_ms", ms))}</span>'
        for ms in (100, 300, 1000, 3000, 10000, 30000, 60000)
    )
    parts = [
        "<h1>failover atlas</h1>",
        f'<p class="meta">{len(cells)} cells, {runs} runs. Colours: times on a log scale <span '
        f'class="scale">{scale}</span>; '
        "acknowledged writes lost: green at 0, red above. docs/atlas.md says what each number is.</p>",
    ]
    if not cells:
        parts.append('<p class="empty">No cell has a run yet.</p>')
    for name, title in MEASURES:
        if cells:
            parts.append(heat_map(cells, name, title))
    if cells:
        parts.append("<h2>The cells and their runs</h2>" + "".join(_cell_details(c) for c in cells))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>failover atlas</title>'
        f"<style>{CSS}{EXTRA_CSS}</style></head>\n<body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def write_html(out: Path, cells: list[dict[str, Any]]) -> Path:
    """atlas.html in ``out``, replaced whole; returns its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / PAGE
    temporary = path.with_name(f".{PAGE}.{os.getpid()}.tmp")
    temporary.write_text(render_page(cells))
    os.replace(temporary, path)
    return path
