"""Share groups measured: how long a member's records take to come back, and how fast failsafe's share consumer reads.

    .venv/bin/python benchmarks/bench_share.py --dir /tmp/failsafe-bench-cluster --runs 5 --records 200000 --rounds 3 \
        --out docs/benchmarks/share.json

Redelivery: the catalog scenarios share-consumer-killed (kill -9 of a member mid-batch), share-consumer-paused (one
frozen 25 s, past its records' 15 s acquisition lock), share-leader-killed and share-coordinator-killed (kill -9 of the
share-partition leader's broker, of the share coordinator's, 10 s), --runs times each. From each run: the verdict, the
share checker's redeliveries by reason and its anomalies, and from the history, for the records a faulted member held,
the time from the fault to their first delivery to another member. The cluster at --dir must fit the scenarios (any
running 4.x KRaft cluster of 3 brokers; absent, each run starts one).

--driver kafka-verifiable runs the scenarios with Kafka's VerifiableShareConsumer as the members (implicit
acknowledgement, no processing time: a kill catches a member holding records only between a poll and its commit).

Throughput: --records records of 100 bytes on a topic of 3 partitions, read --rounds times by a new share group
(starting at the earliest offset) with Kafka's ShareConsumerPerformance (one consumer, implicit acknowledgement) and
with failsafe's verifying share consumer (one worker: every record recorded as an op and accepted explicitly, committed
per poll), each timed from its start to the last record; the ratio is failsafe's records/s over Kafka's in the same
round. """

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402
from failsafe.cluster.topology.lifecycle import Cluster  # noqa: E402
from failsafe.jvm.java import find_java  # noqa: E402
from failsafe.jvm.jvm import tool_command  # noqa: E402
from failsafe.jvm.kafka import kafka_dist  # noqa: E402
from failsafe.scenarios.base import TopicSpec  # noqa: E402
from failsafe.scenarios.engine.setup import fresh_topics  # noqa: E402
from failsafe.supervisor import Supervisor  # noqa: E402
from failsafe.tools.admin import set_group_configs  # noqa: E402
from failsafe.tools.kafka_tools import main_class  # noqa: E402
from failsafe.workloads.share.consumer import ShareConsumerSpec  # noqa: E402
from failsafe.workloads.specs import spec_to_json  # noqa: E402

SCENARIOS = ("share-consumer-killed", "share-consumer-paused", "share-leader-killed", "share-coordinator-killed")
TOPIC = "share-perf"
RUN_TIMEOUT_S = 600
READ_TIMEOUT_S = 600


# Kafka's VerifiableShareConsumer as every scenario's members: it accepts each record at once (no processing time).
JAVA_SETS = ['share_consumers[0].driver="kafka-verifiable"', "share_consumers[0].processing_ms=0"]


def one_run(root: Path, runs: Path, scenario: str, driver: str = "failsafe") -> dict:
    sets = JAVA_SETS if driver == "kafka-verifiable" else []
    cmd = [
        sys.executable,
        "-m",
        "failsafe.cli.main",
        "run",
        scenario,
        "--dir",
        str(root),
        "--runs",
        str(runs),
        *[a for s in sets for a in ("--set", s)],
    ]
    before = set((runs / scenario).iterdir()) if (runs / scenario).is_dir() else set()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    new = sorted(set((runs / scenario).iterdir()) - before) if (runs / scenario).is_dir() else []
    if done.returncode not in (0, 1, 3, 4) or len(new) != 1 or not (new[0] / "results.json").is_file():
        raise SystemExit(f"{scenario}: exit {done.returncode}: {(done.stderr or done.stdout).strip()[-600:]}")
    run_dir = new[0]
    results = json.loads((run_dir / "results.json").read_text())
    share = results["checkers"]["share"]
    return {
        "scenario": scenario,
        "driver": driver,
        "run_dir": str(run_dir),
        "verdict": results["verdict"],
        "counts": {k: v for k, v in share["counts"].items() if v},
        "violations": share["violations"],
        "redelivery_delay_ms": share.get("redelivery_delay_ms", {}),
        **_after_fault(run_dir / "history.jsonl"),
    }


def _after_fault(history: Path) -> dict:
    """For the records the faulted member acquired and had not had accepted or rejected when the fault came: from the
    fault's start to each one's first delivery to another member, and the fault's duration (a pause's)."""
    ops = [orjson.loads(line) for line in history.read_bytes().splitlines()]
    fault = next((op for op in ops if op.get("f") == "fault-start"), None)
    if fault is None:
        return {
            "held_at_fault": 0,
            "redelivered_to_another": 0,
            "fault_to_redelivery_ms": None,
            "fault_duration_ms": None,
        }
    start, faulted = fault["time_ns"], fault["nodes"][0]
    stop = next(
        (op["time_ns"] for op in ops if op.get("f") == "fault-stop" and op.get("fault_id") == fault["fault_id"]), None
    )
    held: set[tuple] = set()
    redelivered: dict[tuple, int] = {}
    for op in ops:
        mine, before = op.get("process") == faulted, op["time_ns"] <= start
        if op.get("f") == "share-poll" and op.get("type") == "ok":
            for r in op["records"]:
                key = (r["topic"], r["partition"], r["offset"])
                if mine and before:
                    held.add(key)
                elif not mine and not before and key in held and key not in redelivered:
                    redelivered[key] = op["time_ns"]
        elif op.get("f") == "share-ack" and op.get("type") == "ok" and mine and before:
            held.difference_update(
                (a["topic"], a["partition"], a["offset"]) for a in op["acks"] if a["ack"] in ("accept", "reject")
            )
    delays = sorted((t - start) / 1e6 for k, t in redelivered.items() if k in held)
    return {
        "held_at_fault": len(held),
        "redelivered_to_another": len(delays),
        "fault_to_redelivery_ms": {"min": round(delays[0], 1), "max": round(delays[-1], 1)} if delays else None,
        "fault_duration_ms": None if stop is None else round((stop - start) / 1e6, 1),
    }


