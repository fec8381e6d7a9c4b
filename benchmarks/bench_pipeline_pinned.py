"""How much of the pipeline's gap to the ceiling query is the machine's: both on one Spark standalone cluster, with the
brokers sharing Spark's CPUs and with them pinned away.

    .venv/bin/python benchmarks/bench_pipeline_pinned.py --dir /tmp/failsafe-bench-cluster --out \
        docs/benchmarks/pipeline-pinned.json

One backlog of --records purchases (the simulator's), read again from a fresh checkpoint by every run. Each round runs,
in each placement, the ceiling query (benchmarks/ceiling_query.py) and the pipeline in each --publish mode, all with
``--master spark://...`` on a standalone cluster of one worker (``failsafe spark up``):

- shared: the worker offers 2 cores; Spark, its driver and the Kafka nodes all run on every CPU (what local[2] does).
- pinned: the Kafka nodes' threads on CPU 1 (sched_setaffinity on the tracked pids' threads), the Spark master, worker,
  executors, Python workers and the driver on CPU 0 (started pinned, so everything they start inherits it); the worker
  offers 1 core.

Per run: the steady rate (records of every batch after the first over their triggerExecution, Spark's progress), the
first batch, the wall time with Spark's start, and the CPU seconds the run took (psutil): the Kafka nodes' own (their
processes' user + system time) and each CPU's busy time (/proc/stat). If the pipeline's steady rate over the ceiling's
is the same in both placements, the gap is the pipeline's own work; the part by which pinning closes it is the
contention with the brokers. Both placements' ratios come from the same round, so a slow machine moves both.
The nodes are given every CPU back at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_pipeline import ceiling_query, on_cpus, pipeline_over_backlog, write_backlog  # noqa: E402
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from tests.helpers import spark_base_port  # noqa: E402

SPARK_CPU = 0
KAFKA_CPU = 1
PLACEMENTS = {"shared": None, "pinned": {SPARK_CPU}}


def pin(pids: list[int], cpus: set[int]) -> None:
    """Every thread of ``pids`` on ``cpus``; threads they start later inherit it from the thread that starts them."""
    for pid in pids:
        for thread in psutil.Process(pid).threads():
            try:
                os.sched_setaffinity(thread.id, cpus)
            except ProcessLookupError:
                pass  # a thread that ended since the listing


def cpu_seconds(pids: list[int]) -> tuple[float, list[float]]:
    """(user + system seconds of ``pids``, busy seconds of each CPU since boot)."""
    own = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        own += times.user + times.system
    busy = [c.user + c.nice + c.system + c.irq + c.softirq + c.steal for c in psutil.cpu_times(percpu=True)]
    return own, busy


def measured(kafka_pids: list[int], run: Callable[[], dict]) -> dict:
    """``run``'s result with the CPU seconds the Kafka nodes and each CPU spent while it ran."""
    before_own, before_busy = cpu_seconds(kafka_pids)
    result = run()
    after_own, after_busy = cpu_seconds(kafka_pids)
    return {
        **result,
        "kafka_cpu_s": round(after_own - before_own, 1),
        "busy_cpu_s": [round(a - b, 1) for a, b in zip(after_busy, before_busy, strict=True)],
    }


def spark_up(spark_dir: Path, cores: int, cpus: set[int] | None) -> str:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "failsafe",
            "spark",
            "up",
            "--dir",
            str(spark_dir),
            "--workers",
            "1",
            "--cores",
            str(cores),
            "--memory",
            "2g",
            "--port",
            str(spark_base_port(1)),
        ],
        check=True,
        capture_output=True,
        text=True,
        preexec_fn=on_cpus(cpus),
    )
    return proc.stdout.strip()


def spark_down(spark_dir: Path) -> None:
    subprocess.run([sys.executable, "-m", "failsafe", "spark", "down", "--dir", str(spark_dir)], check=True)


def one_placement(placement: str, bootstrap: str, kafka_pids: list[int], work: Path, args: argparse.Namespace) -> dict:
    cpus = PLACEMENTS[placement]
    every_cpu = set(range(psutil.cpu_count()))
    pin(kafka_pids, {KAFKA_CPU} if cpus else every_cpu)
    spark_dir = work / "spark"
    master = spark_up(spark_dir, 1 if cpus else 2, cpus)
    try:
        runs = {"ceiling": measured(kafka_pids, lambda: ceiling_query(bootstrap, work, args.batch, master, cpus))}
        for mode in args.publish.split(","):
            runs[mode] = measured(
                kafka_pids,
                lambda mode=mode: pipeline_over_backlog(
                    bootstrap, work, args.work / "ledger", args.batch, mode, master, cpus, name=mode
                ),
            )
    finally:
        spark_down(spark_dir)
        pin(kafka_pids, every_cpu)
    ceiling = runs["ceiling"]["steady_records_per_s"]
    for name, run in runs.items():
        run["cpu_s_per_1000_records"] = round(sum(run["busy_cpu_s"]) / args.records * 1000, 3)
        run["kafka_cpu_s_per_1000_records"] = round(run["kafka_cpu_s"] / args.records * 1000, 3)
        if name != "ceiling":
            run["steady_over_ceiling"] = round(run["steady_records_per_s"] / ceiling, 2) if ceiling else None
    return {"placement": placement, "spark_cpus": sorted(cpus or every_cpu), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/failsafe-bench-pinned"))
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--publish", default="exactly-once,at-least-once")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if psutil.cpu_count() < 2:
        parser.error("pinning the brokers away needs 2 CPUs or more")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    rounds = []
    with cluster_at(args.dir) as cluster:
        kafka_pids = [cluster.tracked(node).pid for node in cluster.running_nodes()]
        write_backlog(cluster.bootstrap_servers, args.work / "ledger", args.records)
        for round_ in range(args.rounds):
            order = list(PLACEMENTS) if round_ % 2 == 0 else list(reversed(PLACEMENTS))
            for placement in order:
                work = args.work / f"{placement}-{round_}"
                work.mkdir()
                rounds.append(
                    {"round": round_, **one_placement(placement, cluster.bootstrap_servers, kafka_pids, work, args)}
                )
                print(json.dumps(rounds[-1]), file=sys.stderr, flush=True)
    write_summary(
        {
            "records": args.records,
            "max_records_per_batch": args.batch,
            "cpus": psutil.cpu_count(),
            "kafka_nodes": len(kafka_pids),
            "rounds": rounds,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
