"""The verdict of a pipeline scenario: the sink equals the ledger, and the queries never stopped."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from failsafe.scenarios.pipeline_runner import PIPELINE_RESULTS
from failsafe.scenarios.rundir import RunDir

UNKNOWN = "unknown"


def is_pipeline_run(run_dir: RunDir) -> bool:
    return (run_dir.path / PIPELINE_RESULTS).is_file()


def check_pipeline_run(run_dir: RunDir) -> dict[str, Any]:
    """Verify the run's sink against its ledger; write and return results.json."""
    from failsafe.pipeline.verify import verify_output

    facts = json.loads((run_dir.path / PIPELINE_RESULTS).read_text())
    reasons: list[str] = []
    if facts.get("simulator_exit") != 0:
        reasons.append(f"the simulator exited with {facts.get('simulator_exit')}, so its ledger is not complete")
    if not facts.get("drained"):
        reasons.append("the pipeline did not read up to the log end before the drain timeout")
    verification = verify_output(run_dir.path / "output", run_dir.path / "ledger") if not reasons else None
    never_stopped = not facts.get("unexpected_exits")
    if reasons:
        valid: object = UNKNOWN
    elif verification is not None and verification["valid"] is True and never_stopped:
        valid = True
    elif verification is not None and verification["valid"] == UNKNOWN and never_stopped:
        valid = UNKNOWN
    else:
        valid = False
    results = {"valid": valid, "kind": "pipeline", "scenario": (run_dir.scenario_data() or {}).get("name"), "reasons": reasons,
               "query_never_stopped": never_stopped, "pipeline": facts, "verification": verification}
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
