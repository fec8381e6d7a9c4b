"""What a cluster profile buys and what it costs: failover time under a kill -9, false fencing under a GC-like pause and
under load, with each profile in the same session.

    .venv/bin/python benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles --runs 20 \\
        --out docs/benchmarks/profiles.json \\
        kill:defaults kill:fast-failover pause-0.5:fast-failover pause-1.5:fast-failover pause-3:fast-failover \\
        pause-3:defaults load:defaults load:fast-failover

A job is SCENARIO:PROFILE[:CLIENT], CLIENT librdkafka (the default) or java (Kafka's VerifiableProducer). ``kill`` is
``failsafe run broker-failover`` (kill -9 the leader of my-failsafe-topic-0, acks=all, RF 3, min.insync.replicas 2, 200
sends/s); ``pause-D`` is benchmarks/scenarios/leader-gc-pause.toml with the leader of gc-0 SIGSTOPped for D seconds;
``load`` is benchmarks/scenarios/steady-load.toml (no fault, 2 x 2,000 1 KB records/s for 60 s). Every job runs
``--repeat RUNS`` on a cluster of its own started with the profile (``--set cluster.profile=NAME``) in DIR/JOB, stopped
after. Per run, from results.json and the history: each partition the fault took the leader of, its client-visible
unavailability (last acknowledgement before to first after) and time to a new leader; acknowledged writes lost; and,
from the nodes' metrics, whether the controller fenced a broker (its FencedBrokerCount above 0 at any scrape) and how
many ISR shrinks the brokers counted. The load average when each run started is kept: the numbers are this 2-core
machine's. Runs that are not valid are kept and reported, never dropped. """

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import polars as pl  # noqa: E402

from benchmarks.common import write_summary  # noqa: E402
from failsafe.history.load import load_history  # noqa: E402
from failsafe.scenarios.store.repeat import spread  # noqa: E402

HERE = Path(__file__).resolve().parent
SCENARIOS = {
    "kill": "broker-failover",
    "pause": str(HERE / "scenarios" / "leader-gc-pause.toml"),
    "load": str(HERE / "scenarios" / "steady-load.toml"),
}
FENCED = "kafka_controller_kafkacontroller_fencedbrokercount"
ISR_SHRINKS = "kafka_server_replicamanager_isrshrinkspersec_count"


# The producers' client: failsafe's librdkafka worker (the scenarios' own), or Kafka's Java VerifiableProducer.
CLIENTS = {"librdkafka": [], "java": ["--set", 'producers[*].driver="kafka-verifiable"']}


def job_command(job: str, root: Path, runs: int, out_runs: Path) -> list[str]:
    scenario_key, _, rest = job.partition(":")
    profile, _, client = rest.partition(":")
    kind, _, seconds = scenario_key.partition("-")
    if kind not in SCENARIOS or not profile or (client or "librdkafka") not in CLIENTS:
        raise SystemExit(
            f"bench_profiles: job {job!r} is not SCENARIO:PROFILE[:CLIENT] with SCENARIO kill, pause-SECONDS or load "
            f"and CLIENT {' or '.join(CLIENTS)}"
        )
    cmd = [
        sys.executable,
        "-m",
        "failsafe.cli.main",
        "run",
        SCENARIOS[kind],
        "--dir",
        str(root / job.replace(":", "-")),
        "--runs",
        str(out_runs),
        "--repeat",
        str(runs),
        "--set",
        f'cluster.profile="{profile}"',
        *CLIENTS[client or "librdkafka"],
    ]
    if kind == "pause":
        cmd += ["--set", f"faults[0].duration_s={float(seconds)}"]
    return cmd


def examine(run_dir: Path) -> dict:
    results = json.loads((run_dir / "results.json").read_text())
    availability = results["checkers"]["availability"]
    fault = availability["faults"][0] if availability.get("faults") else {}
    history = load_history(run_dir / "history.jsonl")
    fenced = history.metrics.filter(pl.col("metric") == FENCED)["value"].max()
    shrinks = (
        history.metrics.filter(pl.col("metric") == ISR_SHRINKS)
        .group_by("node")
        .agg((pl.col("value").max() - pl.col("value").min()).alias("n"))["n"]
        .sum()
    )
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return {
        "run_dir": str(run_dir),
        "valid": results["valid"],
        "partitions": [
            {
                "partition": f"{p['topic']}-{p['partition']}",
                "unavailable_ms": p.get("unavailable_ms"),
                "new_leader_ms": p.get("new_leader_ms"),
            }
            for p in fault.get("affected_partitions", [])
        ],
        "lost": results["checkers"]["delivery"]["counts"].get("lost"),
        "acknowledged": results["checkers"]["delivery"]["counts"].get("acknowledged"),
        "broker_fenced": bool(fenced and fenced > 0),
        "isr_shrinks": int(shrinks or 0),
        "failover_breakdown": [{key: row.get(key) for key in BREAKDOWN_KEYS} for row in _breakdown_rows(results)],
        "profile": (manifest.get("cluster") or {}).get("profile"),
        "client_settings": _client_settings(history),
    }