def produce(bootstrap: str, records: int) -> None:
    from confluent_kafka import Producer

    fresh_topics(bootstrap, (TopicSpec(TOPIC, 3, 3),), [])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    failed = []
    value = b"x" * 100
    for i in range(records):
        while True:
            try:
                producer.produce(
                    TOPIC, value=value, key=str(i % 64).encode(), on_delivery=lambda err, _: err and failed.append(err)
                )
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(120) or failed:
        raise SystemExit(
            f"writing {records} records to {TOPIC}: {len(failed)} failed ({failed[:1]}), some still in flight "
            f"after 120 s"
        )


def kafka_perf(root: Path, bootstrap: str, group: str, records: int) -> dict:
    dist = kafka_dist(Cluster.open(root).spec.kafka_version)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    cmd = tool_command(
        find_java(),
        dist,
        main_class(dist, "share-consumer-perf-test"),
        [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            TOPIC,
            "--group",
            group,
            "--num-records",
            str(records),
            "--timeout",
            "60000",
        ],
    )
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=READ_TIMEOUT_S)
    wall = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    if done.returncode != 0 or header is None or header + 1 >= len(lines):
        raise SystemExit(f"ShareConsumerPerformance failed: {(done.stderr or done.stdout).strip()[-600:]}")
    stats = dict(
        zip(
            [h.strip() for h in lines[header].split(",")],
            [v.strip() for v in lines[header + 1].split(",")],
            strict=False,
        )
    )
    consumed = int(float(stats.get("data.consumed.in.nMsg", records)))
    return {
        "wall_s": round(wall, 2),
        "records": consumed,
        "records_per_s_wall": round(consumed / wall, 1),
        "reported": stats,
    }


def failsafe_perf(bootstrap: str, group: str, records: int, logs: Path) -> dict:
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    spec = ShareConsumerSpec(process=f"perf-{group}", topics=(TOPIC,), group=group, bootstrap_servers=bootstrap)
    started = time.monotonic()
    supervisor = Supervisor()
    child = supervisor.spawn(
        [sys.executable, "-m", "failsafe.workloads.worker", orjson.dumps(spec_to_json(spec)).decode()],
        name=spec.process,
        log_path=logs / f"{group}.log",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    accepted: set[tuple] = set()
    first = None
    try:
        # The worker writes an op per poll and per commit: a line comes often, and EOF when it dies.
        for line in child.popen.stdout:  # type: ignore[union-attr]
            op = orjson.loads(line)
            if op.get("f") == "share-poll" and op.get("type") == "ok" and first is None:
                first = time.monotonic()
            elif op.get("f") == "share-ack" and op.get("type") == "ok":
                accepted.update((a["partition"], a["offset"]) for a in op["acks"] if a["ack"] == "accept")
            if len(accepted) >= records or time.monotonic() - started > READ_TIMEOUT_S:
                break
        done = time.monotonic()
    finally:
        supervisor.stop_all()
    if len(accepted) < records:
        raise SystemExit(
            f"failsafe's share consumer accepted {len(accepted)} of {records} records (log: {logs / f'{group}.log'})"
        )
    wall = done - started
    return {
        "wall_s": round(wall, 2),
        "records": len(accepted),
        "records_per_s_wall": round(len(accepted) / wall, 1),
        "first_record_s": round(first - started, 2) if first else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument(
        "--driver",
        choices=("failsafe", "kafka-verifiable"),
        default="failsafe",
        help="the share scenarios' members: failsafe's worker, or Kafka's VerifiableShareConsumer",
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    bootstrap = Cluster.open(args.dir).bootstrap_servers
    rows, rounds = [], []
    with tempfile.TemporaryDirectory(prefix="failsafe-share-") as tmp:
        runs = Path(os.environ.get("FAILSAFE_BENCH_RUNS", tmp))
        for scenario in args.scenarios.split(","):
            for i in range(args.runs):
                row = one_run(args.dir, runs, scenario, args.driver)
                rows.append(row)
                print(
                    f"{scenario} {i + 1}/{args.runs}: {row['verdict']} held {row['held_at_fault']}, redelivered "
                    f"{row['redelivered_to_another']} after {row['fault_to_redelivery_ms']} ms; {row['counts']}",
                    flush=True,
                )
        if args.rounds:
            produce(bootstrap, args.records)
        for r in range(args.rounds):
            stamp = f"{int(time.time())}-{r}"
            kafka = kafka_perf(args.dir, bootstrap, f"kperf-{stamp}", args.records)
            ours = failsafe_perf(bootstrap, f"fperf-{stamp}", args.records, Path(tmp))
            # The machine's load after the round: failsafe's worker is Python, the first to slow down when the cores are
            # busy.
            rounds.append(
                {
                    "round": r,
                    "kafka": kafka,
                    "failsafe": ours,
                    "ratio": round(ours["records_per_s_wall"] / kafka["records_per_s_wall"], 3),
                    "load_1m": round(os.getloadavg()[0], 1),
                }
            )
            print(
                f"round {r + 1}: Kafka {kafka['records_per_s_wall']}/s, failsafe {ours['records_per_s_wall']}/s",
                flush=True,
            )
    write_summary(
        {
            "benchmark": "share",
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "command": " ".join(sys.argv),
            "records": args.records,
            "redelivery": rows,
            "throughput": rounds,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
