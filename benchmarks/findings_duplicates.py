"""Where duplicates sit: for runs with values written twice, which copy was acknowledged, when they were sent, how far
apart.

    .venv/bin/python benchmarks/findings_duplicates.py RUN_DIR [RUN_DIR ...] [--out FILE]

Reads each run's history (the log as Kafka's consumer read it back, the sends, the faults) and
prints, over all runs: the values in a partition's log more than once; of those acknowledged,
how many were acknowledged at their highest offset; how many were sent while a broker fault was
active; and the offset distance between the first and last copy (min / median / max). With --out,
also writes them as JSON (docs/findings/leader-pause-timeout-duplicates-where.json, made by
`bash benchmarks/findings.sh where`).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import polars as pl

from failsafe.history.load import load_history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    values = acknowledged = at_later = during_fault = 0
    gaps: list[int] = []
    for run in args.runs:
        h = load_history(run / "history.jsonl")
        copies = (
            h.log.group_by("topic", "value")
            .agg(pl.col("offset").min().alias("first"), pl.col("offset").max().alias("last"), pl.len().alias("n"))
            .filter(pl.col("n") > 1)
        )
        sends = h.sends.select("topic", "value", "invoke_ns", "outcome", pl.col("offset").alias("acked_offset"))
        joined = copies.join(sends, on=["topic", "value"], how="left")
        faults = h.faults.filter(pl.col("target") == "broker").select("start_ns", "stop_ns").to_dicts()
        values += joined.height
        acked = joined.filter(pl.col("outcome") == "ok")
        acknowledged += acked.height
        at_later += acked.filter(pl.col("acked_offset") == pl.col("last")).height
        for invoke in joined["invoke_ns"].drop_nulls().to_list():
            during_fault += any(f["start_ns"] <= invoke <= (f["stop_ns"] or invoke) for f in faults)
        gaps += (joined["last"] - joined["first"]).to_list()
    print(f"runs: {len(args.runs)}; values written more than once: {values}")
    print(f"acknowledged: {acknowledged}, of which at the later copy: {at_later}")
    print(f"sent while a broker fault was active: {during_fault}")
    if gaps:
        print(
            f"offsets between first and last copy: min {min(gaps)}, median {statistics.median(gaps):g}, max {max(gaps)}"
        )
    if args.out:
        summary = {
            "runs": len(args.runs),
            "run_dirs": [str(r) for r in args.runs],
            "values_written_more_than_once": values,
            "acknowledged": acknowledged,
            "acknowledged_at_the_later_copy": at_later,
            "sent_during_a_broker_fault": during_fault,
            "offsets_between_first_and_last_copy": {
                "min": min(gaps),
                "median": statistics.median(gaps),
                "max": max(gaps),
            }
            if gaps
            else None,
        }
        args.out.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
