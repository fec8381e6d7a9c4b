"""``failsafe pipeline verify``: a pipeline's output against the simulator's ledger, and its terminal rendering.

This is the composition point: it reads the sink (``pipeline.sink``) and the ledger (the
simulator's own ``read_ledger``, the one reader of that format) and hands both to the pure checker
``checkers.sales``. A ledger that is absent, incomplete, or whose chunks disagree with its manifest
proves nothing, so it is refused (a ``LedgerError``, exit code 2); an output directory that cannot
be read becomes ``valid: "unknown"`` with the reason, as a checker that raises does.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from failsafe.checkers.pipeline.sales import ANOMALIES, DEFAULT_WINDOW_S, UNKNOWN, check_sales
from failsafe.errors import UserError
from failsafe.pipeline.sink import read_dead_letters, read_progress, read_sales_rows, rows_dropped_by_watermark
from failsafe.reports.summary import verdict
from failsafe.reports.terminal import VERDICT_STYLE
from failsafe.workloads.sales.ledger import Ledger, read_ledger

_READ_ERRORS = (OSError, ValueError, TypeError, pl.exceptions.PolarsError)


def verify_output(output_dir: Path | str, ledger_dir: Path | str, *, window_s: int | None = None) -> dict[str, Any]:
    """check_sales over the output's sales rows and committed dead letters against a complete ledger.

    ``window_s`` defaults to the sink's own window length (window_end - window_start), else 60.
    """
    output = Path(output_dir)
    if not output.is_dir():
        raise UserError(f"no pipeline output at {output}: pass the --output directory `failsafe pipeline run` wrote")
    ledger = read_ledger(ledger_dir)
    where = {"output_dir": str(output), "ledger_dir": str(ledger_dir), "ledger": _ledger_summary(ledger)}
    try:
        # Every batch's rows: the checker takes each key's current total (its row of the largest batch_id).
        sink = read_sales_rows(output)
        dead_letters = read_dead_letters(output)
        dropped = rows_dropped_by_watermark(read_progress(output))
        window = window_s if window_s is not None else _window_s(sink)
    except _READ_ERRORS as e:
        return {"valid": UNKNOWN, "error": f"cannot read the pipeline output: {type(e).__name__}: {e}", **where}
    result = check_sales(
        ledger.purchases, ledger.malformed, sink, dead_letters, rows_dropped_by_watermark=dropped, window_s=window
    )
    return {**result, **where}


def _window_s(sink: pl.DataFrame) -> int:
    """The sink's window length in seconds; one length only, since windows are tumbling."""
    if sink.height == 0 or "window_end" not in sink.columns:
        return DEFAULT_WINDOW_S
    length = (pl.col("window_end") - pl.col("window_start")).dt.total_microseconds()
    lengths = sink.select(length.unique().alias("length"))["length"].drop_nulls()
    if lengths.len() == 0:
        return DEFAULT_WINDOW_S
    if lengths.len() != 1 or lengths[0] <= 0 or lengths[0] % 1_000_000:
        raise ValueError(
            f"the sink's windows are not tumbling windows of one whole number of seconds: lengths "
            f"{lengths.to_list()} µs"
        )
    return int(lengths[0]) // 1_000_000


def _ledger_summary(ledger: Ledger) -> dict[str, Any]:
    keys = ("seed", "instances", "acknowledged", "malformed", "started_at", "finished_at")
    return {
        **{k: ledger.manifest.get(k) for k in keys},
        "purchase_rows": ledger.purchases.height,
        "malformed_rows": ledger.malformed.height,
    }


def render_verification(result: dict[str, Any], console: Console) -> None:
    """The verdict, ledger vs sink totals, revenue per category, and every anomaly found with examples."""
    word = verdict(result.get("valid"))
    console.print(Text.assemble((word, VERDICT_STYLE.get(word, "")), "  ", ("pipeline output vs ledger", "bold")))
    if "error" in result:
        console.print(f"Could not check: {result['error']}", style="yellow")
        return
    console.print(_totals_table(result))
    categories = _category_table(result.get("by_category") or [])
    if categories is not None:
        console.print(categories)
    counts = result.get("counts", {})
    found = [name for name in ANOMALIES if counts.get(name)]
    if not found:
        console.print("No anomalies: every window and dead letter matches the ledger.", style="green")
    else:
        table = _table("Anomalies", "anomaly", "count", "examples", numeric=(1,))
        for name in found:
            shown = [_example_text(example) for example in result.get("examples", {}).get(name, [])[:3]]
            table.add_row(name, f"{counts[name]:,}", "\n".join(shown))
        console.print(table)
    dropped = result.get("rows_dropped_by_watermark")
    if dropped:
        console.print(
            f"The watermark dropped {dropped:,} late row(s): a purchase read after the watermark passed its window is "
            "not counted; Spark counts a late (window, product) group as one row, so at least that many purchases "
            "were dropped, which can explain an undercount.",
            style="yellow",
        )


def _table(title: str, *headers: str, numeric: tuple[int, ...] = (1, 2, 3)) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i in numeric else "left", overflow="fold", no_wrap=i in numeric)
    return table


def _totals_table(result: dict[str, Any]) -> Table:
    ledger, sink = result["totals"]["ledger"], result["totals"]["sink"]
    counts = result["counts"]
    table = _table("Totals", "", "ledger", "sink", "sink - ledger")
    rows = [
        ("purchases", ledger["purchases"], sink["purchases"], _int),
        ("quantity", ledger["quantity"], sink["quantity"], _int),
        ("revenue", ledger["revenue_cents"], sink["revenue_cents"], money),
        ("member purchases", ledger["member_purchases"], sink["member_purchases"], _int),
        ("product windows", counts["windows_expected"], counts["windows_in_sink"], _int),
        ("dead letters", counts["ledger_malformed"], counts["dead_letters"], _int),
    ]
    for label, left, right, fmt in rows:
        difference = right - left
        table.add_row(
            label, fmt(left), fmt(right), Text(fmt(difference, signed=True), style="red" if difference else "dim")
        )
    return table


def _category_table(by_category: list[dict[str, Any]]) -> Table | None:
    totals: dict[str, list[int]] = {}
    for row in by_category:
        pair = totals.setdefault(row["category"] or "(unknown)", [0, 0])
        pair[0] += row["ledger_revenue_cents"]
        pair[1] += row["sink_revenue_cents"]
    if not totals:
        return None
    table = _table("Revenue by category", "category", "ledger", "sink", "sink - ledger")
    for category in sorted(totals):
        left, right = totals[category]
        table.add_row(
            category,
            money(left),
            money(right),
            Text(money(right - left, signed=True), style="red" if right != left else "dim"),
        )
    return table


def money(cents: int, signed: bool = False) -> str:
    """Integer cents as an exact decimal amount: 1234 -> '12.34'."""
    amount = Decimal(int(cents)).scaleb(-2)
    return f"{amount:+,.2f}" if signed else f"{amount:,.2f}"


def _int(value: int, signed: bool = False) -> str:
    return f"{value:+,}" if signed else f"{value:,}"


def _example_text(example: dict[str, Any]) -> str:
    return " ".join(f"{name}={value}" for name, value in example.items())
