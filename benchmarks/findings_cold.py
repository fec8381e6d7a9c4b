"""A reader stuck from the start (librdkafka#5586): cold group coordinators against warm ones, on fresh clusters.

A campaign's first run found its manually assigned librdkafka consumer reading nothing for the whole run
(availability.never-caught-up). Its client log said why: the OffsetFetch of its committed offsets got a
request-level NOT_COORDINATOR ("Offset fetch error for 0 partition(s): Broker: Not coordinator") and was never
retried. This runs the campaign workload without faults (so nothing but the cluster's state differs) in two ways:

    cold   each run on a cluster started for it (failsafe up, run, down, clean): the group coordinator of the
           consumer's offsets is new, as in a campaign's first run
    warm   every run on one cluster after a first run that is not counted: the coordinator is loaded

and on a Kafka version of choice. Each run's record says whether a reader never caught up, which, and whether the
stuck reader's client log has the request-level error; the runs' results.json are summed up as --repeat does.

    .venv/bin/python benchmarks/findings_cold.py --mode cold --runs 10 --out \
        docs/findings/cold-coordinator-librdkafka.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from failsafe.campaigns.plan import load_workload
from failsafe.campaigns.schedule import Schedule, scenario_data, write_schedule
from failsafe.scenarios.store.repeat import aggregate

ROOT = Path(__file__).resolve().parent.parent
FAILSAFE = str(ROOT / ".venv" / "bin" / "failsafe")
WORKLOAD = "acks-all"
SCENARIO = "acks-all-no-faults"
# What librdkafka logs when the OffsetFetch got a request-level error and no partition back (librdkafka#5586).
MECHANISM = "Offset fetch error for 0 partition(s): Broker: Not coordinator"


def cli(*args: str, check: bool = True, timeout_s: float = 900) -> subprocess.CompletedProcess:
    done = subprocess.run([FAILSAFE, *args], capture_output=True, text=True, timeout=timeout_s)
    if check and done.returncode != 0:
        sys.exit(f"failsafe {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return done


def up(cluster: Path, kafka_version: str, heap: str) -> None:
    cli("up", "--dir", str(cluster), "--controllers", "3", "--heap", heap, "--kafka-version", kafka_version)


def down(cluster: Path) -> None:
    cli("down", "--dir", str(cluster), check=False)
    cli("clean", "--dir", str(cluster), check=False)


def schedule_file(directory: Path, chaos_s: float) -> Path:
    """The campaign workload under a schedule with no fault, as a campaign (or a shrink down to nothing) writes it."""
    _, base = load_workload(WORKLOAD)
    data = scenario_data(
        base,
        Schedule(chaos_s, ()),
        SCENARIO,
        f"The {WORKLOAD} campaign workload with no fault: {chaos_s:g}s of chaos phase",
    )
    directory.mkdir(parents=True, exist_ok=True)
    return write_schedule(
        directory / f"{SCENARIO}.toml",
        data,
        "Made by benchmarks/findings_cold.py: librdkafka#5586 on cold and warm clusters.",
    )


def run_once(cluster: Path, runs: Path, schedule: Path) -> Path:
    """One run of the schedule; its run directory."""
    before = set(runs.glob(f"{SCENARIO}/*/"))
    cli("run", str(schedule), "--dir", str(cluster), "--runs", str(runs), check=False)
    made = sorted(set(runs.glob(f"{SCENARIO}/*/")) - before)
    if len(made) != 1:
        sys.exit(f"expected one new run directory under {runs}, found {made}")
    return made[0]


def record(run_dir: Path) -> tuple[dict, dict]:
    """The run's results and what this comparison counts of it."""
    results = json.loads((run_dir / "results.json").read_text())
    availability = (results.get("checkers") or {}).get("availability") or {}
    stuck = sorted((availability.get("processes") or {}).get("never-caught-up") or [])
    logs = {
        p.name.removesuffix(".client.log"): p.read_text(errors="replace")
        for p in (run_dir / "logs").glob("*.client.log")
    }
    showed = sorted(process for process, text in logs.items() if MECHANISM in text)
    return results, {
        "dir": run_dir.name,
        "verdict": results.get("verdict"),
        "never_caught_up": stuck,
        "request_level_not_coordinator": showed,
        "drain_gave_up": _drain_gave_up(run_dir),
    }


def _drain_gave_up(run_dir: Path) -> bool:
    for line in (run_dir / "history.jsonl").read_text().splitlines():
        if '"f":"drained"' in line:
            return json.loads(line).get("ok") is False
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("cold", "warm"), required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kafka-version", default="4.3.1")
    parser.add_argument("--chaos-s", type=float, default=5.0)
    parser.add_argument("--heap", default="512M")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/failsafe-findings-cold"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    cluster, runs = (
        args.dir / "cluster",
        args.dir / f"runs-{args.mode}-{args.kafka_version}-{time.strftime('%Y%m%dT%H%M%S')}",
    )
    down(cluster)
    schedule = schedule_file(runs, args.chaos_s)
    collected: list[tuple[str, dict]] = []
    records: list[dict] = []
    started = time.monotonic()
    try:
        if args.mode == "warm":
            up(cluster, args.kafka_version, args.heap)
            warming = record(run_once(cluster, runs / "warming", schedule))[1]
            print(f"warming run (not counted): {warming}", file=sys.stderr)
        for i in range(args.runs):
            if args.mode == "cold":
                up(cluster, args.kafka_version, args.heap)
            run_dir = run_once(cluster, runs, schedule)
            results, counted = record(run_dir)
            collected.append((str(run_dir), results))
            records.append(counted)
            print(f"run {i + 1}/{args.runs} ({time.monotonic() - started:.0f}s): {counted}", file=sys.stderr)
            if args.mode == "cold":
                down(cluster)
    finally:
        down(cluster)
    stats = aggregate(SCENARIO, collected)
    stuck_runs = [r for r in records if r["never_caught_up"]]
    stats["cold_coordinator"] = {
        "mode": args.mode,
        "kafka_version": args.kafka_version,
        "runs": len(records),
        "runs_with_a_reader_never_caught_up": len(stuck_runs),
        "runs_with_the_request_level_error": sum(bool(r["request_level_not_coordinator"]) for r in records),
        # Each stuck reader's log has the error, and no reader with the error read on: the mechanism, run by run.
        "stuck_readers_with_the_error": sum(
            len(set(r["never_caught_up"]) & set(r["request_level_not_coordinator"])) for r in records
        ),
        "stuck_readers": sum(len(r["never_caught_up"]) for r in records),
        "readers_with_the_error_not_stuck": sum(
            len(set(r["request_level_not_coordinator"]) - set(r["never_caught_up"])) for r in records
        ),
        "command": f".venv/bin/python benchmarks/findings_cold.py --mode {args.mode} --runs {args.runs} "
        f"--kafka-version {args.kafka_version}",
        "records": records,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stats, indent=2) + "\n")
    print(json.dumps(stats["cold_coordinator"] | {"records": len(records)}, indent=2))


if __name__ == "__main__":
    main()
