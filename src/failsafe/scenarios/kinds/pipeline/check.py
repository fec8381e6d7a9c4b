"""The verdict of a pipeline scenario: the query never stopped (from the history) and the sink equals the ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
from rich.console import Console
from rich.table import Table

from failsafe.checkers import ALWAYS, durability, run_checkers
from failsafe.checkers.common import UNKNOWN
from failsafe.checkers.pipeline import judgeable as pipeline_run
from failsafe.checkers.run import combine_validity
from failsafe.errors import UserError
from failsafe.history.model import History
from failsafe.scenarios.base import Scenario
from failsafe.scenarios.expectations import evaluate_all
from failsafe.scenarios.kinds.pipeline.published import publish_modes
from failsafe.scenarios.known import classify
from failsafe.scenarios.store.check import hold_incomplete, load_run_history, write_results
from failsafe.scenarios.store.rundir import RunDir


def check_pipeline_run(run_dir: RunDir, scenario: Scenario | None) -> tuple[dict[str, Any], History]:
    """Judge the run from its history, then verify its sink against its ledger; write and return results.json (and the
    history).

    ``checkers`` holds both verdicts as every kind's results do: ``pipeline`` (the history) and ``sales`` (sink
    against ledger, absent when it could not be compared); ``pipeline`` and ``verification`` repeat them for the report.
    """
    from failsafe.pipeline.verify import verify_output

    history = load_run_history(run_dir)
    options = scenario.checker_options() if scenario is not None else {}
    facts = pipeline_run.check(history, options.get("pipeline"))
    # Without a complete ledger or a drained pipeline there is nothing the sink could be compared with.
    decidable = not facts["reasons"]
    verification = verify_output(run_dir.path / "output", run_dir.path / "ledger") if decidable else None
    if facts["valid"] is False:
        valid: object = False
    elif verification is None:
        valid = UNKNOWN
    else:
        valid = combine_validity([facts["valid"], verification["valid"]])
    # The checkers every run gets; durability judges the simulator's acknowledged purchases (its ledger) against the
    # final read.
    always = run_checkers(history, options, ())
    always["durability"] = _durability(run_dir, history)
    valid = combine_validity([valid, *(c.get("valid", UNKNOWN) for c in always.values())])
    checkers = {
        **{name: always[name] for name in ALWAYS},
        "pipeline": facts,
        **({"sales": verification} if verification is not None else {}),
    }
    if decidable and getattr(getattr(scenario, "pipeline", None), "enriched", False):
        checkers["enriched"] = _check_enriched(run_dir, history, options.get("enriched"))
        valid = combine_validity([valid, checkers["enriched"]["valid"]])
    if decidable and publish_modes(history):
        checkers["published"] = _check_published(run_dir, history, scenario)
        valid = combine_validity([valid, checkers["published"]["valid"]])
    expectations = evaluate_all(scenario.expect, {**checkers, "checkers": checkers}) if scenario is not None else []
    valid = combine_validity([valid, *(e["valid"] for e in expectations)])
    results = {
        "format": 3,
        "valid": valid,
        "scenario": scenario.name if scenario is not None else None,
        "expectations": expectations,
        "reasons": facts["reasons"],
        "query_never_stopped": not facts["unexpected_exits"],
        "checkers": checkers,
        "pipeline": facts,
        "verification": verification,
    }
    hold_incomplete(results)
    results = classify(results, scenario, history)
    write_results(run_dir, results)
    return results, history


def _durability(run_dir: RunDir, history: History) -> dict[str, Any]:
    """Every purchase (and malformed record) the ledger says Kafka acknowledged, against the final read of
    demo.purchases: a purchase is known by its transaction id, which its record's JSON holds; a malformed record by its
    whole value."""
    from failsafe.scenarios.kinds.pipeline.schema import PURCHASES_TOPIC
    from failsafe.workloads.sales.ledger import read_ledger

    try:
        ledger = read_ledger(run_dir.path / "ledger")
    except (UserError, OSError) as e:
        return {
            "valid": UNKNOWN,
            "counts": {},
            "examples": {},
            "violations": [],
            "reason": f"cannot read the ledger: {e}",
        }
    columns = {
        "process": pl.lit("simulator"),
        "id": pl.lit(None, dtype=pl.Int64),
        "cluster": pl.lit(None, dtype=pl.String),
        "topic": pl.lit(PURCHASES_TOPIC),
        "partition": pl.col("partition").cast(pl.Int64),
        "offset": pl.when(pl.col("offset") >= 0).then(pl.col("offset")),
        "txn": pl.lit(None, dtype=pl.Int64),
        "invoke_ns": pl.lit(None, dtype=pl.Int64),  # the ledger keeps no send time: a write below log start unverified
    }
    writes = pl.concat(
        [
            ledger.purchases.select(**columns, value=pl.col("transaction_id")),
            ledger.malformed.select(**columns, value=pl.col("value")),
        ]
    )
    writes = writes.select([pl.col(c).cast(t) for c, t in durability.WRITE_SCHEMA.items()])
    log = history.log.with_columns(
        pl.coalesce(pl.col("value").str.json_path_match("$.transaction_id"), pl.col("value")).alias("value")
    )
    return dict(durability.judge(writes, history, log))


def _check_enriched(run_dir: RunDir, history: History, options: dict | None) -> dict[str, Any]:
    """checkers.enriched over what the run read back of the enriched topic; a ledger that cannot be read is unknown."""
    from failsafe.scenarios.kinds.pipeline.enriched import check_enriched
    from failsafe.workloads.sales.ledger import read_ledger

    def undecided(reason: str) -> dict[str, Any]:
        return {
            "valid": UNKNOWN,
            "counts": {},
            "examples": {},
            "violations": [],
            "allow_duplicates": (options or {}).get("allow_duplicates", True),
            "reasons": [reason],
        }

    try:
        ledger = read_ledger(run_dir.path / "ledger")
    except (UserError, OSError) as e:
        return undecided(f"cannot read the ledger: {e}")
    try:
        return check_enriched(run_dir.path / "output", ledger.purchases, history, options)
    except Exception as e:  # noqa: BLE001 - a checker that raises is reported, as run_checkers reports one
        return {
            **undecided(f"the enriched checker raised {type(e).__name__}: {e}"),
            "error": f"{type(e).__name__}: {e}",
        }


def _check_published(run_dir: RunDir, history: History, scenario: Scenario | None) -> dict[str, Any]:
    """checkers.pipeline.published over what the run read back of the results topic; a ledger that cannot be read is
    unknown."""
    from failsafe.scenarios.kinds.pipeline.published import check_published
    from failsafe.workloads.sales.ledger import read_ledger

    try:
        ledger = read_ledger(run_dir.path / "ledger")
        pipeline = getattr(scenario, "pipeline", None)
        return check_published(run_dir.path / "output", ledger.purchases, history, getattr(pipeline, "publish", ""))
    except (UserError, OSError) as e:
        return {"valid": UNKNOWN, "counts": {}, "examples": {}, "violations": [], "reasons": [f"{e}"]}


def write_pipeline_report(run_dir: RunDir, results: dict[str, Any], history: History) -> Path:
    """report.html beside results.json: the verdict, ledger and sink, and the queries over time
    (reports/pipeline_report.py)."""
    from failsafe.pipeline.job import COMMITS_FILE
    from failsafe.pipeline.sink import PROGRESS_FILE, SALES_DIR, read_progress
    from failsafe.reports.pipeline_report import record_latencies, render_pipeline_html
    from failsafe.scenarios.kinds.pipeline.schema import PURCHASES_TOPIC
    from failsafe.workloads.sales.ledger import read_ledger

    output = run_dir.path / "output"
    progress = read_progress(output) if (output / PROGRESS_FILE).is_file() else []
    commits: dict[int, float] = {}
    commits_path = output / SALES_DIR / COMMITS_FILE
    if commits_path.is_file():
        for line in commits_path.read_text().splitlines():
            entry = json.loads(line)
            commits.setdefault(
                entry["batch_id"], entry["written_at"]
            )  # the first write is when the batch became visible
    clock, latencies = None, pl.DataFrame(schema={"batch_id": pl.Int64, "latency_s": pl.Float64})
    try:
        ledger = read_ledger(run_dir.path / "ledger")
        clock = ledger.manifest.get("clock", "accelerated")  # ledgers from before the wall clock were all accelerated
        latencies = record_latencies(ledger.purchases, progress, commits, PURCHASES_TOPIC)
    except (UserError, OSError):
        pass  # no complete ledger: the report says the verdict's reasons and draws what Spark reported
    html = render_pipeline_html(results, history, progress, commits, latencies, clock, run_dir.scenario_data())
    run_dir.report_path.write_text(html, encoding="utf-8")
    return run_dir.report_path


def render_pipeline_results(console: Console, results: dict[str, Any]) -> None:
    from failsafe.pipeline.verify import render_verification
    from failsafe.reports.summary import run_verdict
    from failsafe.reports.terminal import VERDICT_STYLE

    facts = results["pipeline"]
    table = Table(title="pipeline", show_header=False)
    table.add_row("pipeline starts", str(facts["starts"]))
    table.add_row("killed on purpose", str(facts["planned_kills"]))
    table.add_row(
        "stopped by itself",
        str(len(facts["unexpected_exits"]))
        + "".join(f"\n  exit {e['exit_code']} in {e['phase']}: {e['log']}" for e in facts["unexpected_exits"]),
    )
    table.add_row("drained to the log end", f"yes, in {facts['drain_s']} s" if facts["drained"] else "no")
    table.add_row("simulator exit", str(facts["simulator_exit"]))
    unrecovered = (facts.get("examples") or {}).get("never-recovered") or []
    table.add_row(
        "partitions never recovered",
        str((facts.get("counts") or {}).get("never-recovered", 0))
        + "".join(f"\n  {row['partition']}: {row['seen']}" for row in unrecovered),
    )
    console.print(table)
    if results["verification"] is not None:
        render_verification(results["verification"], console)
    if (enriched := results["checkers"].get("enriched")) is not None:
        console.print(_enriched_table(enriched))
    if (published := results["checkers"].get("published")) is not None:
        console.print(_published_table(published))
    for reason in results["reasons"]:
        console.print(f"[yellow]undecided:[/] {reason}")
    word = run_verdict(results)
    console.print(f"{results.get('scenario', 'pipeline scenario')}: [{VERDICT_STYLE[word]}]{word}[/]")


def _enriched_table(enriched: dict[str, Any]) -> Table:
    from failsafe.reports.summary import verdict

    counts = enriched.get("counts") or {}
    table = Table(title=f"enriched purchases (Spark's Kafka sink): {verdict(enriched['valid'])}", show_header=False)
    table.add_row("records in the topic", str(counts.get("records", "-")))
    table.add_row("acknowledged purchases missing", str(counts.get("missing", "-")))
    allowed = "allowed: the sink is at least once" if enriched.get("allow_duplicates", True) else "not allowed"
    table.add_row("copies of a record written before", f"{counts.get('duplicate', '-')} ({allowed})")
    if replayed := enriched.get("replayed"):
        batches = ", ".join(str(batch["batch_id"]) for batch in replayed)
        table.add_row(
            f"  of them from the batch run first after a restart ({batches})",
            str(counts.get("duplicate_in_replayed_batch", "-")),
        )
    for reason in enriched.get("reasons") or []:
        table.add_row("undecided", reason)
    return table


def _published_table(published: dict[str, Any]) -> Table:
    from failsafe.reports.summary import verdict

    counts = published.get("counts") or {}
    mode = published.get("publish", "?")
    table = Table(title=f"totals published to Kafka ({mode}): {verdict(published['valid'])}", show_header=False)
    table.add_row("records read (read_committed)", str(counts.get("records", "-")))
    table.add_row(
        "windows missing or lower than the ledger",
        str(counts.get("missing_windows", 0) + counts.get("undercounted", 0)),
    )
    allowed = "allowed: at least once" if published.get("allow_duplicates") else "not allowed: exactly once"
    table.add_row("copies of a batch's total", f"{counts.get('duplicate', '-')} ({allowed})")
    table.add_row("keys whose last record is stale", str(counts.get("stale_last", "-")))
    if (seen := published.get("uncommitted")) is not None:
        table.add_row(
            "read_uncommitted saw",
            f"{seen.get('records', '-')} records, {seen.get('duplicate', '-')} copies of a batch's total",
        )
    for reason in published.get("reasons") or []:
        table.add_row("undecided", reason)
    return table
