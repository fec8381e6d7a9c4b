"""Every catalog scenario run once as a newcomer runs it, on a cluster the run starts itself (cold: a new directory
each), and the seed lab several times in a row: the exit codes and verdicts, and why each run that was not VALID was
not.

    .venv/bin/python benchmarks/cold_catalog.py --work /tmp/failsafe-cold --out docs/benchmarks/cold-catalog.json
    .venv/bin/python benchmarks/cold_catalog.py --work /tmp/failsafe-cold --seed-lab 3 --no-catalog --out \
        docs/benchmarks/cold-seed-lab.json

Exit 5 (failsafe could not carry the run out) is what must never happen; anything else is a scenario's verdict,
explained. """

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import write_summary  # noqa: E402

FAILSAFE = str(Path(sys.executable).with_name("failsafe"))


def _results(runs: Path) -> list[dict]:
    out = []
    for path in sorted(runs.rglob("results.json")):
        results = json.loads(path.read_text())
        out.append(
            {
                "scenario": results.get("scenario"),
                "verdict": results.get("verdict"),
                "unexplained": results.get("unexplained", []),
                "incomplete": results.get("incomplete"),
                "known": [k.get("anomaly") for k in results.get("known") or []],
                "failed_expectations": [
                    e.get("name") for e in results.get("expectations") or [] if e.get("valid") is False
                ],
            }
        )
    return out


def run_cold(name: str, work: Path, label: str) -> dict:
    where = work / label
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    started = time.monotonic()
    done = subprocess.run(
        [FAILSAFE, "run", name, "--dir", str(where / "cluster"), "--runs", str(where / "runs")],
        capture_output=True,
        text=True,
        check=False,
    )
    (where / "output.log").write_text(done.stdout + done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("failsafe:")]
    row = {
        "scenario": name,
        "exit_code": done.returncode,
        "wall_s": round(time.monotonic() - started, 1),
        "runs": _results(where / "runs"),
        "error": errors[-1] if errors else None,
    }
    print(
        f"{label}: exit {row['exit_code']} in {row['wall_s']} s" + (f": {row['error']}" if row["error"] else ""),
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed-lab", type=int, default=0, help="run the seed lab this many times in a row, each cold")
    parser.add_argument("--no-catalog", action="store_true", help="only the seed lab")
    parser.add_argument("names", nargs="*", help="catalog scenarios (default: all)")
    args = parser.parse_args()
    from failsafe.scenarios.registry import catalog_names

    names = args.names or ([] if args.no_catalog else catalog_names())
    # A name given more than once runs in a directory of its own each time (NAME-1, NAME-2, ...): every run is kept.
    rows = [
        run_cold(name, args.work, name if names.count(name) == 1 else f"{name}-{names[:i].count(name) + 1}")
        for i, name in enumerate(names)
    ]
    seed_lab = [run_cold("seed-lab", args.work, f"seed-lab-{i}") for i in range(args.seed_lab)]
    summary = {
        "command": " ".join(sys.argv),
        "catalog": rows,
        "seed_lab": seed_lab,
        "exit_codes": {
            str(code): sum(r["exit_code"] == code for r in rows + seed_lab)
            for code in sorted({r["exit_code"] for r in rows + seed_lab})
        },
        "never_carried_out": [r["scenario"] for r in rows + seed_lab if r["exit_code"] == 5],
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
