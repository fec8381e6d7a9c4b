"""The tables of docs/apps.md: the app examples under faults, and what failsafe's verification costs an app
(render_docs.py renders and checks them)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import command_of, load, num, table

# (label, the app, what differs), in the order of the table: one variable per pair.
APP_FINDINGS = (
    ("app-python-eos", "Python service, transactions (eos_ctp.py)", "each"),
    ("app-python-naive", "Python service, auto-commit (naive_ctp.py)", "each"),
    ("app-streams-map-eos", "Kafka Streams map, exactly_once_v2", "each"),
    ("app-streams-map-alo", "Kafka Streams map, at_least_once", "each"),
    ("app-streams-count-eos", "Kafka Streams count, exactly_once_v2", "totals"),
    ("app-streams-count-alo", "Kafka Streams count, at_least_once", "totals"),
)
APP_ANOMALIES = ("lost", "duplicate", "reordered", "under-counted", "over-counted", "went-back")


def _anomaly(stats: dict, name: str) -> str:
    entry = stats["anomalies"].get(f"app.{name}")
    return "0" if entry is None else f"{entry['runs']} ({num(entry['total'])})"


def _verdicts(stats: dict) -> str:
    return ", ".join(f"{n} {v}" for v, n in sorted(stats["verdicts"].items()))


def t_app_findings(root: Path) -> str:
    rows, commands = [], []
    for label, app, form in APP_FINDINGS:
        rel = f"docs/findings/{label}.json"
        stats = load(root, rel)
        commands.append(command_of(root, rel))
        rows.append([f"{app} ({label})", form, str(stats["runs"]), _verdicts(stats)])
        rows[-1] += [_anomaly(stats, a) for a in APP_ANOMALIES]
        rows[-1].append(str(len(stats.get("app_exits") or [])))
    header = ["app (configuration)", "contract", "runs", "verdicts", *(f"runs with {a} (count)" for a in APP_ANOMALIES)]
    header.append("runs with an instance that exited by itself")
    return (
        table(header, rows)
        + "\n\nEvery run: an exactly-once contract, a kill -9 of one instance and of the broker leading the input's "
        + "first partition (the examples' own faults). Rendered from `docs/findings/LABEL.json` (LABEL: in the first "
        + "column); made by "
        + "; ".join(f"`{c}`" for c in sorted(set(commands)))
        + "."
    )


def t_app_naive_phase(root: Path) -> str:
    rel = "docs/findings/app-python-naive.json"
    phase = load(root, rel)["kill_phase"]
    rows = [
        [r["run"], f"{r['killed_after_start_s']:.2f} s", f"{r['phase_s']:.2f} s", num(r["duplicate"]), num(r["lost"])]
        for r in phase["records"]
    ]
    header = [
        "run",
        "killed after its start",
        f"into its {phase['interval_s']:g} s commit interval",
        "duplicate",
        "lost",
    ]
    return (
        table(header, rows)
        + f"\n\nRendered from `{rel}` (`kill_phase`, by `benchmarks/findings_apps.py`); made by "
        + f"`{command_of(root, rel)}`."
    )
