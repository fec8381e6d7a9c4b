"""The pipeline on local[2]: how many purchases per second it keeps up with, against a ceiling, and its latency at half
that.

    .venv/bin/python benchmarks/bench_pipeline.py --dir /tmp/failsafe-bench-cluster --out docs/benchmarks/pipeline.json
    .venv/bin/python benchmarks/bench_pipeline.py --dir DIR --backlog 2000 --batch 1000 --live-s 0  # the suite's smoke

1. Backlog: the simulator writes --backlog purchases as fast as it can; then the pipeline reads
   them with --available-now in micro-batches of at most --batch records. The steady rate is the
   records of every batch after the first (which pays for JIT and planning) over their time.
   In the same run and on the same backlog, the ceiling query (benchmarks/ceiling_query.py: Kafka
   source, from_json, a count per product, the noop sink) reads it the same way; the pipeline's
   wall time and steady rate are reported as ratios of the ceiling's.
2. Live (skipped with --live-s 0): a fresh topic, the pipeline running with a 1 s trigger, the simulator at half the
steady
   rate for --live-s seconds. Latency of a purchase = the time its batch's output was renamed into
   the sink (``sales_by_product/_commits.jsonl``) minus the record's Kafka CreateTime. Both runs
   are verified against their ledgers; a run whose sink differs is reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, percentiles, write_summary  # noqa: E402
from failsafe.pipeline.progress import latest_by_query  # noqa: E402
from failsafe.pipeline.sink import read_progress  # noqa: E402
from failsafe.pipeline.verify import verify_output  # noqa: E402
from failsafe.scenarios.engine import setup
from failsafe.scenarios.kinds.pipeline.workload import DEMO_TOPICS, failsafe_command, purchases_log_end  # noqa: E402
from failsafe.supervisor import spawn  # noqa: E402
from failsafe.tools.admin import client_config  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from failsafe.workloads.sales.run import publish_products  # noqa: E402

TOPIC = "demo.purchases"
WARMUP_S = 30.0  # latency is also reported for the records created after this many seconds of the live run
BOUNDED_SLOPE = 0.02  # latency growing by more than 2 % of the elapsed time after the warm-up: not keeping up


def cli(*args: str, cpus: set[int] | None = None) -> None:
    """``failsafe ARGS`` to its end; ``cpus``: the process (and every process it starts) kept on these CPUs."""
    subprocess.run([sys.executable, "-m", "failsafe", *args], check=True, preexec_fn=on_cpus(cpus))


def on_cpus(cpus: set[int] | None):
    """A ``preexec_fn`` that keeps the child on ``cpus`` (inherited by everything it starts); None: no pinning."""
    if cpus is None:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def sales_batches(output: Path) -> dict[int, dict]:
    """The last progress line of each sales-by-product batch that read something."""
    return {
        line["batch_id"]: line
        for line in read_progress(output)
        if line["query"] == "sales-by-product" and line["num_input_rows"]
    }


def write_backlog(bootstrap: str, ledger: Path, records: int) -> None:
    """Fresh demo topics, then ``records`` purchases from the simulator as fast as it can."""
    setup.fresh_topics(bootstrap, DEMO_TOPICS, [])
    cli(
        "simulate",
        "sales",
        "--bootstrap-server",
        bootstrap,
        "--rate",
        "0",
        "--count",
        str(records),
        "--ledger",
        str(ledger),
    )


def pipeline_over_backlog(
    bootstrap: str,
    work: Path,
    ledger: Path,
    batch: int,
    publish: str = "exactly-once",
    master: str | None = None,
    cpus: set[int] | None = None,
    name: str = "backlog",
) -> dict:
    """The pipeline over the topic's backlog from a fresh checkpoint (--available-now), verified against ``ledger``."""
    output = work / name
    t0 = time.monotonic()
    cli(
        "pipeline",
        "run",
        "--bootstrap-server",
        bootstrap,
        "--output",
        str(output),
        "--checkpoint",
        str(work / f"ck-{name}"),
        "--available-now",
        "--max-offsets-per-trigger",
        str(batch),
        "--publish",
        publish,
        *(["--master", master] if master else []),
        cpus=cpus,
    )
    wall_s = time.monotonic() - t0
    batches = sorted(sales_batches(output).items())
    steady = batches[1:] or batches
    rows = sum(b["num_input_rows"] for _, b in steady)
    busy_s = sum(b["duration_ms"]["triggerExecution"] for _, b in steady) / 1000
    return {
        "batches": len(batches),
        "wall_s_with_spark_start": round(wall_s, 1),
        "steady_records_per_s": round(rows / busy_s),
        "first_batch_s": round(batches[0][1]["duration_ms"]["triggerExecution"] / 1000, 1),
        "sink_equals_ledger": verify_output(output, ledger)["valid"],
    }


