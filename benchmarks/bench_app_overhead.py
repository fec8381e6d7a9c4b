"""What failsafe's verification costs a user's application: the app's throughput fed and read by failsafe, against the
same app fed by Kafka's ProducerPerformance and read by ConsumerPerformance, in the same run, round by round.

    .venv/bin/python benchmarks/bench_app_overhead.py --dir /tmp/failsafe-bench-cluster --rounds 3 \
        --out docs/benchmarks/app-overhead.json

The app is the shipped transactional consume-transform-produce service (examples/apps/eos_ctp.py, 2 instances). Its
throughput is the records it carried from its input to its output over the time from the first input record written
to its group having committed its input up to the log end (a transactional app commits its output with its offsets).

    failsafe     an app scenario (the eos example without faults, its producer as fast as it goes) run by 'failsafe
                 run': failsafe's verifying producer writes the input with every send in the history, the app runs
                 under its supervisor, the final read reads everything back; from the history, the acknowledged inputs
                 over the time from the first send to the run's ``drained`` op
    kafka tools  the same app started by this script with the same environment, fed the same number of records by
                 producer-perf-test (acks=all), timed to its group's commit of the log end; then consumer-perf-test
                 reads its output at read_committed (its rate reported beside)

Ratio: failsafe's over the tools'; the target is >= 0.8. Uses the cluster running at --dir, or starts one there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from failsafe.supervisor import Supervisor  # noqa: E402
from failsafe.tools.admin import log_end_offsets  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402

EXAMPLE = ROOT / "examples/apps/eos-broker-and-instance-kill.toml"
APP = ROOT / "examples/apps/eos_ctp.py"
IN, OUT, GROUP = "app-in", "app-out", "app-eos"
PARTITIONS = 6
INSTANCES = 2
TIMEOUT_S = 600


def cli(root: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, "FAILSAFE_DIR": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, check=False, env=env
    )
    if check and done.returncode != 0:
        raise SystemExit(f"failsafe {' '.join(args)} exited {done.returncode}: {done.stderr[-1000:]}")
    return done.stdout


def by_failsafe(root: Path, chaos_s: float, work: Path) -> dict:
    """The eos example without its faults, its producer unthrottled, run by 'failsafe run'."""
    text = EXAMPLE.read_text().replace('"examples/apps/', f'"{ROOT}/examples/apps/')
    text = text[: text.index("[[faults]]")].replace("rate_per_s = 200", "rate_per_s = 0")
    text = re.sub(r"chaos_s = \d+", f"chaos_s = {chaos_s:g}", text)
    scenario = work / "overhead.toml"
    scenario.write_text(text)
    runs = work / "runs"
    cli(root, "run", str(scenario), "--runs", str(runs), check=False)
    [run_dir] = [d for d in (runs / "app-eos-kills").iterdir() if d.is_dir()]
    results = json.loads((run_dir / "results.json").read_text())
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    sends = [o for o in ops if o["f"] == "send" and o["type"] == "invoke"]
    acked = sum(1 for o in ops if o["f"] == "send" and o["type"] == "ok")
    drained = next(o for o in ops if o["f"] == "drained" and o.get("process") == "apps")
    elapsed = (drained["time_ns"] - sends[0]["time_ns"]) / 1e9
    return {
        "verdict": results["verdict"],
        "records": acked,
        "elapsed_s": round(elapsed, 2),
        "records_per_s": round(acked / elapsed, 1),
        "drained": drained.get("ok"),
    }


def _fresh_topics(root: Path) -> None:
    listed = cli(root, "topics", "list").split()
    for topic in (IN, OUT):
        if topic in listed:
            cli(root, "topics", "delete", topic)
    wait_until(lambda: not {IN, OUT} & set(cli(root, "topics", "list").split()), 60, "topics not deleted")
    if GROUP in cli(root, "groups", "list").split():
        cli(root, "kafka", "consumer-groups", "--delete", "--group", GROUP, check=False)
    for topic in (IN, OUT):
        cli(root, "topics", "create", topic, "--partitions", str(PARTITIONS), "--replication-factor", "3")


def _committed(root: Path, bootstrap: str) -> dict[tuple[str, int], int]:
    out = cli(root, "groups", "describe", GROUP, "--json", "--bootstrap-server", bootstrap, check=False)
    start = out.find("{")
    if start < 0:
        return {}
    desc = json.JSONDecoder().raw_decode(out[start:])[0]
    return {(r["topic"], r["partition"]): r.get("current_offset") or 0 for r in desc.get("partitions") or []}


def _owned(root: Path, bootstrap: str) -> bool:
    out = cli(root, "groups", "describe", GROUP, "--json", "--bootstrap-server", bootstrap, check=False)
    start = out.find("{")
    if start < 0:
        return False
    desc = json.JSONDecoder().raw_decode(out[start:])[0]
    owned = {tp for m in desc.get("member_list") or [] for tp in m.get("assignment") or []}
    return desc.get("state") == "STABLE" and len(owned) == PARTITIONS


def by_kafka_tools(root: Path, bootstrap: str, records: int, work: Path) -> dict:
    """The same app, started here with the environment failsafe gives it, fed by producer-perf-test."""
    _fresh_topics(root)
    supervisor = Supervisor()
    try:
        for i in range(INSTANCES):
            env = {
                **os.environ,
                "FAILSAFE_BOOTSTRAP_SERVERS": bootstrap,
                "FAILSAFE_INPUT_TOPICS": IN,
                "FAILSAFE_OUTPUT_TOPICS": OUT,
                "FAILSAFE_GROUP": GROUP,
                "FAILSAFE_PROCESS": f"eos-{i}",
                "FAILSAFE_TRANSACTIONAL_ID": f"eos-{i}",
            }
            supervisor.spawn([sys.executable, str(APP)], name=f"eos-{i}", log_path=work / f"eos-{i}.log", env=env)
        wait_until(lambda: _owned(root, bootstrap), 120, "the app's group did not own its input")
        started = time.monotonic()
        produced = cli(
            root,
            "kafka",
            "producer-perf-test",
            "--topic",
            IN,
            "--num-records",
            str(records),
            "--record-size",
            "16",
            "--throughput",
            "-1",
            "--producer-props",
            "acks=all",
        )
        ends = log_end_offsets(bootstrap, [(IN, p) for p in range(PARTITIONS)])
        wait_until(
            lambda: all(_committed(root, bootstrap).get(tp, 0) >= end for tp, end in ends.items()),
            TIMEOUT_S,
            "the app did not commit its input up to the log end",
            poll_interval_s=0.2,
        )
        elapsed = time.monotonic() - started
    finally:
        supervisor.stop_all()
    config = work / "read-committed.properties"
    config.write_text("isolation.level=read_committed\n")
    consumed = cli(
        root,
        "kafka",
        "consumer-perf-test",
        "--topic",
        OUT,
        "--num-records",
        str(records),
        "--command-config",
        str(config),
        "--timeout",
        "60000",
        check=False,
    )
    producer_rate = re.findall(r"([\d.]+) records/sec", produced)
    return {
        "records": records,
        "elapsed_s": round(elapsed, 2),
        "records_per_s": round(records / elapsed, 1),
        "producer_perf_test_records_per_s": float(producer_rate[-1]) if producer_rate else None,
        "consumer_perf_test": consumed.strip().splitlines()[-1] if consumed.strip() else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chaos-s", type=float, default=20.0, help="how long failsafe's producer writes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rounds = []
    with cluster_at(args.dir) as cluster:
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                mine = by_failsafe(args.dir, args.chaos_s, Path(tmp))
                tools = by_kafka_tools(args.dir, cluster.bootstrap_servers, mine["records"], Path(tmp))
            rounds.append(
                {"failsafe": mine, "kafka_tools": tools, "ratio": mine["records_per_s"] / tools["records_per_s"]}
            )
            print(json.dumps(rounds[-1]), flush=True)
    summary = {
        "what": "the eos example app's throughput (input to committed output), fed and read by failsafe vs by "
        "producer-perf-test and consumer-perf-test, same cluster, alternating",
        "app": "examples/apps/eos_ctp.py",
        "instances": INSTANCES,
        "partitions": PARTITIONS,
        "rounds": rounds,
        "median_ratio": statistics.median(r["ratio"] for r in rounds),
        "target_ratio": 0.8,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