BREAKDOWN_KEYS = ("partition", "detection_s", "election_s", "propagation_s", "client_backoff_s", "client_visible_s")


def _breakdown_rows(results: dict) -> list[dict]:
    return ((results.get("measurements") or {}).get("failover_breakdown") or {}).get("partitions") or []


def _client_settings(history) -> dict:
    """The first producer's client library and the settings it ran with (its client-config op)."""
    producers = history.clients.filter(pl.col("process").str.starts_with("producer"))
    if producers.is_empty():
        return {}
    row = producers.row(0, named=True)
    return {"client": row["client"], **{entry["name"]: entry["value"] for entry in row["config"] or []}}


def run_job(job: str, root: Path, runs: int) -> dict:
    out_runs = root / "runs" / job.replace(":", "-")
    load_1m = os.getloadavg()[0]
    t0 = time.monotonic()
    proc = subprocess.run(job_command(job, root, runs, out_runs), capture_output=True, text=True)
    scenario_dirs = [d for d in out_runs.iterdir() if d.is_dir()] if out_runs.is_dir() else []
    run_dirs = sorted(r for d in scenario_dirs for r in d.iterdir() if (r / "results.json").is_file())
    return aggregate(
        {
            "job": job,
            "exit_code": proc.returncode,
            "wall_s": round(time.monotonic() - t0, 1),
            "load_1m_at_start": round(load_1m, 2),
            "runs": [examine(r) for r in run_dirs],
            **({"stderr_tail": proc.stderr[-2000:]} if proc.returncode not in (0, 1) else {}),
        }
    )


def aggregate(job: dict) -> dict:
    """The job's spreads across its runs: every partition a fault took the leader of counts once per run."""
    rows = job["runs"]
    partitions = [p for r in rows for p in r["partitions"]]
    components = [b for r in rows for b in r["failover_breakdown"]]
    return {
        **job,
        "valid_runs": sum(1 for r in rows if r["valid"] is True),
        "unavailable_ms": spread([p["unavailable_ms"] for p in partitions if p["unavailable_ms"] is not None]),
        "new_leader_ms": spread([p["new_leader_ms"] for p in partitions if p["new_leader_ms"] is not None]),
        "breakdown_s": {key: spread([b[key] for b in components if b[key] is not None]) for key in BREAKDOWN_KEYS[1:]},
        "lost_total": sum(r["lost"] or 0 for r in rows),
        "runs_with_a_fenced_broker": sum(1 for r in rows if r["broker_fenced"]),
        "runs_with_isr_shrinks": sum(1 for r in rows if r["isr_shrinks"] > 0),
    }


def reexamine(path: Path) -> None:
    """Re-read every run of a stored output (its run directories must still exist) and rewrite it in place."""
    stored = json.loads(path.read_text())
    for i, job in enumerate(stored["jobs"]):
        stored["jobs"][i] = aggregate({**job, "runs": [examine(Path(r["run_dir"])) for r in job["runs"]]})
    path.write_text(json.dumps(stored, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--examine", type=Path, help="re-read the runs of a stored output and rewrite it (no run)")
    parser.add_argument("jobs", nargs="*", metavar="SCENARIO:PROFILE")
    args = parser.parse_args()
    if args.examine:
        reexamine(args.examine)
        return
    jobs = []
    for job in args.jobs:
        jobs.append(run_job(job, args.dir, args.runs))
        print(json.dumps({k: v for k, v in jobs[-1].items() if k != "runs"}), flush=True)
    write_summary(
        {
            "what": "failsafe profiles: failover time (kill -9 of a leader), false fencing (pauses, load); Kafka "
            "4.3.1, 3 brokers, 1 controller, librdkafka producers",
            "jobs": jobs,
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
