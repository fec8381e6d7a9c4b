"""report.html: one self-contained page (no network, no script) with the run's tables and plots."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import failsafe.reports.plots as plots
import failsafe.reports.series as series
import failsafe.reports.txn_report as txn_report
from failsafe.reports.metrics_plots import metrics_plots
from failsafe.reports.summary import (
    BREAKDOWN_HEADERS,
    KNOWN_HEADERS,
    PRODUCER_COLUMNS,
    STALL_HEADERS,
    FaultRow,
    availability_totals,
    breakdown_failed,
    breakdown_notes,
    breakdown_rows,
    checker_rows,
    expectation_rows,
    fault_rows,
    fmt,
    known_rows,
    producer_rows,
    run_verdict,
    stall_baseline,
    stall_rows,
    unexplained,
)

if TYPE_CHECKING:
    from failsafe.history.model import History

REPORT_NAME = "report.html"

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto; max-width: 1140px;
       color: #222; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.15rem; margin-top: 1.8rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta { color: #666; margin-top: 0; }
.verdict { font-weight: bold; padding: 0.1rem 0.45rem; border-radius: 3px; color: #fff; }
.VALID { background: #2e7d32; } .KNOWN { background: #6a1b9a; } .INVALID { background: #c62828; } .UNKNOWN { background: #b26a00; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 0.25rem 0.7rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; }
figure img { width: 100%; height: auto; display: block; }
figcaption { color: #666; font-size: 0.85rem; }
pre { background: #f7f7f7; padding: 0.7rem; overflow-x: auto; font-size: 0.8rem; }
details { margin: 0.6rem 0; } summary { cursor: pointer; }
.empty { color: #888; }
h3 { font-size: 1rem; margin: 1.2rem 0 0.3rem; }
.cycles { display: flex; flex-wrap: wrap; gap: 0.8rem; }
.cycles figure { margin: 0; flex: 0 1 340px; }
"""


def _badge(word: str) -> str:
    return f'<span class="verdict {escape(word)}">{escape(word)}</span>'


