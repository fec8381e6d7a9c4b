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
# One fault a cell (findings.sh apps-cells): (cell, what it does), and the configurations of each pair.
CELLS_DIR = "docs/findings/app-cells"
APP_CELLS = (
    ("txn-coordinator-kill", "kill -9 of instance 0's transaction coordinator, 10 s"),
    ("group-coordinator-kill", "kill -9 of the app group's coordinator, 10 s"),
    ("leader-isolated", "the input's first partition's leader isolated from the other nodes, 15 s"),
    ("instance-kill", "kill -9 of instance 0, started again after 5 s"),
    ("rolling-restart", "a rolling restart: each instance SIGTERM, started again 2 s later, once the group owns all"),
)
CELL_CONFIGS = (
    ("app-python-eos", "Python, transactions"),
    ("app-python-eos-on-failure", "Python, transactions, restart = on-failure"),
    ("app-python-naive", "Python, auto-commit"),
    ("app-streams-map-eos", "Streams map, exactly_once_v2"),
    ("app-streams-map-alo", "Streams map, at_least_once"),
)
CELL_ANOMALIES = ("lost", "duplicate", "reordered")


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


def _decided(per_run: list[dict], anomaly: str) -> str:
    """Runs whose verdict the anomaly decided (INVALID), with its count: an UNKNOWN run's missing outputs are
    unprocessed input, counted in their own column."""
    runs = [r for r in per_run if anomaly in r["violations"]]
    return f"{len(runs)} ({num(sum(r[anomaly] for r in runs))})" if runs else "0"


def _pace(per_run: list[dict], key: str) -> str:
    """The median and the largest of a pace figure over the runs that measured it (output stamped by the broker)."""
    values = sorted(r[key] for r in per_run if r.get(key) is not None)
    if not values:
        return "not measured"
    return f"{num(values[len(values) // 2])} ({num(values[-1])}), {len(values)} run{'s' * (len(values) > 1)}"


def t_app_cells(root: Path) -> str:
    rows, commands = [], set()
    for cell, what in APP_CELLS:
        for config, name in CELL_CONFIGS:
            rel = f"{CELLS_DIR}/{config}-{cell}.json"
            if not (root / rel).exists():
                continue
            stats = load(root, rel)
            commands.add(command_of(root, rel))
            per_run = stats.get("pace") or []
            unfinished = [r for r in per_run if r["verdict"] == "unknown"]
            rows.append(
                [
                    what,
                    name,
                    str(stats["runs"]),
                    str(len(stats.get("set_aside") or [])),
                    _verdicts(stats),
                    *(_decided(per_run, a) if a == "lost" else _anomaly(stats, a) for a in CELL_ANOMALIES),
                    f"{len(unfinished)} ({num(sum(r['lost'] for r in unfinished))})" if unfinished else "0",
                    str(len(stats.get("app_exits") or [])),
                    str(len(stats.get("hung") or [])),
                    _pace(per_run, "longest_pause_ms"),
                    _pace(per_run, "latency_p99_ms"),
                ]
            )
    header = [
        "fault",
        "configuration",
        "runs",
        "runs set aside",
        "verdicts",
        *(f"runs with {a} (count)" for a in CELL_ANOMALIES),
        "runs the app did not finish (inputs left unprocessed)",
        "runs with an instance that exited by itself",
        "runs with an instance that ignored the final SIGTERM",
        "longest output pause, ms: median (largest), runs measured",
        "input-to-output latency p99, ms: median (largest), runs measured",
    ]
    return (
        table(header, rows)
        + "\n\nEvery run: an exactly-once contract, one fault 10 s into the chaos phase (the rolling restart's "
        + "steps at 5 and 15 s), the examples' own faults replaced. The pace (checkers/app/pace.py) only of runs "
        + "whose output the broker stamped (LogAppendTime: the runs made after that rule). Runs set aside: an input "
        + "partition none of whose records reached the output while the app's group had committed it to its end: "
        + "the group kept an earlier run's offsets, which failsafe's setup missed (benchmarks/findings_apps.py, "
        + "set_aside); not counted. Rendered from `"
        + CELLS_DIR
        + "/CONFIGURATION-FAULT.json`; made by "
        + "; ".join(f"`{c}`" for c in sorted(commands))
        + "."
    )


def t_app_overhead(root: Path) -> str:
    rel = "docs/benchmarks/app-overhead.json"
    data = load(root, rel)
    rows = []
    for i, r in enumerate(data["rounds"]):
        k, f = r["kafka"], r["failsafe"]
        rows.append(
            [
                str(i + 1),
                f"{num(k['app_records_per_s'])} ({k['fed_s']:.1f} s)",
                f"{num(f['app_records_per_s'])} ({f['fed_s']:.1f} s)",
                f"{r['ratio']:.2f}",
            ]
        )
    header = [
        "round",
        "app records/s, fed by producer-perf-test, read by consumer-perf-test (feed took)",
        "app records/s, fed and read by failsafe's verifying clients (feed took)",
        "ratio",
    ]
    return (
        table(header, rows)
        + f"\n\nMedian ratio {data['median_ratio']:.2f} (target {data['target_ratio']:g}); "
        + f"{num(data['records'])} records of {data['record_size']} bytes a round. Rendered from `{rel}`; made by "
        + f"`{command_of(root, rel)}`."
    )
