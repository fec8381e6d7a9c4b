"""The sales query's state store and sink, variant by variant, on one backlog: what each costs per micro-batch.

    .venv/bin/python benchmarks/bench_state_store.py --dir /tmp/failsafe-bench-cluster --out \
        docs/benchmarks/pipeline-state-store.json

The simulator writes --backlog purchases once; then each variant runs the pipeline's query
(``sales_and_dead_letters``) in a process of its own on local[2], with --available-now in batches
of at most --batch records, from a fresh checkpoint:

- ``hdfs``, ``rocksdb``, ``rocksdb-changelog``: Spark's state store providers, with the
  pipeline's sink (Parquet and the Kafka publish);
- ``rocksdb-changelog-count``: the same query with a sink that only counts each kind (the query
  alone, without the writes);
- ``rocksdb-changelog-2-partitions``: ``spark.sql.shuffle.partitions`` 2 instead of 4;
- ``rocksdb-changelog-producer-defaults``: the results topic published with the Kafka producer's
  defaults instead of the pipeline's larger batches (job.RESULTS_PRODUCER_OPTIONS);
- ``transform-with-state-pandas-count``: the other candidate issue 28 named, Spark 4's
  ``transformWithStateInPandas``, as a lower bound of its cost: a processor that only keeps the
  running sums of each (window, product) in a ``ValueState`` and emits the changed ones (no
  watermark, no eviction, no dead letters, the count-only sink), to set against
  ``rocksdb-changelog-count``.

For each: the steady rate (records of the full batches after the first, over their
``triggerExecution``), the first batch, and the means over those batches of Spark's
``durationMs.addBatch`` and of the state operator's update, removal and commit times.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from failsafe.pipeline.publish import AT_LEAST_ONCE  # noqa: E402
from failsafe.scenarios.engine import setup
from failsafe.scenarios.kinds.pipeline.workload import DEMO_TOPICS  # noqa: E402

VARIANTS = (
    "hdfs",
    "rocksdb",
    "rocksdb-changelog",
    "rocksdb-changelog-count",
    "rocksdb-changelog-2-partitions",
    "rocksdb-changelog-producer-defaults",
    "transform-with-state-pandas-count",
)
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def variant_conf(variant: str) -> tuple[dict[str, str], int]:
    """The session settings of a variant (over the pipeline's), and its shuffle partitions."""
    # transformWithState needs RocksDB.
    conf = {
        "spark.sql.streaming.stateStore.providerClass": HDFS if variant == "hdfs" else ROCKSDB,
        CHANGELOG: str("changelog" in variant or variant.startswith("transform-with-state")).lower(),
    }
    return conf, 2 if variant.endswith("2-partitions") else 4


def run_variant(variant: str, bootstrap: str, work: Path, batch: int) -> dict:
    """One variant in a child process (its own Spark); its summary line."""
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            variant,
            "--bootstrap-server",
            bootstrap,
            "--work",
            str(work),
            "--batch",
            str(batch),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"variant {variant} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _transform_with_state(parsed, products, window_duration: str):  # noqa: ANN001, ANN202 (pyspark types imported late)
    """The valid purchases summed per (window, product) by a transformWithStateInPandas processor (the lower bound
    above)."""
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from failsafe.pipeline.transforms import valid_purchases, with_products

    sums = "purchases long, quantity long, revenue double, member_purchases long"

    class RunningSums(StatefulProcessor):
        def init(self, handle) -> None:  # noqa: ANN001
            self.total = handle.getValueState("total", sums)

        def handleInputRows(self, key, rows, timerValues):  # noqa: ANN001, ANN201, N802, N803
            batch = pd.concat(list(rows))
            old = self.total.get() if self.total.exists() else (0, 0, 0.0, 0)
            new = (
                old[0] + len(batch),
                old[1] + int(batch["quantity"].sum()),
                old[2] + float(batch["total_purchase"].sum()),
                old[3] + int(batch["is_member"].sum()),
            )
            self.total.update(new)
            yield pd.DataFrame(
                [
                    {
                        "window_start": key[0],
                        "product_id": key[1],
                        "purchases": new[0],
                        "quantity": new[1],
                        "revenue": new[2],
                        "member_purchases": new[3],
                    }
                ]
            )

    rows = with_products(valid_purchases(parsed), products).select(
        F.window("event_time", window_duration).start.alias("window_start"),
        "product_id",
        "quantity",
        F.col("total_purchase").cast("double").alias("total_purchase"),
        F.col("is_member").cast("long").alias("is_member"),
    )
    return rows.groupBy("window_start", "product_id").transformWithStateInPandas(
        RunningSums(), f"window_start timestamp, product_id string, {sums}", "Update", "None"
    )


def child(variant: str, bootstrap: str, work: Path, batch: int) -> None:
    from failsafe.jvm.spark import spark_kafka_dist
    from failsafe.pipeline.job import RESULTS_TOPIC, PipelineConfig, SalesBatchSink, read_products
    from failsafe.pipeline.session import SessionSpec, build_session
    from failsafe.pipeline.transforms import parse_purchases, sales_and_dead_letters

    conf, partitions = variant_conf(variant)
    spark = build_session(
        SessionSpec(
            app_name=f"failsafe-state-{variant}",
            jars=tuple(str(j) for j in spark_kafka_dist().jars),
            shuffle_partitions=partitions,
            extra=conf,
        )
    )
    root = work / variant
    config = PipelineConfig(
        bootstrap_servers=bootstrap,
        output_dir=root / "output",
        checkpoint_dir=root / "checkpoint",
        available_now=True,
        max_offsets_per_trigger=batch,
        results_topic=RESULTS_TOPIC,
        publish=AT_LEAST_ONCE,  # the variants as first measured, with Spark's Kafka sink
    )
    reader = spark.readStream.format("kafka")
    for key, value in config.kafka_source_options().items():
        reader = reader.option(key, value)
    if variant.startswith("transform-with-state"):
        outputs = _transform_with_state(
            parse_purchases(reader.load()), read_products(spark, config), config.window_duration
        )
    else:
        outputs = sales_and_dead_letters(
            parse_purchases(reader.load()), read_products(spark, config), config.window_duration, config.watermark_delay
        )
    if variant.endswith("-count"):
        sink = lambda frame, _: frame.groupBy(*frame.columns[:1]).count().collect()  # noqa: E731 (the kind, or the window)
    else:
        sink = SalesBatchSink(config, producer_options={} if variant.endswith("producer-defaults") else None)
    query = (
        outputs.writeStream.outputMode("update")
        .foreachBatch(sink)
        .option("checkpointLocation", str(root / "checkpoint" / "q"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    steady = [p for p in batches[1:] if p["numInputRows"] >= batch * 0.9]
    busy_s = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000

    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values)) if values else 0

    operator = [p["stateOperators"][0] for p in steady]
    print(
        json.dumps(
            {
                "variant": variant,
                "provider": conf["spark.sql.streaming.stateStore.providerClass"].rsplit(".", 1)[1],
                "changelog_checkpointing": conf[CHANGELOG] == "true",
                "shuffle_partitions": partitions,
                "sink": "count only" if variant.endswith("-count") else "pipeline (Parquet and Kafka)",
                "results_producer": "Kafka's defaults" if variant.endswith("producer-defaults") else "pipeline's",
                "steady_batches": len(steady),
                "steady_records_per_s": round(sum(p["numInputRows"] for p in steady) / busy_s) if busy_s else None,
                "first_batch_s": round(batches[0]["durationMs"]["triggerExecution"] / 1000, 1),
                "mean_add_batch_ms": mean([p["durationMs"]["addBatch"] for p in steady]),
                "mean_state_rows": mean([op["numRowsTotal"] for op in operator]),
                "mean_state_update_ms": mean([op["allUpdatesTimeMs"] for op in operator]),
                "mean_state_removal_ms": mean([op["allRemovalsTimeMs"] for op in operator]),
                "mean_state_commit_ms": mean([op["commitTimeMs"] for op in operator]),
            }
        )
    )
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/failsafe-bench-state-store"))
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap-server", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.bootstrap_server, args.work, args.batch)
        return
    if args.dir is None:
        parser.error("--dir is required")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    with cluster_at(args.dir) as cluster:
        bootstrap = cluster.bootstrap_servers
        setup.fresh_topics(bootstrap, DEMO_TOPICS, [])
        subprocess.run(
            [
                sys.executable,
                "-m",
                "failsafe",
                "simulate",
                "sales",
                "--bootstrap-server",
                bootstrap,
                "--rate",
                "0",
                "--count",
                str(args.backlog),
                "--ledger",
                str(args.work / "ledger"),
            ],
            check=True,
        )
        runs = []
        for variant in args.variants.split(","):
            runs.append(run_variant(variant, bootstrap, args.work, args.batch))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    write_summary(
        {"master": "local[2]", "records": args.backlog, "max_records_per_batch": args.batch, "runs": runs}, args.out
    )


if __name__ == "__main__":
    main()
