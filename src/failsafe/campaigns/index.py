"""index.html of a campaign: one self-contained page (no script, no network) over campaign.json.

The campaign's settings and verdicts, a table per anomaly kind (in k of the n runs under each fault
combination), unavailability per fault type, the faults that could not start, where the time went,
and a row per run with its schedule drawn as an inline SVG timeline and links to its own
report.html and schedule.toml (relative to the index, so the directory can be moved or served whole).
The look is report.html's (reports/html.py); every string from a record is escaped.
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from failsafe.campaigns.schedule import SCHEDULE_FILE
from failsafe.campaigns.stats import ERROR, UNAVAILABILITY_FIELDS, VERDICTS, summarise, unavailability_values
from failsafe.reports.html import CSS, REPORT_NAME
from failsafe.reports.summary import DASH, fmt

INDEX_NAME = "index.html"
# Fault types' colours, assigned in sorted order of the campaign's fault types (tab10, without its red: red is
# INVALID's).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
TIMELINE_W, LANE_H, PAD = 340, 13, 4
STRIP_W, STRIP_LABEL_W, STRIP_ROW_H = 460, 110, 18
LABEL_PX_PER_CHAR = 5.2

EXTRA_CSS = """
.ERROR { background: #455a64; }
tr.invalid td { background: #fdecea; } tr.invalid td:first-child { box-shadow: inset 4px 0 #c62828; }
.counts .verdict { margin-right: 0.4rem; }
.lost { color: #c62828; font-weight: bold; }
.why { color: #555; font-size: 0.8rem; max-width: 26rem; }
.decided { font-weight: bold; }
svg.timeline text, svg.strip text { font-family: system-ui, sans-serif; }
.legend span { display: inline-block; margin-right: 0.8rem; font-size: 0.85rem; }
.legend i { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.25rem; vertical-align: -0.1rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 0.2rem; }
"""
# One definition of the hatching for every timeline (an id is the page's, not an SVG's); a hidden SVG
# with display:none would hide its pattern too in some browsers, so it is zero-sized instead.
DEFS = (
    '<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>'
    '<pattern id="hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
    '<rect width="5" height="5" fill="#eee"/><line x1="0" y1="0" x2="0" y2="5" stroke="#999" '
    'stroke-width="2"/></pattern>'
    "</defs></svg>"
)


def _badge(word: str) -> str:
    return f'<span class="verdict {escape(word)}">{escape(word)}</span>'


def _num(value: object) -> str:
    return escape(fmt(value))


def _table(headers: tuple[str, ...], rows: list[list[str]], table_id: str = "", numeric_from: int = 99) -> str:
    """A table of cells that are already HTML (each escaped where it was made)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i >= numeric_from else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    ident = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _section(title: str, content: str, section_id: str) -> str:
    return f'<section id="{escape(section_id)}"><h2>{escape(title)}</h2>{content}</section>'


def _empty(text: str) -> str:
    return f'<p class="empty">{escape(text)}</p>'


def _run_link(run: object) -> str:
    return f'<a href="#run-{escape(str(run))}">{escape(str(run))}</a>'


def _runs_list(runs: list[Any]) -> str:
    return ", ".join(_run_link(r) for r in runs) or DASH


def _href(directory: Path, target: Path) -> str:
    """``target`` relative to the index's directory (absolute file: URI when there is no relative path, as across
    drives)."""
    try:
        rel = os.path.relpath(target, directory)
    except ValueError:
        return escape(target.resolve().as_uri())
    return escape(quote(Path(rel).as_posix()))


def _web_link(url: object) -> str:
    """A reference as a link when it is a web address; anything else (a javascript: URL) as text."""
    text = str(url or "")
    if text.startswith(("https://", "http://")):
        return f'<a href="{escape(quote(text, safe=":/?#[]@!$&()*+,;=%~-._"))}">{escape(text)}</a>'
    return escape(text)


def fault_colours(data: dict[str, Any]) -> dict[str, str]:
    """Fault type -> colour, the same on every row (the campaign's fault types and any a record names)."""
    names = {str(f) for f in (data.get("campaign") or {}).get("faults") or []}
    for record in data.get("runs") or []:
        names |= {str(f.get("fault")) for f in (record.get("schedule") or {}).get("faults") or []}
        names |= {str(f.get("fault")) for f in record.get("faults") or []}
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(names))}


def fault_states(record: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """Per planned fault: started, not-started or unrecorded (the run has no word on it), and what the run recorded of
    it.

    The k-th planned fault of a type is the k-th of that type the run recorded (both in time order)."""
    recorded: dict[str, list[dict[str, Any]]] = {}
    for fault in sorted(
        record.get("faults") or [], key=lambda f: f.get("start_s") if f.get("start_s") is not None else 0.0
    ):
        recorded.setdefault(str(fault.get("fault")), []).append(fault)
    states: list[tuple[str, dict[str, Any] | None]] = []
    for planned in (record.get("schedule") or {}).get("faults") or []:
        queue = recorded.get(str(planned.get("fault"))) or []
        actual = queue.pop(0) if queue else None
        states.append(
            ("unrecorded" if actual is None else "started" if actual.get("started") else "not-started", actual)
        )
    return states


def _lanes(spans: list[tuple[float, float]]) -> list[int]:
    """A lane per span such that no two in a lane overlap (spans in pixels, labels included)."""
    ends: list[float] = []
    lanes = []
    for start, end in spans:
        lane = next((i for i, e in enumerate(ends) if e <= start), len(ends))
        if lane == len(ends):
            ends.append(end)
        ends[lane] = end
        lanes.append(lane)
    return lanes


def timeline(record: dict[str, Any], colours: dict[str, str]) -> str:
    """The run's schedule as an SVG: the chaos phase as a bar, each planned fault a labelled span (one ``fault-span``
    each)."""
    schedule = record.get("schedule") or {}
    planned = [f for f in schedule.get("faults") or [] if isinstance(f, dict)]
    states = fault_states(record)
    chaos_s = float(schedule.get("chaos_s") or record.get("chaos_s") or 0.0)
    ends = [float(f.get("at_s") or 0) + float(f.get("duration_s") or 0) for f in planned]
    ends += [float(a["stop_s"]) for _, a in states if a and isinstance(a.get("stop_s"), int | float)]
    total_s = max([chaos_s, *ends]) or 1.0
    scale = (TIMELINE_W - 2 * PAD) / total_s
    boxes = []
    for fault in planned:
        x = PAD + float(fault.get("at_s") or 0) * scale
        width = max(3.0, float(fault.get("duration_s") or 0) * scale)
        boxes.append((x, width, x + max(width, len(str(fault.get("fault"))) * LABEL_PX_PER_CHAR + 4)))
    lanes = _lanes([(x, label_end) for x, _, label_end in boxes])
    height = 22 + LANE_H * (max(lanes, default=-1) + 1) + 10
    parts = [
        f'<rect class="chaos" x="{PAD}" y="2" width="{chaos_s * scale:.1f}" height="5" fill="#bdbdbd">'
        f"<title>chaos phase {escape(fmt(chaos_s))} s</title></rect>"
    ]
    for fault, (state, actual), (x, width, _), lane in zip(planned, states, boxes, lanes, strict=True):
        name = str(fault.get("fault"))
        colour = colours.get(name, "#777")
        y = 12 + lane * LANE_H
        aim = ", ".join(f"{k} {v}" for k, v in fault.items() if k not in ("fault", "at_s", "duration_s"))
        tip = f"{name} ({aim}) at {fmt(fault.get('at_s'))} s for {fmt(fault.get('duration_s'))} s: {state}"
        if actual and state == "started":
            tip += (
                f"; ran {fmt(actual.get('start_s'))}-{fmt(actual.get('stop_s'))} s on {fmt(actual.get('nodes'))} "
                f"({fmt(actual.get('role'))})"
            )
        elif actual:
            tip += f": {fmt(actual.get('error'))}"
        fill = {"started": colour, "not-started": "url(#hatch) #ddd"}.get(state, colour)
        # Light fills under dark labels: a label is longer than a short fault's span.
        style = {
            "started": f' fill-opacity="0.55" stroke="{colour}"',
            "not-started": f' stroke="{colour}" stroke-dasharray="2 2"',
            "unrecorded": ' fill-opacity="0.25"',
        }.get(state, "")
        text_fill = "#222" if state == "started" else "#777"
        actual_bar = ""
        ran = [actual.get(k) for k in ("start_s", "stop_s")] if actual and state == "started" else []
        if ran and all(isinstance(t, int | float) for t in ran):
            a, b = PAD + ran[0] * scale, PAD + ran[1] * scale
            actual_bar = (
                f'<line x1="{a:.1f}" y1="{y + 11:.1f}" x2="{max(b, a + 1):.1f}" y2="{y + 11:.1f}" '
                f'stroke="{colour}" stroke-width="1.5"/>'
            )
        parts.append(
            f'<g class="fault-span {state}"><title>{escape(tip)}</title><rect x="{x:.1f}" y="{y}" '
            f'width="{width:.1f}" height="9" fill="{fill}"{style}/><text x="{x + 2:.1f}" y="{y + 7.5:.1f}" '
            f'font-size="8.5" fill="{text_fill}">{escape(name)}</text>{actual_bar}</g>'
        )
    axis_y = height - 2
    parts.append(
        f'<text x="{PAD}" y="{axis_y}" font-size="8" fill="#888">0</text><text x="{TIMELINE_W - PAD}" y="{axis_y}" '
        f'font-size="8" fill="#888" text-anchor="end">{escape(fmt(total_s))} s</text>'
    )
    label = f"schedule of run {record.get('run')}: {len(planned)} faults over {fmt(chaos_s)} s"
    return (
        f'<svg class="timeline" width="{TIMELINE_W}" height="{height}" viewBox="0 0 {TIMELINE_W} {height}" role="img" '
        f'aria-label="{escape(label)}">{"".join(parts)}</svg>'
    )


def strip_plot(values: dict[str, dict[str, list[float]]], field: str, colours: dict[str, str]) -> str:
    """Every measured value of ``field`` as a dot on one row per fault type, its median a tick; '' when nothing was
    measured."""
    rows = [(name, fields.get(field) or []) for name, fields in values.items() if fields.get(field)]
    if not rows:
        return ""
    top = max(v for _, vs in rows for v in vs) or 1.0
    scale = (STRIP_W - STRIP_LABEL_W - 2 * PAD) / top
    height = STRIP_ROW_H * len(rows) + 16
    parts = []
    for i, (name, vs) in enumerate(rows):
        y = 4 + i * STRIP_ROW_H + STRIP_ROW_H / 2
        colour = colours.get(name, "#777")
        parts.append(
            f'<text x="{STRIP_LABEL_W - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{escape(name)}</text>'
        )
        parts += [
            f'<circle cx="{STRIP_LABEL_W + v * scale:.1f}" cy="{y:.1f}" r="2.6" fill="{colour}" fill-opacity="0.55">'
            f"<title>{escape(name)}: {escape(fmt(v))} ms</title></circle>"
            for v in vs
        ]
        ordered = sorted(vs)
        median = (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2
        x = STRIP_LABEL_W + median * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="{y - 6:.1f}" x2="{x:.1f}" y2="{y + 6:.1f}" stroke="#222" stroke-width="1.5">'
            f"<title>median {escape(fmt(median))} ms</title></line>"
        )
    axis_y = height - 3
    parts.append(
        f'<text x="{STRIP_LABEL_W}" y="{axis_y}" font-size="9" fill="#888">0</text><text x="{STRIP_W - PAD}" '
        f'y="{axis_y}" font-size="9" fill="#888" text-anchor="end">{escape(fmt(top))} ms</text>'
    )
    return (
        f'<svg class="strip" width="{STRIP_W}" height="{height}" viewBox="0 0 {STRIP_W} {height}" role="img" '
        f'aria-label="{escape(field)} per fault type">{"".join(parts)}</svg>'
    )


def _header(campaign: dict[str, Any], summary: dict[str, Any]) -> str:
    title = f"Campaign {campaign.get('workload', '')} · seed {campaign.get('seed', '?')}"
    verdict = summary.get("verdict")
    meta = (
        f"{campaign.get('started_at') or 'start unknown'} – {campaign.get('finished_at') or '…'} · "
        f"{summary.get('runs_done', 0)} of {fmt(summary.get('runs_asked'))} runs"
        + (f" · {campaign['stopped']}" if campaign.get("stopped") else "")
    )
    counts = " ".join(f"{_badge(v)} {summary['verdicts'].get(v, 0)}" for v in VERDICTS)
    lost = summary.get("lost_acknowledged") or 0
    lost_line = (
        f'<p class="lost">{lost:,} acknowledged writes lost by durable writers, in runs '
        f"{_runs_list(summary.get('lost_acknowledged_runs') or [])}</p>"
        if lost
        else "<p>No acknowledged write lost by a durable writer.</p>"
    )
    rows = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(', '.join(map(str, v)) if isinstance(v, list) else fmt(v))}</td></tr>"  # noqa: E501
        for k, v in campaign.items()
        if not isinstance(v, dict) and v is not None
    )
    rows += "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(fmt(v))}</td></tr>"
        for k, v in campaign.items()
        if k != "cluster" and isinstance(v, dict)
    )
    cluster = campaign.get("cluster")
    facts = (
        f"<details "
        f'id="cluster"><summary>Cluster</summary><pre>{escape(json.dumps(cluster, indent=2, sort_keys=True, default=str))}</pre></details>'  # noqa: E501
        if cluster
        else ""
    )
    return (
        f'<h1 id="title">{escape(title)} {_badge(verdict) if verdict else ""}</h1><p class="meta">{escape(meta)}</p>'
        f'<p class="counts" id="verdicts">{counts}</p>{lost_line}'
        f'<section id="section-settings"><details open><summary>Settings</summary><table '
        f'class="facts">{rows}</table></details>{facts}</section>'
    )