def backlog(bootstrap: str, work: Path, records: int, batch: int, publish: str = "exactly-once") -> dict:
    write_backlog(bootstrap, work / "ledger-backlog", records)
    run = pipeline_over_backlog(bootstrap, work, work / "ledger-backlog", batch, publish)
    ceiling = ceiling_query(bootstrap, work, batch)
    return {
        "ceiling": ceiling,
        "pipeline_wall_s_over_ceiling": round(run["wall_s_with_spark_start"] / ceiling["wall_s_with_spark_start"], 2),
        "pipeline_steady_over_ceiling": round(run["steady_records_per_s"] / ceiling["steady_records_per_s"], 2)
        if ceiling["steady_records_per_s"]
        else None,
        "records": records,
        "max_records_per_batch": batch,
        **run,
    }


def ceiling_query(
    bootstrap: str, work: Path, batch: int, master: str | None = None, cpus: set[int] | None = None
) -> dict:
    """The simplest query on the same topic, as a process of its own like the pipeline's (Spark's start included in the
    wall time)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("ceiling_query.py")),
            "--bootstrap-server",
            bootstrap,
            "--checkpoint",
            str(work / "ck-ceiling"),
            "--batch",
            str(batch),
            *(["--master", master] if master else []),
        ],
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=on_cpus(cpus),
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**result, "wall_s_with_spark_start": round(time.monotonic() - t0, 1)}


def create_times(bootstrap: str, ends: dict[int, int]) -> dict[tuple[int, int], float]:
    consumer = Consumer(client_config(bootstrap, **{"group.id": "bench-pipeline", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in ends])
    out: dict[tuple[int, int], float] = {}
    deadline = time.monotonic() + 120
    while len(out) < sum(ends.values()) and time.monotonic() < deadline:
        for msg in consumer.consume(10000, timeout=1.0):
            if msg.error() is None:
                out[(msg.partition(), msg.offset())] = msg.timestamp()[1] / 1000
    consumer.close()
    return out


def latencies_s(
    output: Path, created: dict[tuple[int, int], float], visible: str = "written_at"
) -> list[tuple[float, float]]:
    """(CreateTime, latency) of every record a committed sales batch covered; ``visible``: in the sink (written_at) or
    in the results topic too (published_at)."""
    commits = {}
    for line in (output / "sales_by_product" / "_commits.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry.get(visible) is not None:
            commits.setdefault(entry["batch_id"], entry[visible])  # the first write is when it became visible
    batches = sorted(sales_batches(output).items())
    previous: dict[int, int] = {}
    out = []
    for batch_id, line in batches:
        ends = {int(p): o for p, o in line["end_offsets"][TOPIC].items()}
        if batch_id in commits:
            for p, end in ends.items():
                out += [
                    (created[(p, o)], commits[batch_id] - created[(p, o)])
                    for o in range(previous.get(p, 0), end)
                    if (p, o) in created
                ]
        previous = ends
    return out


def live(
    bootstrap: str, work: Path, rate: int, live_s: float, warmup_s: float = WARMUP_S, publish: str = "exactly-once"
) -> dict:
    setup.fresh_topics(bootstrap, DEMO_TOPICS, [])
    publish_products(bootstrap, "demo.products", 60)
    output = work / "live"
    pipeline = spawn(
        failsafe_command(
            "pipeline",
            "run",
            "--bootstrap-server",
            bootstrap,
            "--output",
            str(output),
            "--checkpoint",
            str(work / "ck-live"),
            "--trigger-s",
            "1",
            "--publish",
            publish,
        ),
        name="pipeline",
        log_path=work / "pipeline.log",
    )
    try:
        wait_until(lambda: "sales-by-product" in latest_by_query(output), 180, "the pipeline did not start")
        cli(
            "simulate",
            "sales",
            "--bootstrap-server",
            bootstrap,
            "--rate",
            str(rate),
            "--duration",
            f"{live_s:g}",
            "--ledger",
            str(work / "ledger-live"),
        )
        ends = purchases_log_end(bootstrap)

        def caught_up() -> bool:
            read = (latest_by_query(output).get("sales-by-product", {}).get("end_offsets") or {}).get(TOPIC, {})
            return all(int(read.get(str(p), 0)) >= end for p, end in ends.items())

        wait_until(caught_up, 300, "the pipeline did not catch up")
    finally:
        pipeline.stop()
    created = create_times(bootstrap, ends)
    pairs = latencies_s(output, created)
    start = min((c for c, _ in pairs), default=0.0)
    after = [(c, lat) for c, lat in pairs if c >= start + warmup_s]
    published = [lat for c, lat in latencies_s(output, created, "published_at") if c >= start + warmup_s]
    verified = verify_output(output, work / "ledger-live")
    slope = latency_slope(after)
    return {
        "rate_per_s": rate,
        "duration_s": live_s,
        "trigger_s": 1,
        "latency_all": percentiles([lat for _, lat in pairs]),
        "warmup_s": warmup_s,
        "latency_after_warmup": percentiles([lat for _, lat in after]),
        "publish": publish,
        "latency_published_after_warmup": percentiles(published),
        "latency_slope_s_per_s": None if slope is None else round(slope, 4),
        "bounded": slope is not None and slope <= BOUNDED_SLOPE,
        "sink_equals_ledger": verified["valid"],
    }


def latency_slope(pairs: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of each second's worst latency against the second it was created in: a pipeline
    that keeps up has none (or a falling one, while it works off its start); one that falls behind
    at rate R with capacity C has (R - C) / C seconds of latency more per second."""
    worst: dict[int, float] = {}
    for created, lat in pairs:
        second = int(created)
        worst[second] = max(worst.get(second, lat), lat)
    if len(worst) < 10:
        return None
    seconds = sorted(worst)
    return statistics.linear_regression(seconds, [worst[t] for t in seconds]).slope