def _table(
    table_id: str,
    headers: tuple[str, ...],
    rows: list[tuple[str, ...]],
    verdict_col: int | None = None,
    numeric_from: int | None = None,
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            if i == verdict_col:
                cells.append(f"<td>{_badge(cell)}</td>")
            elif numeric_from is not None and i >= numeric_from:
                cells.append(f'<td class="num">{escape(cell)}</td>')
            else:
                cells.append(f"<td>{escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _section(title: str, content: str, section_id: str) -> str:
    return f'<section id="{section_id}"><h2>{escape(title)}</h2>{content}</section>'


def _empty(text: str) -> str:
    return f'<p class="empty">{escape(text)}</p>'


def _started(history: History, manifest: dict | None) -> str:
    tl = series.timeline(history)
    if tl is not None:
        return datetime.fromtimestamp(tl.t0_ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    for key in ("start_time", "started_at", "start"):
        if manifest and manifest.get(key):
            return str(manifest[key])
    return "time unknown"


def _kafka_version(manifest: dict | None) -> str | None:
    if not manifest:
        return None
    for key in ("kafka_version", "kafka"):
        value = manifest.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and isinstance(value.get("version"), str):
            return value["version"]
    return None


def _node_text(node: object) -> str:
    if isinstance(node, dict):
        roles = node.get("roles")
        return (
            f"{node.get('id')} ({'+'.join(str(r) for r in roles)})" if isinstance(roles, list) else str(node.get("id"))
        )
    return str(node)


def _facts(value: dict) -> str:
    """The manifest's top-level scalars (and its node list) as a key/value table above the full JSON."""
    rows = [(str(k), fmt(v)) for k, v in value.items() if not isinstance(v, (dict, list)) and v is not None]
    nodes = value.get("nodes")
    if isinstance(nodes, list) and nodes:
        rows.append(("nodes", ", ".join(_node_text(n) for n in nodes)))
    if not rows:
        return ""
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="facts">{body}</table>'


def _json_details(summary: str, value: dict | None, details_id: str, facts: bool = False) -> str:
    if not value:
        return ""
    text = json.dumps(value, indent=2, sort_keys=True, default=str)
    table = _facts(value) if facts else ""
    return f'<details id="{details_id}"><summary>{escape(summary)}</summary>{table}<pre>{escape(text)}</pre></details>'


def _figure_html(figure_id: str, caption: str, uri: str) -> str:
    return (
        f'<figure id="{figure_id}"><img alt="{escape(caption)}" '
        f'src="{uri}"><figcaption>{escape(caption)}</figcaption></figure>'
    )


def _transactions(results: dict, history: History) -> str:
    """Outcomes per writer, the timeline, the transactions anomalies name and the cycles explained (txn_report.py)."""
    tl = series.timeline(history)
    outcomes = txn_report.outcome_rows(history, results)
    parts = [
        _table("txn-outcomes", txn_report.OUTCOME_HEADERS, outcomes, numeric_from=2)
        if outcomes
        else _empty("The history records no transaction.")
    ]
    if outcomes:
        parts.append(
            "<p>unknown: the commit or abort returned no answer, or never completed (those are drawn to the end of "
            "the run, hatched).</p>"
        )
        parts.append(
            _figure_html(
                "plot-txns",
                "Transactions per writer by status",
                plots.svg_data_uri(txn_report.timeline_plot(history, tl, results, plots.left_margin(history))),
            )
        )
    checker = txn_report.checker_result(results)
    named = txn_report.anomaly_rows(history, results, tl)
    parts.append("<h3>Transactions named by an anomaly</h3>")
    if named:
        total = len(txn_report.named_txns(results))
        more = f" The first {len(named)} of {total}." if total > len(named) else ""
        parts.append(
            f'<p>As the transactions checker names them (docs/checkers.md, "transactions").{escape(more)}</p>'
            + _table("txn-anomalies", txn_report.ANOMALY_HEADERS, named)
        )
    else:
        parts.append(
            _empty("None." if checker and not checker.get("error") else "The transactions checker has no result.")
        )
    found = txn_report.cycles(results)
    if found:
        figures = "".join(
            _figure_html(
                f"plot-cycle-{anomaly.lower()}-{number}",
                txn_report.cycle_caption(anomaly, number, cycle),
                plots.svg_data_uri(txn_report.cycle_plot(anomaly, number, cycle)),
            )
            for anomaly, number, cycle in found
        )
        parts.append(
            "<h3>Dependency cycles</h3><p>One shortest cycle per strongly connected component (wr: the later "
            "transaction "
            "read a write of the earlier; ww: its write follows the earlier's in the log).</p>"
            f'<div class="cycles">{figures}</div>'
        )
    return "".join(parts)


def render_html(results: dict, history: History, scenario: dict | None = None, manifest: dict | None = None) -> str:
    """The whole page as a string."""
    word = run_verdict(results)
    name = str(results.get("scenario") or (scenario or {}).get("name") or "scenario")
    started = _started(history, manifest)
    kafka = _kafka_version(manifest)
    meta = f"{started} · {history.op_count:,} ops" + (f" · Kafka {kafka}" if kafka else "")

    parts = [f'<h1 id="title">{escape(name)} {_badge(word)}</h1>', f'<p class="meta">{escape(meta)}</p>']
    if results.get("incomplete"):
        parts.append(f'<p id="incomplete"><strong>Not judged:</strong> {escape(str(results["incomplete"]))}</p>')

    known = known_rows(results)
    if known:
        note = f"<p>Not covered: {escape(', '.join(unexplained(results)))}</p>" if unexplained(results) else ""
        parts.append(
            _section("Known anomalies", _table("known-anomalies", KNOWN_HEADERS, known) + note, "section-known")
        )
    expectations = expectation_rows(results)
    parts.append(
        _section(
            "Expectations",
            _table("expectations", ("expectation", "expected", "observed", "verdict"), expectations, verdict_col=3)
            if expectations
            else _empty("No expectations."),
            "section-expectations",
        )
    )
    checkers = checker_rows(results)
    parts.append(
        _section(
            "Checkers",
            _table("checkers", ("checker", "valid", "counts"), checkers, verdict_col=1)
            if checkers
            else _empty("No checker results."),
            "section-checkers",
        )
    )
    explanations = [e for e in results.get("explanations") or [] if isinstance(e, dict)]
    if explanations:
        rows = [
            (str(e.get("checker", "")), str(e.get("anomaly", "")), str(e.get("sentence", ""))) for e in explanations
        ]
        parts.append(
            _section("Anomalies", _table("anomalies", ("checker", "anomaly", "sentence"), rows), "section-anomalies")
        )

    faults = fault_rows(results, history)
    totals = availability_totals(results)
    times = (
        _table("measured-times", FaultRow.HEADERS, [r.cells() for r in faults], numeric_from=4)
        if faults
        else _empty("No faults were injected.")
    )
    if totals:
        times += "<p>" + " · ".join(f"{escape(label)}: <b>{escape(value)}</b>" for label, value in totals) + "</p>"
    parts.append(_section("Measured times", times, "section-times"))

    breakdown = breakdown_rows(results)
    if breakdown:
        notes = "".join(f"<li>{escape(note)}</li>" for note in breakdown_notes(results))
        intro = (
            "<p>Per fault and partition whose leader it took: detection (the fault in force to the broker fenced), "
            "election (to the first topology sample with a new leader), propagation (to the first write "
            "acknowledged after it), the first writer's own backoff, and the client-visible window.</p>"
        )
        parts.append(
            _section(
                "Where the time goes",
                intro
                + _table("failover-breakdown", BREAKDOWN_HEADERS, breakdown, numeric_from=3)
                + (f"<ul>{notes}</ul>" if notes else ""),
                "section-breakdown",
            )
        )
    elif breakdown_failed(results):
        parts.append(
            _section("Where the time goes", f"<p>{escape(breakdown_failed(results))}</p>", "section-breakdown")
        )

    stalls = stall_rows(results)
    if stalls:
        baseline = stall_baseline(results)
        note = (
            "<p>Per fault, each partition's longest stretch between two acknowledgements that overlaps the fault, "
            "grouped by the faulted broker's role for the partition (led, follower, unreplicated; all for a "
            "controller or quorum fault)."
            + (
                f" Baseline gap between acknowledgements before the first fault: <b>{escape(baseline)}</b>."
                if baseline
                else ""
            )
            + "</p>"
        )
        parts.append(
            _section(
                "Write stalls by replica role",
                note + _table("write-stalls", STALL_HEADERS, stalls, numeric_from=2),
                "section-stalls",
            )
        )

    producers = producer_rows(results)
    if producers:
        parts.append(
            _section(
                "Producers (sends by outcome)",
                _table("producers", ("producer", *PRODUCER_COLUMNS), producers, numeric_from=1),
                "section-producers",
            )
        )

    if txn_report.has_transactions(history, results):
        parts.append(_section("Transactions", _transactions(results, history), "section-transactions"))

    figures = []
    anomalies_ns = [e["time_ns"] for e in explanations if isinstance(e.get("time_ns"), int)]
    tl = series.timeline(history)
    for plot_id, caption, fig in [
        *plots.all_plots(history, anomalies_ns),
        *metrics_plots(history, tl, plots.left_margin(history)),
    ]:
        figures.append(_figure_html(plot_id, caption, plots.svg_data_uri(fig)))
    parts.append(_section("Over time", "".join(figures), "section-plots"))

    run_info = _json_details(
        "Manifest (Kafka version, nodes, configs)", manifest, "manifest", facts=True
    ) + _json_details("Scenario as run", scenario, "scenario")
    if run_info:
        parts.append(_section("Run", run_info, "section-run"))

    title = f"{name} — {started} — {word}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def write_report(
    run_dir: Path, results: dict, history: History, scenario: dict | None = None, manifest: dict | None = None
) -> Path:
    """Write ``run_dir/report.html`` (replacing it atomically) and return its path."""
    run_dir = Path(run_dir)
    path = run_dir / REPORT_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_html(results, history, scenario, manifest), encoding="utf-8")
    tmp.replace(path)
    return path