def _anomaly_sections(summary: dict[str, Any]) -> str:
    anomalies = summary.get("anomalies") or {}
    judged = sum((summary.get("combinations") or {}).values())
    if not anomalies:
        return _section("Anomalies", _empty(f"No anomaly in {judged} judged runs."), "section-anomalies")
    parts = []
    for i, (name, entry) in enumerate(anomalies.items()):
        combos = sorted(
            (entry.get("combinations") or {}).items(),
            key=lambda c: (-c[1]["runs"] / max(1, c[1]["of"]), -c[1]["of"], c[0]),
        )
        rows = [
            [
                escape(combo),
                f"{c['runs']} of {c['of']} runs",
                escape(f"{100 * c['runs'] / c['of']:.0f}%") if c["of"] else DASH,
            ]
            for combo, c in combos
        ]
        parts.append(
            f'<h3 id="anomaly-{i}">{escape(name)}</h3><p>In {entry["runs"]} of {judged} judged runs, '
            f"{entry['total']:,} in all; "
            f"decided the verdict in {entry.get('decided_runs', 0)}. Runs: "
            f"{_runs_list(entry.get('run_indices') or [])}</p>"
            + _table(("fault combination", "runs showing it", "share"), rows, numeric_from=1)
        )
    return _section("Anomalies", "".join(parts), "section-anomalies")


