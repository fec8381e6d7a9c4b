"""Where a micro-batch of the pipeline spends its time, from Spark's own event log: jobs, stages, task time against CPU
time.

    .venv/bin/python benchmarks/profile_pipeline.py --dir /tmp/failsafe-bench-cluster --out \
        docs/benchmarks/pipeline-profile.json

The simulator writes --backlog purchases; the pipeline's query (job.start_queries, with its sink)
reads them with --available-now in batches of at most --batch records, in this process, with
Spark's event log on (uncompressed, in --work). Each batch gets the jobs Spark ran between its
progress report and the one before, each job its stages with their wall time, tasks, summed
task run time, CPU time and GC time (Spark's task metrics), and the batch Spark's ``durationMs``
and state operator metrics. A stage whose run time is far above its CPU time waited (for Kafka,
the disk, or the other tasks on the same cores).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from failsafe.pipeline.publish import AT_LEAST_ONCE, EXACTLY_ONCE  # noqa: E402
from failsafe.scenarios.engine import setup  # noqa: E402
from failsafe.scenarios.kinds.pipeline.workload import DEMO_TOPICS  # noqa: E402

PROGRESS_EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"
STARTED_EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent"


def run_query(bootstrap: str, work: Path, batch: int, publish: str) -> Path:
    """The pipeline's query over the backlog, event log on, its totals published in ``publish`` mode; the event
    log's path."""
    from failsafe.jvm.spark import spark_kafka_dist
    from failsafe.pipeline.job import PipelineConfig, read_products, start_queries
    from failsafe.pipeline.session import SessionSpec, build_session

    events = work / "events"
    events.mkdir(parents=True)
    spark = build_session(
        SessionSpec(
            app_name="failsafe-profile",
            jars=tuple(str(j) for j in spark_kafka_dist().jars),
            extra={
                "spark.eventLog.enabled": "true",
                "spark.eventLog.dir": str(events),
                "spark.eventLog.compress": "false",
            },
        )
    )
    config = PipelineConfig(
        bootstrap_servers=bootstrap,
        output_dir=work / "output",
        checkpoint_dir=work / "checkpoint",
        available_now=True,
        max_offsets_per_trigger=batch,
        publish=publish,
    )
    try:
        for query in start_queries(spark, config, read_products(spark, config)).values():
            query.awaitTermination()
    finally:
        spark.stop()
    (log,) = events.rglob("events_*")  # eventlog_v2_APP/events_1_APP (rolling event log)
    return log


def batches_from_log(log: Path) -> list[dict]:
    """Each micro-batch's progress and the jobs that ran for it (between its progress report and the one before); the
    jobs that ran before the query started (the catalogue's read, the sink's warm-up) as a first entry without a
    ``batch_id``."""
    stages: dict[int, dict] = {}
    jobs: dict[int, dict] = {}
    batches: list[dict] = []
    pending: list[int] = []
    with open(log, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerJobStart":
                jobs[event["Job ID"]] = {
                    "job": event["Job ID"],
                    "start": event["Submission Time"],
                    "stage_ids": event["Stage IDs"],
                }
                pending.append(event["Job ID"])
            elif kind == "SparkListenerJobEnd":
                jobs[event["Job ID"]]["duration_ms"] = event["Completion Time"] - jobs[event["Job ID"]]["start"]
            elif kind == "SparkListenerStageCompleted":
                stages[event["Stage Info"]["Stage ID"]] = _stage(event["Stage Info"])
            elif kind == STARTED_EVENT:
                batches.append({"before_the_query_started": True, "job_ids": pending})
                pending = []
            elif kind == PROGRESS_EVENT:
                progress = event["progress"]
                rows = sum(source.get("numInputRows", 0) for source in progress.get("sources") or [])
                batches.append(
                    {
                        "batch_id": progress["batchId"],
                        "num_input_rows": rows,
                        "duration_ms": progress["durationMs"],
                        "state_operator": {
                            k: v
                            for k, v in (progress["stateOperators"] or [{}])[0].items()
                            if k
                            in (
                                "numRowsTotal",
                                "numRowsUpdated",
                                "allUpdatesTimeMs",
                                "allRemovalsTimeMs",
                                "commitTimeMs",
                                "numShufflePartitions",
                            )
                        },
                        "job_ids": pending,
                    }
                )
                pending = []
    for b in batches:
        # A job's stages in the order Spark numbered them, parents first (a stage skipped because its output was reused
        # has no line).
        b["jobs"] = [
            {
                "duration_ms": jobs[j].get("duration_ms"),
                "stages": [stages[s] for s in sorted(jobs[j]["stage_ids"]) if s in stages],
            }
            for j in b.pop("job_ids")
        ]
    return batches


def _published(output: Path) -> list[dict]:
    from failsafe.pipeline.job import PUBLISHED_FILE

    path = output / PUBLISHED_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _stage(info: dict) -> dict:
    metrics = {a["Name"].removeprefix("internal.metrics."): a.get("Value") for a in info.get("Accumulables", [])}
    return {
        "stage": info["Stage ID"],
        "name": info["Stage Name"].split(" at ")[0],
        "tasks": info["Number of Tasks"],
        "duration_ms": info["Completion Time"] - info["Submission Time"],
        "run_ms": metrics.get("executorRunTime", 0),
        "cpu_ms": round(metrics.get("executorCpuTime", 0) / 1e6),
        "gc_ms": metrics.get("jvmGCTime", 0),
        "input_records": metrics.get("input.recordsRead", 0),
        "shuffle_read_records": metrics.get("shuffle.read.recordsRead", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/failsafe-profile-pipeline"))
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--publish", choices=(EXACTLY_ONCE, AT_LEAST_ONCE), default=EXACTLY_ONCE)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    with cluster_at(args.dir) as cluster:
        setup.fresh_topics(cluster.bootstrap_servers, DEMO_TOPICS, [])
        subprocess.run(
            [
                sys.executable,
                "-m",
                "failsafe",
                "simulate",
                "sales",
                "--bootstrap-server",
                cluster.bootstrap_servers,
                "--rate",
                "0",
                "--count",
                str(args.backlog),
                "--ledger",
                str(args.work / "ledger"),
            ],
            check=True,
        )
        log = run_query(cluster.bootstrap_servers, args.work, args.batch, args.publish)
    write_summary(
        {
            "master": "local[2]",
            "records": args.backlog,
            "max_records_per_batch": args.batch,
            "publish": args.publish,
            "batches": batches_from_log(log),
            # What each output partition's transaction did, per batch (exactly-once: pipeline/publish.py's outcomes).
            "published": _published(args.work / "output"),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
