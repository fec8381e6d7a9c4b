"""``failsafe pipeline verify``: a pipeline's output against the simulator's ledger, and its terminal rendering.

A ledger that is absent or incomplete proves nothing, so it is refused (a ``UserError``); an
output directory that cannot be read becomes ``valid: "unknown"`` with the reason, as a checker
that raises does.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from failsafe.checkers.sales import ANOMALIES, DEFAULT_WINDOW_S, UNKNOWN, check_sales
from failsafe.errors import UserError
from failsafe.pipeline.sink import read_dead_letters, read_progress, read_sales_by_product, rows_dropped_by_watermark
from failsafe.reports.summary import verdict
from failsafe.reports.terminal import VERDICT_STYLE
from failsafe.workloads.sales.ledger import MALFORMED_SCHEMA, PURCHASES_SCHEMA

LEDGER_FORMAT = 1
MANIFEST = "manifest.json"
_LEDGER_FILE = r"{kind}-\d+-\d+\.parquet"
_READ_ERRORS = (OSError, ValueError, TypeError, pl.exceptions.PolarsError)


class _Ledger(NamedTuple):
    manifest: dict[str, Any]
    purchases: pl.DataFrame
    malformed: pl.DataFrame


def verify_output(output_dir: Path | str, ledger_dir: Path | str, *, window_s: int | None = None) -> dict[str, Any]:
    """check_sales over the output's current totals and committed dead letters against a complete ledger.

    ``window_s`` defaults to the sink's own window length (window_end - window_start), else 60.
    """
    output = Path(output_dir)
    if not output.is_dir():
        raise UserError(f"no pipeline output at {output}: pass the --output directory `failsafe pipeline run` wrote")
    ledger = _read_ledger(Path(ledger_dir))
    where = {"output_dir": str(output), "ledger_dir": str(ledger_dir), "ledger": _ledger_summary(ledger)}
    try:
        sink = read_sales_by_product(output)
        dead_letters = read_dead_letters(output)
        dropped = rows_dropped_by_watermark(read_progress(output))
        window = window_s if window_s is not None else _window_s(sink)
    except _READ_ERRORS as e:
        return {"valid": UNKNOWN, "error": f"cannot read the pipeline output: {type(e).__name__}: {e}", **where}
    result = check_sales(ledger.purchases, ledger.malformed, sink, dead_letters, rows_dropped_by_watermark=dropped, window_s=window)
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
        raise ValueError(f"the sink's windows are not tumbling windows of one whole number of seconds: lengths {lengths.to_list()} µs")
    return int(lengths[0]) // 1_000_000


def _read_ledger(ledger_dir: Path) -> _Ledger:
    """The manifest and every purchases/malformed chunk, refusing a ledger the simulator did not finish."""
    manifest_path = ledger_dir / MANIFEST
    if not manifest_path.is_file():
        raise UserError(f"no {MANIFEST} in {ledger_dir}: pass the --ledger directory `failsafe simulate sales` wrote")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"cannot read {manifest_path}: {e}") from e
    if not isinstance(manifest, dict) or manifest.get("format") != LEDGER_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else manifest
        raise UserError(f"{manifest_path} is not a ledger manifest of format {LEDGER_FORMAT} (format: {found!r})")
    if manifest.get("complete") is not True:
        raise UserError(
            f"the ledger in {ledger_dir} is incomplete (complete: {manifest.get('complete')!r}): the simulator did not finish "
            "writing it, so it cannot prove what was acknowledged; let `failsafe simulate sales` end cleanly and verify again"
        )
    return _Ledger(manifest, _read_chunks(ledger_dir, "purchases", PURCHASES_SCHEMA), _read_chunks(ledger_dir, "malformed", MALFORMED_SCHEMA))


def _read_chunks(ledger_dir: Path, kind: str, schema: pl.Schema) -> pl.DataFrame:
    pattern = re.compile(_LEDGER_FILE.format(kind=kind))
    files = sorted(p for p in ledger_dir.iterdir() if pattern.fullmatch(p.name) and p.is_file())
    if not files:
        return pl.DataFrame(schema=schema)
    try:
        frame = pl.scan_parquet(files, glob=False, hive_partitioning=False).select(list(schema)).collect()
        # The checker normalises timestamps (naive or UTC-aware); the other columns get the contract's types.
        return frame.cast({name: dtype for name, dtype in schema.items() if name != "transaction_time"})
    except (OSError, pl.exceptions.PolarsError) as e:
        raise UserError(f"cannot read the {kind} chunks of the ledger in {ledger_dir}: {e}") from e


def _ledger_summary(ledger: _Ledger) -> dict[str, Any]:
    keys = ("seed", "instances", "acknowledged", "malformed", "started_at", "finished_at")
    return {**{k: ledger.manifest.get(k) for k in keys}, "purchase_rows": ledger.purchases.height, "malformed_rows": ledger.malformed.height}


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
        console.print(f"The watermark dropped {dropped:,} late row(s): a purchase read after the watermark passed its window is "
                      "not counted, which explains an undercount of up to that many purchases.", style="yellow")


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
        table.add_row(label, fmt(left), fmt(right), Text(fmt(difference, signed=True), style="red" if difference else "dim"))
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
        table.add_row(category, money(left), money(right), Text(money(right - left, signed=True), style="red" if right != left else "dim"))
    return table


def money(cents: int, signed: bool = False) -> str:
    """Integer cents as an exact decimal amount: 1234 -> '12.34'."""
    amount = Decimal(int(cents)).scaleb(-2)
    return f"{amount:+,.2f}" if signed else f"{amount:,.2f}"


def _int(value: int, signed: bool = False) -> str:
    return f"{value:+,}" if signed else f"{value:,}"


def _example_text(example: dict[str, Any]) -> str:
    return " ".join(f"{name}={value}" for name, value in example.items())
