"""What the findings scripts that read run directories share: each stored configuration (docs/findings/LABEL.json, made
by findings.sh from failsafe run --repeat) gets a section summing up its runs, one record per run directory."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "docs" / "findings"


def annotate_stored(
    description: str, key: str, record: Callable[[Path], dict], summary: Callable[[list[dict]], dict]
) -> None:
    """The command line ``--runs DIR LABEL...``: for each label, ``summary`` of ``record`` of every run under DIR/LABEL,
    stored under ``key`` in docs/findings/LABEL.json and printed without its records."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, required=True, help="findings.sh's DIR/runs")
    parser.add_argument("labels", nargs="+")
    args = parser.parse_args()
    for label in args.labels:
        stored = OUT / f"{label}.json"
        stats = json.loads(stored.read_text())
        run_dirs = sorted(d for d in (args.runs / label).glob("*/*/") if (d / "results.json").exists())
        stats[key] = summary([record(d) for d in run_dirs])
        stored.write_text(json.dumps(stats, indent=2) + "\n")
        print(label, json.dumps({k: v for k, v in stats[key].items() if k != "records"}))
