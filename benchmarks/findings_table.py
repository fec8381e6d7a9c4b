"""Rebuild docs/findings/ from stored runs after a checker change, and print every configuration's counts.

    .venv/bin/python benchmarks/findings_table.py --runs /tmp/failsafe-findings/runs --out docs/findings
    .venv/bin/python benchmarks/findings_table.py docs/findings/*.json

With ``--runs``, the statistics are rebuilt from the stored runs (``RUNS/<label>/<scenario>/<time>/``)
after re-checking each with this failsafe (``failsafe check``), so every number comes from the
same checkers, and written to ``--out/<label>.json``.

Each file is one configuration's ``repeat-*.json`` (failsafe run --repeat): the verdicts, how
many runs showed each anomaly, and the spread of the measured times. Prints two Markdown tables
of every file given (the anomalies, and the write stalls per replica group), for a look at a new
configuration. The tables in docs/findings.md are rendered by benchmarks/render_docs.py, not
copied from here: after rebuilding, run ``render_docs.py --write``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from failsafe.scenarios.store.repeat import aggregate

ANOMALIES = (
    "delivery.duplicate-acknowledged",
    "delivery.duplicate-unacknowledged",
    "delivery.lost",
    "order.nonmonotonic-send",
)
GROUPS = ("led", "follower", "unreplicated")


def _anomaly_cell(stats: dict, name: str) -> str:
    entry = stats["anomalies"].get(name)
    return "0" if entry is None else f"{entry['runs']} ({entry['total']:,})"


def _spread_cell(stats: dict, name: str) -> str:
    spread = stats["times"].get(name)
    if not spread:
        return "—"
    return f"{spread['median']:,.0f} ({spread['min']:,.0f}–{spread['max']:,.0f}, n={spread['n']})"


def anomaly_table(files: list[tuple[str, dict]]) -> str:
    header = ["configuration", "runs", *(f"runs with {a} (count)" for a in ANOMALIES)]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, stats in files:
        rows.append(
            "| " + " | ".join([label, str(stats["runs"]), *(_anomaly_cell(stats, a) for a in ANOMALIES)]) + " |"
        )
    return "\n".join(rows)


def stall_table(files: list[tuple[str, dict]]) -> str:
    header = ["configuration", "runs", *(f"`{g}` max stall ms, median (range, n)" for g in GROUPS)]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, stats in files:
        cells = [_spread_cell(stats, f"availability.stall_by_group.{g}") for g in GROUPS]
        rows.append("| " + " | ".join([label, str(stats["runs"]), *cells]) + " |")
    return "\n".join(rows)


def rebuild(runs_root: Path, out: Path) -> list[Path]:
    """Re-check every stored run with this failsafe and write one statistics file per configuration."""
    written = []
    failsafe = Path(sys.executable).parent / "failsafe"
    for label_dir in sorted(p for p in runs_root.iterdir() if p.is_dir()):
        for scenario_dir in sorted(p for p in label_dir.iterdir() if p.is_dir()):
            runs = []
            for run_dir in sorted(p for p in scenario_dir.iterdir() if (p / "history.jsonl").is_file()):
                # Exit 1 (INVALID) is a result here, not an error; 2 is.
                check = subprocess.run([str(failsafe), "check", str(run_dir), "--json"], capture_output=True, text=True)
                if check.returncode == 2:
                    raise SystemExit(f"{run_dir}: {check.stderr.strip()}")
                runs.append((str(run_dir), json.loads((run_dir / "results.json").read_text())))
            overrides = (
                json.loads((Path(runs[0][0]) / "manifest.json").read_text()).get("overrides", []) if runs else []
            )
            stats = aggregate(scenario_dir.name, runs, overrides)
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"{label_dir.name}.json"
            path.write_text(json.dumps(stats, indent=2) + "\n")
            written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--runs", type=Path, help="rebuild the statistics from the runs under this directory first")
    parser.add_argument("--out", type=Path, default=Path("docs/findings"), help="where --runs writes LABEL.json")
    args = parser.parse_args()
    paths = rebuild(args.runs, args.out) if args.runs else sorted(args.files)
    files = [(path.stem, json.loads(path.read_text())) for path in sorted(paths)]
    print(anomaly_table(files))
    print()
    print(
        stall_table(
            [
                (label, stats)
                for label, stats in files
                if any(k.startswith("availability.stall_by_group") for k in stats["times"])
            ]
        )
    )


if __name__ == "__main__":
    main()
