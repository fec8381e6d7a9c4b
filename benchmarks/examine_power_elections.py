"""Who led each partition after a power-loss, in every run of a power-loss benchmark: read from the runs' topology
samples.

    .venv/bin/python benchmarks/examine_power_elections.py docs/benchmarks/power-loss.json \
        --scenario last-replica-standing --out docs/benchmarks/power-loss-elections.json

For each run (the rows of bench_power_loss.py's file, whose run directories must still exist: --keep-runs) and each
partition of the scenario's topics: the ISR just before the power-loss began, the first leader elected after it, the
ISR the controller held while the partition had no leader, and whether that leader was one of the nodes that lost
power. Reads histories only (no cluster).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402
from failsafe.history.load import load_history  # noqa: E402


def elections(run_dir: Path) -> list[dict]:
    history = load_history(run_dir / "history.jsonl")
    cuts = history.faults.filter(pl.col("fault") == "power-loss").sort("start_ns")
    if cuts.is_empty():
        return []
    cut = cuts.row(0, named=True)
    powered_off = [int(n) for n in cut["nodes"]]
    out = []
    topology = history.topology.sort("time_ns")
    for (topic, partition), samples in topology.group_by(["topic", "partition"], maintain_order=True):
        before = samples.filter(pl.col("time_ns") < cut["start_ns"]).tail(1)
        after = samples.filter(pl.col("time_ns") >= cut["start_ns"])
        leaderless = after.filter(pl.col("leader") < 0)
        elected = after.filter(
            (pl.col("leader") >= 0) & (pl.col("time_ns") > (leaderless["time_ns"].min() or cut["start_ns"]))
        ).head(1)
        new_leader = elected["leader"][0] if elected.height else None
        out.append(
            {
                "topic": topic,
                "partition": partition,
                "powered_off": powered_off,
                "isr_before": before["isr"][0].to_list() if before.height else None,
                "isr_while_leaderless": leaderless["isr"][0].to_list() if leaderless.height else None,
                "new_leader": new_leader,
                "new_leader_lost_power": None if new_leader is None else new_leader in powered_off,
                "elected_after_cut_s": round((elected["time_ns"][0] - cut["start_ns"]) / 1e9, 1)
                if elected.height
                else None,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", type=Path, help="a file bench_power_loss.py wrote")
    parser.add_argument("--scenario", default="last-replica-standing")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [
        r for r in json.loads(args.bench.read_text())["rows"] if r["scenario"] == args.scenario and r.get("run_dir")
    ]
    runs = [
        {
            "variant": r["variant"],
            "run": r["run"],
            "lost": r["counts"]["lost"] + r["counts"]["lost-after-read"],
            "partitions": elections(Path(r["run_dir"])),
        }
        for r in rows
    ]
    cells = {}
    for variant in sorted({r["variant"] for r in runs}):
        mine = [p for r in runs if r["variant"] == variant for p in r["partitions"]]
        cells[variant] = {
            "runs": sum(1 for r in runs if r["variant"] == variant),
            "new_leader_lost_power": Counter(str(p["new_leader_lost_power"]) for p in mine),
            "isr_while_leaderless": Counter(str(p["isr_while_leaderless"]) for p in mine),
        }
    write_summary(
        {
            "what": f"who led each partition of {args.scenario} after its power-loss, from the topology samples",
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "source": str(args.bench),
            "cells": cells,
            "runs": runs,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
