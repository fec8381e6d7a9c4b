"""The ceiling the pipeline is measured against: the simplest Spark query on the same topic.

    .venv/bin/python benchmarks/ceiling_query.py --bootstrap-server HOST:PORT --checkpoint DIR [--batch 50000] \
        [--master local[2]]

Spark's Kafka source, ``from_json`` with the purchase schema, a count per product, the ``noop``
sink, ``availableNow`` in batches of at most --batch records: no state beyond the count, no sink
work. Prints one JSON line: the batches, the first batch's time, the steady records/s (every batch
after the first, over their triggerExecution time) and the wall time from query start to end.
Same session settings as the pipeline (failsafe.pipeline.session), so the two differ only in the query.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from failsafe.jvm.spark import spark_kafka_dist  # noqa: E402
from failsafe.pipeline.schema import PURCHASE_SCHEMA  # noqa: E402
from failsafe.pipeline.session import SessionSpec, build_session  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--topic", default="demo.purchases")
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    spark = build_session(
        SessionSpec(
            app_name="failsafe-ceiling", master=args.master, jars=tuple(str(j) for j in spark_kafka_dist().jars)
        )
    )
    from pyspark.sql import functions as F

    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap_server)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.batch))
        .load()
    )
    counts = (
        source.select(F.from_json(F.col("value").cast("string"), PURCHASE_SCHEMA).alias("p"))
        .groupBy("p.product_id")
        .count()
    )
    t0 = time.monotonic()
    query = (
        counts.writeStream.format("noop")
        .outputMode("complete")
        .option("checkpointLocation", str(args.checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    wall_s = time.monotonic() - t0
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    steady = batches[1:] or batches
    busy_s = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
    print(
        json.dumps(
            {
                "records": sum(p["numInputRows"] for p in batches),
                "batches": len(batches),
                "wall_s": round(wall_s, 1),
                "first_batch_s": round(batches[0]["durationMs"]["triggerExecution"] / 1000, 1) if batches else None,
                "steady_records_per_s": round(sum(p["numInputRows"] for p in steady) / busy_s) if busy_s else None,
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main()