def _spread_cells(
    value: dict[str, Any] | None, keys: tuple[str, ...] = ("n", "median", "p95", "min", "max")
) -> list[str]:
    return [_num((value or {}).get(k)) for k in keys]


def _unavailability(data: dict[str, Any], summary: dict[str, Any], colours: dict[str, str]) -> str:
    per_type = summary.get("unavailability") or {}
    if not per_type:
        return _section("Unavailability per fault type", _empty("No fault started."), "section-unavailability")
    rows = [
        [
            escape(name),
            _num(e.get("started")),
            *_spread_cells(e.get("max_unavailable_ms")),
            *_spread_cells(e.get("new_leader_ms"))[:3],
        ]
        for name, e in per_type.items()
    ]
    table = _table(
        (
            "fault",
            "started",
            "measured",
            "max unavailable ms median",
            "p95",
            "min",
            "max",
            "new leader measured",
            "median",
            "p95",
        ),
        rows,
        "unavailability",
        numeric_from=1,
    )
    values = unavailability_values(data.get("runs") or [])
    plots = "".join(
        f"<figure>{svg}<figcaption>{escape(field)}, per fault (dots) and median (tick)</figcaption></figure>"
        for field in UNAVAILABILITY_FIELDS
        if (svg := strip_plot(values, field, colours))
    )
    return _section("Unavailability per fault type", table + plots, "section-unavailability")


