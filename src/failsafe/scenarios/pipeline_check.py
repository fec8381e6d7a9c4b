"""The verdict of a pipeline scenario: the queries never stopped (from the history) and the sink equals the ledger."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from failsafe.checkers import pipeline_run
from failsafe.checkers.common import UNKNOWN
from failsafe.checkers.run import combine_validity
from failsafe.scenarios.check import load_run_history
from failsafe.scenarios.rundir import RunDir


def check_pipeline_run(run_dir: RunDir) -> dict[str, Any]:
    """Judge the run from its history, then verify its sink against its ledger; write and return results.json."""
    from failsafe.pipeline.verify import verify_output

    facts = pipeline_run.check(load_run_history(run_dir))
    # Without a complete ledger or a drained pipeline there is nothing the sink could be compared with.
    decidable = not facts["reasons"]
    verification = verify_output(run_dir.path / "output", run_dir.path / "ledger") if decidable else None
    if facts["valid"] is False:
        valid: object = False
    elif verification is None:
        valid = UNKNOWN
    else:
        valid = combine_validity([facts["valid"], verification["valid"]])
    results = {"format": 2, "valid": valid, "kind": "pipeline", "scenario": (run_dir.scenario_data() or {}).get("name"),
               "reasons": facts["reasons"], "query_never_stopped": not facts["unexpected_exits"], "pipeline": facts,
               "verification": verification}
    run_dir.results_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return results


def render_pipeline_results(console: Console, results: dict[str, Any]) -> None:
    from failsafe.pipeline.verify import render_verification
    from failsafe.reports.summary import verdict
    from failsafe.reports.terminal import VERDICT_STYLE

    facts = results["pipeline"]
    table = Table(title="pipeline", show_header=False)
    table.add_row("pipeline starts", str(facts["starts"]))
    table.add_row("killed on purpose", str(facts["planned_kills"]))
    table.add_row("stopped by itself", str(len(facts["unexpected_exits"])) + "".join(
        f"\n  exit {e['exit_code']} in {e['phase']}: {e['log']}" for e in facts["unexpected_exits"]))
    table.add_row("drained to the log end", f"yes, in {facts['drain_s']} s" if facts["drained"] else "no")
    table.add_row("simulator exit", str(facts["simulator_exit"]))
    console.print(table)
    if results["verification"] is not None:
        render_verification(results["verification"], console)
    for reason in results["reasons"]:
        console.print(f"[yellow]undecided:[/] {reason}")
    word = verdict(results["valid"])
    console.print(f"{results.get('scenario', 'pipeline scenario')}: [{VERDICT_STYLE[word]}]{word}[/]")
