"""The terminal summary of one run: verdict, expectations, checkers, measured failover times, acks matrix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from failsafe.reports.summary import (
    BREAKDOWN_HEADERS,
    KNOWN_HEADERS,
    PRODUCER_COLUMNS,
    STALL_HEADERS,
    availability_totals,
    breakdown_failed,
    breakdown_notes,
    breakdown_rows,
    checker_rows,
    expectation_rows,
    fault_rows,
    known_rows,
    producer_rows,
    run_verdict,
    stall_baseline,
    stall_rows,
    unexplained,
)

if TYPE_CHECKING:
    from failsafe.history.model import History

# FaultRow.HEADERS folded to fit 100 columns.
TERMINAL_FAULT_HEADERS = (
    "#",
    "fault",
    "nodes",
    "partitions affected",
    "max\nunavailable\nms",
    "new\nleader\nms",
    "rebalances\nduring",
    "rebalance\npause ms",
)
VERDICT_STYLE = {"VALID": "bold green", "KNOWN": "bold magenta", "INVALID": "bold red", "UNKNOWN": "bold yellow"}


def _verdict_text(word: str) -> Text:
    return Text(word, style=VERDICT_STYLE.get(word, ""))


def _table(
    title: str, *headers: str, numeric_from: int | None = None, min_widths: dict[int, int] | None = None
) -> Table:
    """A table; text columns fold when the terminal is narrow, numeric ones (from ``numeric_from``) never do."""
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, expand=False, pad_edge=False, padding=(0, 1, 0, 0)
    )
    for i, header in enumerate(headers):
        numeric = numeric_from is not None and i >= numeric_from
        table.add_column(
            header,
            justify="right" if numeric else "left",
            overflow="fold",
            no_wrap=numeric,
            min_width=(min_widths or {}).get(i),
        )
    return table


MAX_ANOMALY_SENTENCES = 10


def _print_anomalies(console: Console, results: dict, run_dir: object | None) -> None:
    """One sentence per explained anomaly (results["explanations"], checkers/explain/sentences.py), the first few
    only."""
    explanations = results.get("explanations") or []
    if not explanations:
        return
    console.print(Text("Anomalies", style="italic"))
    for e in explanations[:MAX_ANOMALY_SENTENCES]:
        console.print(
            Text.assemble(
                ("  " + f"{e.get('checker', '?')} {e.get('anomaly', '')}".strip() + ": ", "bold"),
                str(e.get("sentence", "")),
            )
        )
    more = len(explanations) - MAX_ANOMALY_SENTENCES
    if more > 0:
        console.print(f"  ... and {more} more: failsafe explain {run_dir or 'RUN_DIR'}", style="dim")


def render_summary(
    console: Console, results: dict, history: History | None = None, run_dir: object | None = None
) -> None:
    """Print the summary of one run's results (and the fault windows of its history, when given)."""
    word = run_verdict(results)
    line = Text.assemble(_verdict_text(word), "  ", (str(results.get("scenario") or "scenario"), "bold"))
    if history is not None:
        line.append(f"  ({history.op_count:,} ops)", style="dim")
    console.print(line)
    if results.get("incomplete"):
        # Why the run is UNKNOWN whatever its checkers found: said first, in one line.
        console.print(Text(f"not judged: {results['incomplete']}", style="bold yellow"))
    known = known_rows(results)
    if known:
        table = _table("Known anomalies (not VALID: each matched a declared condition)", *KNOWN_HEADERS)
        for row in known:
            table.add_row(*row)
        console.print(table)
    if known and unexplained(results):
        console.print(Text("not covered by a known anomaly: " + ", ".join(unexplained(results)), style="bold red"))

    expectations = expectation_rows(results)
    if expectations:
        table = _table("Expectations", "expectation", "expected", "observed", "verdict")
        for name, expected, observed, v in expectations:
            table.add_row(name, expected, observed, _verdict_text(v))
        console.print(table)
    else:
        console.print("No expectations.", style="dim")

    checkers = checker_rows(results)
    if checkers:
        table = _table("Checkers", "checker", "valid", "counts")
        for name, v, detail in checkers:
            table.add_row(name, _verdict_text(v), detail)
        console.print(table)

    _print_anomalies(console, results, run_dir)

    faults = fault_rows(results, history)
    totals = availability_totals(results)
    if faults:
        table = _table("Measured times", *TERMINAL_FAULT_HEADERS, numeric_from=4, min_widths={1: 11, 3: 18})
        for row in faults:
            table.add_row(*row.cells())
        console.print(table)
    if totals:
        grid = Table.grid(padding=(0, 2))
        grid.add_column()
        grid.add_column(justify="right")
        for label, value in totals:
            grid.add_row(label, value)
        console.print(grid)

    breakdown = breakdown_rows(results)
    if breakdown:
        table = _table("Where the time goes (per failover)", *BREAKDOWN_HEADERS, numeric_from=3)
        for row in breakdown:
            table.add_row(*row)
        console.print(table)
        for note in breakdown_notes(results):
            console.print(Text("  " + note, style="dim"))
    elif breakdown_failed(results):
        console.print(f"Where the time goes: {breakdown_failed(results)}")

    stalls = stall_rows(results)
    if stalls:
        baseline = stall_baseline(results)
        title = "Write stalls by replica role" + (f" (baseline ack gap {baseline})" if baseline else "")
        table = _table(title, *STALL_HEADERS, numeric_from=2)
        for row in stalls:
            table.add_row(*row)
        console.print(table)

    producers = producer_rows(results)
    if producers:
        table = _table("Producers (sends by outcome)", "producer", *PRODUCER_COLUMNS, numeric_from=1)
        for row in producers:
            table.add_row(*row)
        console.print(table)