def _not_started(summary: dict[str, Any]) -> str:
    failed = summary.get("not_started") or {}
    if not failed:
        return ""
    rows = [
        [
            escape(name),
            f"{e['count']} of {e['of']}",
            _runs_list(e.get("run_indices") or []),
            escape(fmt(e.get("example"))),
        ]
        for name, e in failed.items()
    ]
    return _section(
        "Faults that could not start",
        _table(("fault", "could not start", "runs", "first reason"), rows, "not-started"),
        "section-not-started",
    )


def _times(summary: dict[str, Any]) -> str:
    rows = [
        [escape(label), *_spread_cells(summary.get(key))]
        for key, label in (("wall_s", "wall s"), ("overhead_s", "overhead s"))
    ]
    rows += [
        [escape(f"{phase} s"), *_spread_cells(value)] for phase, value in (summary.get("phase_seconds") or {}).items()
    ]
    combos = [[escape(c), str(n)] for c, n in (summary.get("combinations") or {}).items()]
    return _section(
        "Time per run", _table(("", "n", "median", "p95", "min", "max"), rows, "times", numeric_from=1), "section-times"
    ) + _section(
        "Runs per fault combination",
        _table(("fault combination", "judged runs"), combos, "combinations", numeric_from=1)
        if combos
        else _empty("No judged run."),
        "section-combinations",
    )


