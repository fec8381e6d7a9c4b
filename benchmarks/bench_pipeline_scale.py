"""The pipeline's state on a Spark standalone cluster: one worker against two, with a state large enough to matter.

    .venv/bin/python benchmarks/bench_pipeline_scale.py --dir /tmp/failsafe-bench-cluster --out \
        docs/benchmarks/pipeline-scale.json

1. A backlog of --records purchases of --products products (ids P000000...; unknown to the catalogue,
   so named "unknown"), event times spread uniformly over the first --spread-s seconds of an hour:
   with 1-minute windows and the pipeline's 2-minute watermark every window stays open, and the
   state ends with about --products × windows rows (each a key some purchase hit).
2. For each worker count of --workers: ``failsafe spark up --workers N`` (one core each), then
   ``failsafe pipeline run --master spark://... --available-now --max-offsets-per-trigger --batch``
   from a fresh checkpoint, then ``failsafe spark down``.
3. Per run, from the pipeline's progress.jsonl: the steady rate (records of the full batches after
   the first over their ``triggerExecution``), each batch's duration and its state rows (Spark's
   ``numRowsTotal``); where each state partition was (Spark's StateStoreCoordinator, logged by the
   pipeline) and the rows of each partition (Spark's State Data Source over the checkpoint),
   giving state rows per executor. The runs' final totals must be equal.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from failsafe.checkers.pipeline.sales import KEY, current_totals  # noqa: E402
from failsafe.pipeline.sink import read_progress, read_sales_rows  # noqa: E402
from failsafe.scenarios.engine import setup
from failsafe.scenarios.kinds.pipeline.workload import DEMO_TOPICS  # noqa: E402
from failsafe.tools.admin import client_config  # noqa: E402
from tests.helpers import spark_base_port  # noqa: E402

TOPIC = "demo.purchases"
PRICE = 4.99


def write_backlog(bootstrap: str, records: int, products: int, spread_s: float, seed: int) -> None:
    """``records`` purchases in the simulator's format, each acknowledged by all in-sync replicas."""
    producer = Producer(
        client_config(bootstrap, **{"acks": "all", "linger.ms": 20, "batch.size": 1 << 20, "enable.idempotence": True})
    )
    failed: list[str] = []

    def delivered(err, _msg) -> None:
        if err is not None:
            failed.append(str(err))

    rng = random.Random(seed)
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    for i in range(records):
        product = f"P{rng.randrange(products):06d}"
        quantity = rng.randint(1, 3)
        value = {
            "transaction_time": (start + timedelta(seconds=rng.uniform(0, spread_s))).strftime("%Y-%m-%d %H:%M:%S.%f"),
            "transaction_id": str(i),
            "product_id": product,
            "price": PRICE,
            "quantity": quantity,
            "is_member": rng.random() < 0.3,
            "member_discount": 0.0,
            "add_supplements": False,
            "supplement_price": 0.0,
            "total_purchase": round(PRICE * quantity, 2),
        }
        while True:
            try:
                producer.produce(TOPIC, key=product, value=json.dumps(value), on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)  # the local queue is full: serve deliveries until there is room
        producer.poll(0)
    left = producer.flush(120)
    if left or failed:
        raise RuntimeError(f"backlog not written: {left} undelivered, {len(failed)} failed ({failed[:1]})")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "failsafe", *args], check=True, capture_output=True, text=True)


def one_run(bootstrap: str, work: Path, workers: int, batch: int) -> dict:
    """The pipeline over the backlog on a fresh standalone cluster of ``workers`` one-core workers."""
    spark_dir, output = work / f"spark-{workers}", work / f"output-{workers}"
    master = cli(
        "spark", "up", "--dir", str(spark_dir), "--workers", str(workers), "--port", str(spark_base_port(workers))
    ).stdout.strip()
    try:
        cli(
            "pipeline",
            "run",
            "--bootstrap-server",
            bootstrap,
            "--master",
            master,
            "--available-now",
            "--max-offsets-per-trigger",
            str(batch),
            "--output",
            str(output),
            "--checkpoint",
            str(work / f"checkpoint-{workers}"),
        )
    finally:
        cli("spark", "down", "--dir", str(spark_dir))
    batches = [line for line in read_progress(output) if line["query"] == "sales-by-product" and line["num_input_rows"]]
    steady = [b for b in batches[1:] if b["num_input_rows"] >= 0.9 * batch]
    busy_s = sum(b["duration_ms"]["triggerExecution"] for b in steady) / 1000
    return {
        "workers": workers,
        "cores_per_worker": 1,
        "batches": len(batches),
        "steady_records_per_s": round(sum(b["num_input_rows"] for b in steady) / busy_s) if busy_s else None,
        "first_batch_s": round(batches[0]["duration_ms"]["triggerExecution"] / 1000, 1),
        "batch_s": [round(b["duration_ms"]["triggerExecution"] / 1000, 1) for b in batches],
        "state_rows_after_batch": [b["state_rows"] for b in batches],
        # The last batch logged while the query ran: once it stops, its partitions are unloaded and have no location.
        "state_locations": next((b["state_locations"] for b in reversed(batches) if b.get("state_locations")), None),
    }


def rows_per_executor(checkpoint: Path, locations: dict[str, str] | None) -> tuple[dict[str, int], dict[str, int]]:
    """(rows per state partition, rows per executor) of the newest state version (Spark's State Data Source)."""
    from failsafe.pipeline.session import SessionSpec, build_session
    from failsafe.pipeline.state_census import state_rows_by_partition

    spark = build_session(SessionSpec(app_name="failsafe-scale-census", master="local[1]"))
    try:
        rows = state_rows_by_partition(spark, str(checkpoint / "sales-by-product"))
    finally:
        spark.stop()
    by_executor: dict[str, int] = {}
    for partition, executor in (locations or {}).items():
        by_executor[executor] = by_executor.get(executor, 0) + rows.get(int(partition), 0)
    return {str(p): n for p, n in sorted(rows.items())}, by_executor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/failsafe-bench-scale"))
    parser.add_argument("--records", type=int, default=600_000)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--spread-s", type=float, default=150.0)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    with cluster_at(args.dir) as cluster:
        bootstrap = cluster.bootstrap_servers
        setup.fresh_topics(bootstrap, DEMO_TOPICS, [])
        write_backlog(bootstrap, args.records, args.products, args.spread_s, args.seed)
        runs = []
        for workers in (int(w) for w in args.workers.split(",")):
            runs.append(one_run(bootstrap, args.work, workers, args.batch))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    for run in runs:
        run["state_rows_by_partition"], run["state_rows_by_executor"] = rows_per_executor(
            args.work / f"checkpoint-{run['workers']}", run.pop("state_locations")
        )
    # Each key's current total (the checker's rule), without its batch: the runs' batch boundaries may differ.
    totals = [
        current_totals(read_sales_rows(args.work / f"output-{run['workers']}")).drop("batch_id").sort(KEY)
        for run in runs
    ]
    write_summary(
        {
            "records": args.records,
            "products": args.products,
            "spread_s": args.spread_s,
            "max_records_per_batch": args.batch,
            "seed": args.seed,
            "runs": runs,
            "sink_rows": totals[0].height,
            "totals_equal": all(t.equals(totals[0]) for t in totals[1:]),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
