"""The soundness suite's mutations (tests/mutations.py) over the corpus (tests/data/corpus), judged by whichever
failsafe is importable: today's, or an older commit's through PYTHONPATH, to show what the suite would have caught
before.

    .venv/bin/python benchmarks/bench_soundness.py --seeds 5 --out docs/benchmarks/soundness.json
    git worktree add /tmp/before b0859b4
    PYTHONPATH=/tmp/before/src .venv/bin/python benchmarks/bench_soundness.py --seeds 5 --label before --out \
        /tmp/soundness-before.json
    .venv/bin/python benchmarks/bench_soundness.py --merge docs/benchmarks/soundness.json \
        /tmp/soundness-before.json --out docs/benchmarks/soundness.json

Each (run, mutation, seed) draws its choices from random.Random(seed); the same seed draws the same mutant. The summary
counts mutants by verdict, and those judged VALID or KNOWN (a hole: the target is 0).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import write_summary  # noqa: E402
from tests.mutations import MUTATIONS, judge, load_corpus  # noqa: E402


def measure(seeds: int, label: str) -> dict:
    import failsafe

    runs = load_corpus()
    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for run in runs:
            for mutation in MUTATIONS:
                for seed in range(seeds):
                    chooser = random.Random(f"{run.name}/{mutation.name}/{seed}")
                    mutant = mutation.apply(run, lambda values, _label, c=chooser: c.choice(list(values)))
                    if mutant is None:
                        break
                    verdict = judge(run, mutant, Path(tmp) / "run")
                    rows.append(
                        {
                            "run": run.name,
                            "kind": run.kind,
                            "mutation": mutation.name,
                            "seed": seed,
                            "verdict": verdict,
                            "allowed": verdict in mutation.allowed,
                        }
                    )
    wall_s = time.monotonic() - started
    verdicts = Counter(row["verdict"] for row in rows)
    return {
        "label": label,
        "failsafe": str(Path(failsafe.__file__).parent),
        "seeds": seeds,
        "runs": len(runs),
        "kinds": sorted({run.kind for run in runs}),
        "mutations": len(MUTATIONS),
        "mutants": len(rows),
        "wall_s": round(wall_s, 1),
        "verdicts": dict(verdicts),
        "valid_or_known": verdicts["VALID"] + verdicts["KNOWN"],
        "not_allowed": sum(not row["allowed"] for row in rows),
        "valid_or_known_by_mutation": dict(
            Counter(row["mutation"] for row in rows if row["verdict"] in ("VALID", "KNOWN"))
        ),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--label", default="after")
    parser.add_argument(
        "--merge", nargs="+", type=Path, help="merge these outputs (each one label) into one file instead"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.merge:
        merged: dict = {}
        for path in args.merge:
            data = json.loads(path.read_text())
            merged.update(data.get("by_label", {data.get("label", path.stem): data}))
        summary = {"by_label": merged, "command": "benchmarks/bench_soundness.py (see its docstring)"}
    else:
        summary = measure(args.seeds, args.label)
        print(
            f"{summary['label']}: {summary['mutants']} mutants of {summary['runs']} runs "
            f"({', '.join(summary['kinds'])}) in "
            f"{summary['wall_s']} s: {summary['verdicts']}; VALID or KNOWN: {summary['valid_or_known']}"
        )
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
