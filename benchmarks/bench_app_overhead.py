"""What failsafe's verification costs an app: the transactional example's throughput fed and read by failsafe's
verifying clients, against the same app fed by Kafka's producer-perf-test and read by its consumer-perf-test.

    .venv/bin/python benchmarks/bench_app_overhead.py --dir /tmp/bench-cluster --records 60000 --rounds 3 \
        --out docs/benchmarks/app-overhead.json

Each round runs both, one after the other (which goes first alternates), on the same cluster: fresh input and output
topics (6 partitions, RF 3) and a fresh group; the app (examples/apps/eos_ctp.py, 2 instances, as an app scenario
starts it) is started and waited on until its group owns every input partition; then the feeder writes ``--records``
records of the size failsafe's own values have, as fast as it can, while the reader reads the output from its start
(read_committed); the app's throughput is the records divided by the time from the feed's start until the group had
committed the whole input. failsafe's side runs as in a scenario: a producer and a consumer worker process, every send
and every poll recorded in a history. Uses the cluster running at --dir, or starts one there and stops it afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.common import cluster_at, producer_perf_test, write_summary  # noqa: E402
from failsafe.history.recorder import Recorder  # noqa: E402
from failsafe.supervisor import Supervisor  # noqa: E402
from failsafe.tools.admin import log_end_offsets, new_admin  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from failsafe.workloads.pool import WorkerPool  # noqa: E402
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec  # noqa: E402

IN, OUT = "overhead-in", "overhead-out"
PARTITIONS = 6
INSTANCES = 2
APP = ROOT / "examples/apps/eos_ctp.py"
TIMEOUT_S = 600


def cli(root: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, "FAILSAFE_DIR": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, check=check, env=env
    ).stdout


def fresh_topics(root: Path) -> None:
    listed = cli(root, "topics", "list").split()
    doomed = [t for t in (IN, OUT) if t in listed]
    for topic in doomed:
        cli(root, "topics", "delete", topic)
    wait_until(lambda: not set(doomed) & set(cli(root, "topics", "list").split()), 60, "topics not deleted")
    for topic in (IN, OUT):
        cli(root, "topics", "create", topic, "--partitions", str(PARTITIONS), "--replication-factor", "3")


def committed(admin, group: str) -> int:
    """What the app's group has committed of its input, summed over the partitions."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = ConsumerGroupTopicPartitions(group, [TopicPartition(IN, p) for p in range(PARTITIONS)])
    try:
        answer = admin.list_consumer_group_offsets([request], request_timeout=10)[group].result(timeout=15)
    except Exception:  # the group not there yet: nothing committed
        return 0
    return sum(max(tp.offset, 0) for tp in answer.topic_partitions)


def owns_all(root: Path, group: str) -> bool:
    out = cli(root, "groups", "describe", group, "--json", "--timeout-s", "5", check=False)
    start = out.find("{")
    if start < 0:
        return False
    desc, _ = json.JSONDecoder().raw_decode(out[start:])
    owned = {tp for m in desc.get("member_list") or [] for tp in m.get("assignment") or []}
    return desc.get("state") == "STABLE" and owned >= {f"{IN}-{p}" for p in range(PARTITIONS)}


def start_app(supervisor: Supervisor, bootstrap: str, logs: Path, group: str) -> list:
    children = []
    for i in range(INSTANCES):
        env = {
            **os.environ,
            "FAILSAFE_BOOTSTRAP_SERVERS": bootstrap,
            "FAILSAFE_INPUT_TOPICS": IN,
            "FAILSAFE_OUTPUT_TOPICS": OUT,
            "FAILSAFE_GROUP": group,
            "FAILSAFE_PROCESS": f"eos-{i}",
            "FAILSAFE_TRANSACTIONAL_ID": f"overhead-eos-{i}",
        }
        children.append(
            supervisor.spawn([sys.executable, str(APP)], name=f"eos-{i}", log_path=logs / f"eos-{i}.log", env=env)
        )
    return children


