"""failsafe explain: the anomalies of a stored run, one sentence each."""

from __future__ import annotations

import json
from pathlib import Path

import click

from failsafe.errors import UserError


@click.command("explain")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.argument("value", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the explanations as JSON.")
def explain_command(run_dir: Path, value: str | None, as_json: bool) -> int:
    """Explain each anomaly of a stored run: what, where, when, near which fault or leader change.

    With VALUE, only the anomalies about that written value. Checks the run first when its
    results.json is missing.
    """
    # Checkers load polars: imported here so other commands start fast.
    from failsafe.checkers.explain.sentences import explain
    from failsafe.scenarios.observers.client_logs import cite
    from failsafe.scenarios.store.stored import checked_run

    rd, results, history, _ = checked_run(run_dir)
    explanations = cite(explain(history, results), rd.path)
    if value is not None:
        if not (history.sends["value"] == value).any():
            raise UserError(
                f"no write of value {value!r} in {run_dir}: pass a value a producer of this run sent (e.g. "
                f"producer-0:12)"
            )
        explanations = [e for e in explanations if e.get("value") == value or value in (e.get("values") or [])]
    if as_json:
        click.echo(json.dumps(explanations, indent=2, default=str))
    elif not explanations:
        click.echo(f"no anomaly involves value {value}" if value is not None else "no anomaly to explain")
    else:
        for e in explanations:
            click.echo(f"{e.get('checker', '?')} {e.get('anomaly', '')}: {e.get('sentence', '')}")
    return 0
