"""The processor that never came back: librdkafka's send_offsets_to_transaction through a restart of a coordinator.

Campaign txn-librdkafka-tv1 (seed 2913) had runs whose consume-transform-produce processor stopped for good
(availability.never-caught-up), and its run 1 at commit 832a0f2 said where: the worker did not stop on SIGTERM, and
its main thread was in ``send_offsets_to_transaction`` (workloads/txn/session.py), called with a 30 s timeout, while
the broker that coordinated writer-0's and ctp-0's transactions was restarted. This runs the campaign's transactions
workload (librdkafka clients) under one fault aimed by role (a restart, or a kill or a pause for --duration-s, 12 s by
default: longer than the 9 s broker session timeout, so the controllers fence the broker and it leaves the metadata), so
that only what the broker coordinates and how it goes away differ between configurations:

    txn      restart the transaction coordinator of ctp-0 (AddOffsetsToTxn and EndTxn go there)
    group    restart the group coordinator of the processor's group (TxnOffsetCommit goes there)

N runs on one cluster (failsafe run --repeat), at transaction.version 1 or 2. Per run it records the verdict, the
restarted broker, the processes that did not stop on SIGTERM and where their main thread was (the crash op), and
which broker ctp-0's client log names its transaction coordinator; the counts go into the stored --repeat summary
under "txn_hang".

    .venv/bin/python benchmarks/findings_txn_hang.py --target group --version 1 --runs 10 \
        --out docs/findings/txn-hang-group-coordinator-restart-tv1.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from failsafe.campaigns.plan import load_workload
from failsafe.campaigns.schedule import Planned, Schedule, scenario_data, write_schedule
from failsafe.workloads.txn.specs import LIBRDKAFKA, TXN_DRIVERS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.findings_txn_fence import FENCED  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FAILSAFE = str(ROOT / ".venv" / "bin" / "failsafe")
WORKLOAD = "transactions"
PROCESSOR = "ctp-0"
TARGETS = {
    "txn": ("transaction coordinator of ctp-0", {"role": "txn-coordinator", "transactional_id": PROCESSOR}),
    "group": ("group coordinator of the processor's group", {"role": "group-coordinator", "group": "txn-campaign-ctp"}),
}
HUNG = "did not stop on SIGTERM"
WHERE = re.compile(r"its main thread was in (.+)$")
TXN_COORDINATOR = re.compile(r"FindCoordinator response: Transaction coordinator is broker (\d+)")
# librdkafka's consumer when its group coordinator stopped answering (it logs little else about that coordinator).
GROUP_TIMEOUT = re.compile(r"session timed out .* from the group coordinator \(broker (\d+)")


def schedule_file(
    directory: Path,
    target: str,
    version: int,
    fault: str,
    at_s: float,
    duration_s: float | None,
    chaos_s: float,
    driver: str,
) -> Path:
    what, fields = TARGETS[target]
    _, base = load_workload(WORKLOAD)
    base = {
        **base,
        "transactions": {**base.get("transactions", {}), "version": version},
        "writers": [{**w, "driver": driver} for w in base["writers"]],
        "processors": [{**p, "driver": driver} for p in base["processors"]],
    }
    name = f"txn-hang-{target}-coordinator-{fault}-tv{version}" + ("" if driver == LIBRDKAFKA else f"-{driver}")
    lasting = "" if duration_s is None else f" for {duration_s:g}s"
    data = scenario_data(
        base,
        Schedule(chaos_s, (Planned(fault, at_s, duration_s, fields),)),
        name,
        f"The {WORKLOAD} campaign workload ({driver}) at transaction.version {version}: {fault} of the {what} "
        f"at {at_s:g}s{lasting}",
    )
    directory.mkdir(parents=True, exist_ok=True)
    return write_schedule(
        directory / f"{name}.toml", data, "Made by benchmarks/findings_txn_hang.py: the processor hang, aimed."
    )


def record(run_dir: Path) -> dict:
    results = json.loads((run_dir / "results.json").read_text())
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if line.strip()]
    started = [o for o in ops if o.get("f") == "fault-start"]
    hung = {
        o["process"]: (WHERE.search(o.get("error") or "") or [None, "not said"])[1]
        for o in ops
        if o.get("f") == "crash" and HUNG in (o.get("error") or "")
    }
    log_path = run_dir / "logs" / f"{PROCESSOR}.client.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    availability = (results.get("checkers") or {}).get("availability") or {}
    return {
        "dir": run_dir.name,
        "verdict": results.get("verdict"),
        "restarted": [n for o in started for n in o.get("nodes", [])],
        "role": [o.get("role") for o in started],
        "hung": hung,
        "never_caught_up": sorted((availability.get("processes") or {}).get("never-caught-up") or []),
        "processor_txn_coordinators": sorted({int(b) for b in TXN_COORDINATOR.findall(log)}),
        "processor_group_coordinators_timed_out": sorted({int(b) for b in GROUP_TIMEOUT.findall(log)}),
        **processor_after_fault(ops, started[0]["time_ns"] if started else None),
    }


def processor_after_fault(ops: list[dict], fault_ns: int | None) -> dict:
    """When, after the fault began, the processor began its last transaction (the one a hung processor never ended), and
    whether its group had given it partitions again (an assign op) between the fault and then."""
    if fault_ns is None:
        return {"last_txn_began_s": None, "assigned_before_last_txn": None, "processor_errors": {}}
    mine = [o for o in ops if o.get("process") == PROCESSOR and o["time_ns"] > fault_ns]
    # The errors its transactions ended with after the fault (a fence with no other ctp-0 anywhere among them?).
    errors = dict(
        Counter(o["error"] for o in mine if o.get("f") == "txn" and o.get("type") != "invoke" and o.get("error"))
    )
    began = [o["time_ns"] for o in mine if o.get("f") == "txn" and o.get("type") == "invoke"]
    if not began:
        return {"last_txn_began_s": None, "assigned_before_last_txn": None, "processor_errors": errors}
    last = began[-1]
    return {
        "last_txn_began_s": round((last - fault_ns) / 1e9, 2),
        "assigned_before_last_txn": any(o.get("f") == "assign" and o["time_ns"] < last for o in mine),
        "processor_errors": errors,
    }


def summary(records: list[dict]) -> dict:
    where: Counter = Counter(w for r in records for w in r["hung"].values())
    return {
        "runs": len(records),
        "verdicts": dict(Counter(r["verdict"] for r in records)),
        "runs_with_the_processor_hung": sum(PROCESSOR in r["hung"] for r in records),
        "runs_with_another_process_hung": sum(bool(set(r["hung"]) - {PROCESSOR}) for r in records),
        "where": dict(where.most_common()),
        # Whether the broker the fault hit (killed or restarted: "restarted") was also ctp-0's transaction coordinator.
        "runs_restarting_the_processors_txn_coordinator": sum(
            bool(set(r["restarted"]) & set(r["processor_txn_coordinators"])) for r in records
        ),
        # Whether the broker hit was also the one the processor's group session timed out on (its group coordinator).
        "runs_where_the_processors_group_timed_out_on_that_broker": sum(
            bool(set(r["restarted"]) & set(r.get("processor_group_coordinators_timed_out", []))) for r in records
        ),
        # Runs where the processor was told it was fenced (only one ctp-0 ever runs here: no zombie).
        "runs_with_the_processor_told_fenced": sum(bool(FENCED & set(r.get("processor_errors", {}))) for r in records),
        # Per run where the processor hung: when its last transaction began after the fault, and whether after a
        # rebalance.
        "hung_txn_began_s": [
            [r.get("last_txn_began_s"), r.get("assigned_before_last_txn")] for r in records if PROCESSOR in r["hung"]
        ],
        "records": records,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=sorted(TARGETS), required=True)
    parser.add_argument("--version", type=int, choices=(1, 2), required=True)
    parser.add_argument("--fault", choices=("restart", "kill", "pause"), default="restart")
    parser.add_argument(
        "--driver",
        choices=TXN_DRIVERS,
        default=LIBRDKAFKA,
        help="the writers' and the processor's client (the control: kafka-java)",
    )
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--at-s", type=float, default=5.0)
    parser.add_argument(
        "--duration-s", type=float, default=12.0, help="how long a kill or a pause lasts (a restart has no duration)"
    )
    parser.add_argument("--chaos-s", type=float, default=15.0)
    parser.add_argument("--heap", default="512M")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("/tmp/failsafe-findings"),
        help="the cluster's directory (one cluster for all runs)",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--again",
        action="store_true",
        help="make --out's per-run records again from the run directories it lists, running nothing (after a "
        "change here)",
    )
    args = parser.parse_args()
    if args.again:
        stats = json.loads(args.out.read_text())
        stats["txn_hang"] |= summary([record(Path(d)) for d in stats["run_dirs"]])
        args.out.write_text(json.dumps(stats, indent=2) + "\n")
        return

    runs = args.dir / "runs" / f"txn-hang-{time.strftime('%Y%m%dT%H%M%S')}"
    duration_s = None if args.fault == "restart" else args.duration_s
    # A kill ends within the chaos phase, with 3 s to spare.
    chaos_s = max(args.chaos_s, args.at_s + (duration_s or 0.0) + 3.0)
    schedule = schedule_file(runs, args.target, args.version, args.fault, args.at_s, duration_s, chaos_s, args.driver)
    done = subprocess.run(
        [
            FAILSAFE,
            "run",
            str(schedule),
            "--dir",
            str(args.dir),
            "--heap",
            args.heap,
            "--repeat",
            str(args.runs),
            "--runs",
            str(runs),
        ],
        text=True,
    )
    name = schedule.stem
    stats_files = sorted((runs / name).glob("repeat-*.json"))
    if not stats_files:
        sys.exit(f"failsafe run exited {done.returncode} and left no repeat summary under {runs / name}")
    stats = json.loads(stats_files[-1].read_text())
    run_dirs = sorted(d for d in (runs / name).glob("*/") if (d / "results.json").exists())
    stats["txn_hang"] = summary([record(d) for d in run_dirs]) | {
        "target": args.target,
        "transaction_version": args.version,
        "fault": args.fault,
        "duration_s": duration_s,
        "driver": args.driver,
        "command": f".venv/bin/python benchmarks/findings_txn_hang.py --target {args.target} --version {args.version} "
        f"--fault {args.fault} "
        f"--duration-s {args.duration_s:g} --driver {args.driver} --runs {args.runs}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stats, indent=2) + "\n")
    print(json.dumps({k: v for k, v in stats["txn_hang"].items() if k != "records"}, indent=2))


if __name__ == "__main__":
    main()