def _anomaly_cell(record: dict[str, Any], states: list[tuple[str, dict[str, Any] | None]]) -> str:
    decided = set(record.get("violations") or [])
    lines = [
        f'<div class="{"decided" if name in decided else ""}">{escape(name)} ×{_num(count)}</div>'
        for name, count in (record.get("anomalies") or {}).items()
    ]
    lines += [
        f"<div>known: {escape(str(k.get('anomaly')))} {_web_link(k.get('reference'))}</div>"
        for k in record.get("known") or []
    ]
    explanations = [e for e in record.get("explanations") or [] if isinstance(e, dict) and e.get("text")]
    if explanations:
        lines.append(f'<div class="why">{escape(str(explanations[0]["text"]))}</div>')
    if record.get("error"):
        lines.append(f'<div class="why">could not be carried out: {escape(str(record["error"]))}</div>')
    lines += [
        f'<div class="why">not started: {escape(str(a.get("fault")))} at {_num(a.get("start_s"))} s: '
        f"{escape(fmt(a.get('error')))}</div>"
        for state, a in states
        if state == "not-started" and a
    ]
    return "".join(lines) or '<span class="empty">none</span>'


def _run_rows(directory: Path, records: list[dict[str, Any]], colours: dict[str, str]) -> str:
    rows = []
    for record in sorted(records, key=lambda r: r["run"]):
        verdict = str(record.get("verdict"))
        run_dir = Path(str(record.get("dir") or directory))
        report = run_dir / REPORT_NAME
        links = [
            f'<a href="{_href(directory, report)}">report</a>'
            if verdict != ERROR or report.is_file()
            else '<span class="empty">no report</span>',
            f'<a href="{_href(directory, run_dir / SCHEDULE_FILE)}">{escape(SCHEDULE_FILE)}</a>',
        ]
        lost = int(record.get("lost_acknowledged") or 0)
        cells = [
            escape(str(record["run"])),
            _num(record.get("seed")),
            _badge(verdict),
            timeline(record, colours),
            _anomaly_cell(record, fault_states(record)),
            f'<span class="lost">{lost:,}</span>' if lost else "0",
            _num(record.get("wall_s")),
            _num(record.get("overhead_s")),
            "<br>".join(links),
        ]
        numeric = {5, 6, 7}
        body = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(cells))
        row_class = f"run {'invalid' if verdict == 'INVALID' else verdict.lower()}"
        rows.append(
            f'<tr id="run-{escape(str(record["run"]))}" class="{escape(row_class)}" '
            f'title="{escape(str(record.get("name", "")))}">{body}</tr>'
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "run",
            "seed",
            "verdict",
            "schedule (s into chaos)",
            "anomalies",
            "lost acked",
            "wall s",
            "overhead s",
            "files",
        )
    )
    legend = (
        '<p class="legend">'
        + "".join(f'<span><i style="background:{c};opacity:0.7"></i>{escape(n)}</span>' for n, c in colours.items())
        + '<span><i style="background:#ddd;outline:1px dashed #999"></i>did not start</span>'
        + '<span><i style="background:#999;opacity:0.25"></i>not recorded (run not carried out)</span></p>'
    )
    return _section(
        "Runs",
        legend + f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>',
        "section-runs",
    )


def render_index(directory: Path, data: dict[str, Any]) -> str:
    """The whole page as a string; links are relative to ``directory``."""
    campaign = data.get("campaign") or {}
    records = data.get("runs") or []
    summary = data.get("summary") or summarise(campaign, records)
    colours = fault_colours(data)
    parts = [
        DEFS,
        _header(campaign, summary),
        _anomaly_sections(summary),
        _unavailability(data, summary, colours),
        _not_started(summary),
        _times(summary),
        _run_rows(Path(directory), records, colours),
    ]
    title = (
        f"campaign {campaign.get('workload', '')} seed {campaign.get('seed', '?')} — "
        f"{summary.get('verdict') or 'no runs'}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}{EXTRA_CSS}</style></head>\n<body>\n"
        + "\n".join(p for p in parts if p)
        + "\n</body></html>\n"
    )


def write_index(directory: Path, data: dict[str, Any]) -> Path:
    """index.html in ``directory`` for ``data`` (campaign.json's content), replaced whole; returns its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / INDEX_NAME
    temporary = path.with_name(f".{INDEX_NAME}.{os.getpid()}.tmp")
    temporary.write_text(render_index(directory, data))
    os.replace(temporary, path)
    return path