def compare_publish(bootstrap: str, args: argparse.Namespace, modes: list[str]) -> list[dict]:
    """The backlog and the live run (at --live-rate, else half the first backlog's steady rate) in each publish mode,
    the modes taking turns, --rounds times: the cost of a mode is read against the other's on the same machine."""
    runs: list[dict] = []
    rate = args.live_rate
    for round_ in range(args.rounds):
        for mode in modes:
            work = args.work / f"{mode}-{round_}"
            work.mkdir(parents=True)
            first = None if args.skip_backlog else backlog(bootstrap, work, args.backlog, args.batch, mode)
            rate = rate or (max(1, first["steady_records_per_s"] // 2) if first else None)
            second = live(bootstrap, work, rate, args.live_s, args.warmup, mode) if args.live_s > 0 and rate else None
            runs.append({"publish": mode, "round": round_, "backlog": first, "live": second})
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    return runs


def sustained(bootstrap: str, args: argparse.Namespace, modes: list[str]) -> dict:
    """A live run of --live-s at each rate of --sustained, in order (each rate in each publish mode, the modes taking
    turns); a mode's sustained rate is the highest whose latency stays bounded."""
    runs = []
    for rate in (int(r) for r in args.sustained.split(",")):
        for mode in modes:
            work = args.work / f"rate-{rate}" if len(modes) == 1 else args.work / f"rate-{rate}-{mode}"
            runs.append(live(bootstrap, work, rate, args.live_s, args.warmup, mode))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    rates = {mode: [r["rate_per_s"] for r in runs if r["bounded"] and r["publish"] == mode] for mode in modes}
    summary = {"master": "local[2]", "bounded_slope_s_per_s": BOUNDED_SLOPE, "runs": runs}
    if len(modes) == 1:
        return {**summary, "sustained_rate_per_s": max(rates[modes[0]], default=None)}
    return {**summary, "sustained_rate_per_s": {mode: max(rates[mode], default=None) for mode in modes}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/failsafe-bench-pipeline"))
    parser.add_argument("--backlog", type=int, default=300_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--live-s", type=float, default=60)
    parser.add_argument(
        "--live-rate", type=int, default=None, help="the live run's rate [default: half the backlog's steady rate]"
    )
    parser.add_argument("--skip-backlog", action="store_true", help="only the live run (needs --live-rate)")
    parser.add_argument(
        "--sustained",
        default=None,
        metavar="R1,R2,...",
        help="instead: a live run of --live-s at each rate, in order, in each --publish mode; the sustained rate is "
        "the highest whose latency stays bounded",
    )
    parser.add_argument("--warmup", type=float, default=WARMUP_S)
    parser.add_argument(
        "--publish",
        default="exactly-once",
        help="how the pipeline publishes its totals; with both, comma-separated, each run is made in each mode in turn",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with several --publish modes: rounds of each")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    with cluster_at(args.dir) as cluster:
        modes = args.publish.split(",")
        if args.sustained:
            write_summary(sustained(cluster.bootstrap_servers, args, modes), args.out)
            return
        if len(modes) > 1:
            write_summary(
                {"master": "local[2]", "runs": compare_publish(cluster.bootstrap_servers, args, modes)}, args.out
            )
            return
        first = None if args.skip_backlog else backlog(cluster.bootstrap_servers, args.work, args.backlog, args.batch)
        rate = args.live_rate or (max(1, first["steady_records_per_s"] // 2) if first else None)
        second = (
            live(cluster.bootstrap_servers, args.work, rate, args.live_s, args.warmup)
            if args.live_s > 0 and rate
            else None
        )
    write_summary({"master": "local[2]", "backlog": first, "live_at_half_rate": second}, args.out)


if __name__ == "__main__":
    main()
