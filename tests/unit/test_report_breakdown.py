"""The failover breakdown's table in the terminal summary and report.html (reports/summary.py breakdown_rows)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from failsafe.checkers.measure.faults import measure
from failsafe.history.load import history_from_ops
from failsafe.history.ops import NodeEvent, node_event
from failsafe.reports import render_summary, write_report
from failsafe.reports.summary import breakdown_notes, breakdown_rows
from tests.unit.test_reports import MS, T0, ops

FENCED = node_event(
    1000,
    NodeEvent.FENCED,
    T0 + 1400 * MS,
    broker=1,
    line="Fencing broker 1 at epoch 12 because its session has timed out.",
)


def _results(*extra: dict) -> tuple[dict, object]:
    """The reports' hand-written run (broker 1 killed at 1 s, leader 2 sampled at 1.5 s, a write acknowledged at 2.45
    s)."""
    history = history_from_ops([*ops(), *extra])
    return {"valid": True, "checkers": {}, "measurements": measure(history)}, history


def _text(results: dict, history: object) -> str:
    out = io.StringIO()
    render_summary(Console(file=out, width=100, no_color=True, color_system=None), results, history)
    return out.getvalue()


def test_a_row_per_failover_with_each_component_in_seconds(tmp_path: Path) -> None:
    results, history = _results(FENCED)
    [row] = breakdown_rows(results)
    assert row == ("7", "orders-0", "1 → 2", "0.400", "0.100", "0.950", "0.900", "2.320")
    text = _text(results, history)
    assert "Where the time goes" in text
    line = next(line for line in text.splitlines() if line.strip().startswith("7") and "orders-0" in line)
    assert "0.400" in line and "0.950" in line
    assert "up to 0.25 s after it came" in text
    page = write_report(tmp_path, results, history).read_text(encoding="utf-8")
    section = page.split('<section id="section-breakdown">', 1)[1].split("</section>", 1)[0]
    assert '<td class="num">0.400</td>' in section and "<td>orders-0</td>" in section


def test_unknown_components_show_a_dash_and_the_reason_once() -> None:
    results, history = _results()  # no node-event: the logs were not read
    [row] = breakdown_rows(results)
    assert row[3:5] == ("—", "—") and row[5] == "0.950"
    notes = breakdown_notes(results)
    assert "detection unknown: no node-event in the history: the nodes' logs were not read (1 row)" in notes
    assert "election unknown: detection unknown (see detection_s) (1 row)" in notes
    assert "the nodes' logs were not read" in _text(results, history)


def test_no_breakdown_no_table_and_junk_is_tolerated() -> None:
    assert breakdown_rows({"measurements": {}}) == [] and breakdown_notes({"measurements": {}}) == []
    assert breakdown_rows({"measurements": {"failover_breakdown": {"partitions": "?"}}}) == []
    assert breakdown_notes({"measurements": {"failover_breakdown": {"error": "ValueError: boom"}}}) == [
        "the breakdown could not be measured: ValueError: boom"
    ]
    assert "Where the time goes" not in _text({"valid": True, "checkers": {}}, None)


def test_a_breakdown_that_could_not_be_measured_is_said_in_both_reports() -> None:
    from failsafe.reports.summary import breakdown_failed, breakdown_rows

    results = {"measurements": {"failover_breakdown": {"error": "ValueError: boom"}}}
    assert (
        breakdown_rows(results) == []
        and breakdown_failed(results) == "the breakdown could not be measured: ValueError: boom"
    )
    assert breakdown_failed({"measurements": {"failover_breakdown": {"partitions": []}}}) is None