def kafka_side(root: Path, records: int, size: int, tmp: Path, group: str) -> subprocess.Popen:
    """The reader (consumer-perf-test, read_committed) started, then the feed (producer-perf-test) run to its end."""
    config = tmp / "reader.properties"
    config.write_text("isolation.level=read_committed\nauto.offset.reset=earliest\n")
    env = {**os.environ, "FAILSAFE_DIR": str(root)}
    reader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "failsafe.cli.main",
            "kafka",
            "consumer-perf-test",
            "--topic",
            OUT,
            "--num-records",
            str(records),
            "--timeout",
            str(TIMEOUT_S * 1000),
            "--command-config",
            str(config),
            "--group",
            group,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    cli(root, *producer_perf_test(IN, records, size))
    return reader


def failsafe_side(pool: WorkerPool, bootstrap: str, records: int, group: str) -> tuple:
    reader = pool.start(ConsumerSpec(process="reader", topics=(OUT,), bootstrap_servers=bootstrap, group=group))
    feed = pool.start(
        ProducerSpec(
            process="input", topic=IN, bootstrap_servers=bootstrap, rate_per_s=0, count=records, keys=16, acks="all"
        )
    )
    wait_until(lambda: not feed.alive(), TIMEOUT_S, "the feed did not finish", poll_interval_s=0.05)
    feed.reader.join()
    return reader, feed


def one(root: Path, bootstrap: str, which: str, records: int, size: int) -> dict:
    fresh_topics(root)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        supervisor = Supervisor()
        recorder = Recorder(tmp / "history.jsonl")
        pool = WorkerPool(recorder, supervisor, tmp / "logs")
        (tmp / "logs").mkdir(exist_ok=True)
        try:
            app_group = f"overhead-app-{which}-{time.time_ns()}"  # groups of their own: nothing committed before
            start_app(supervisor, bootstrap, tmp / "logs", app_group)
            wait_until(lambda: owns_all(root, app_group), 120, "the app's group did not own its input")
            t0 = time.monotonic()
            group = f"overhead-reader-{which}-{time.time_ns()}"
            if which == "kafka":
                reader = kafka_side(root, records, size, tmp, group)
            else:
                reader, feed = failsafe_side(pool, bootstrap, records, group)
            fed_s = time.monotonic() - t0
            ends = sum(log_end_offsets(bootstrap, [(IN, p) for p in range(PARTITIONS)]).values())
            admin = new_admin(bootstrap)
            wait_until(
                lambda: committed(admin, app_group) >= ends,
                TIMEOUT_S,
                "the app did not commit its input",
                poll_interval_s=0.5,
            )
            app_s = time.monotonic() - t0
            if which == "kafka":
                reader.wait(timeout=TIMEOUT_S)
            else:
                if feed.acked != records:
                    raise SystemExit(f"only {feed.acked} of {records} sends were acknowledged")
                wait_until(lambda: pool.counters.records_read >= ends, TIMEOUT_S, "the reader did not read the output")
            read_s = time.monotonic() - t0
        finally:
            supervisor.stop_all()
            recorder.close()
    return {
        "feeder": which,
        "records": ends,
        "fed_s": round(fed_s, 2),
        "app_s": round(app_s, 2),
        "read_s": round(read_s, 2),
        "app_records_per_s": round(ends / app_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    # failsafe's values are "input:N": as long as the largest of them, for perf-test's records.
    size = len(f"input:{args.records}")
    rounds = []
    with cluster_at(args.dir) as cluster:
        for i in range(args.rounds):
            order = ("kafka", "failsafe") if i % 2 == 0 else ("failsafe", "kafka")
            runs = {w: one(args.dir, cluster.bootstrap_servers, w, args.records, size) for w in order}
            rounds.append({**runs, "ratio": runs["failsafe"]["app_records_per_s"] / runs["kafka"]["app_records_per_s"]})
            print(json.dumps(rounds[-1]), flush=True)
        for topic in (IN, OUT):
            cli(args.dir, "topics", "delete", topic, check=False)
    write_summary(
        {
            "what": "the transactional example app's throughput (2 instances) fed by failsafe's verifying producer and "
            "read by its verifying consumer (histories recorded), against producer-perf-test feeding it and "
            "consumer-perf-test reading; same cluster, same record count and size, alternating",
            "records": args.records,
            "record_size": size,
            "rounds": rounds,
            "median_ratio": statistics.median(r["ratio"] for r in rounds),
            "target_ratio": 0.8,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
