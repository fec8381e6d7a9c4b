"""What the benchmarks that need a cluster share: the cluster at --dir, and writing their summary."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, run_lock
from failsafe.cluster.topology import lifecycle
from failsafe.cluster.topology.lifecycle import Cluster
from tests.helpers import free_port_block

READY_TIMEOUT_S = 120


@contextmanager
def cluster_at(root: Path, *, hold: bool = True) -> Iterator[Cluster]:
    """The cluster at root; when there is none or it is stopped, one started (on free ports) and stopped afterwards.
    ``hold``: the benchmark holds the cluster's run lock throughout, as a scenario run does (cluster/state.py,
    run_lock), so that a run or another benchmark started on the same directory is refused instead of recreating the
    topics under it; a benchmark whose own runs take the lock (``failsafe run``) passes False."""
    with run_lock(root) if hold else nullcontext():
        with _cluster_at(root) as cluster:
            yield cluster


@contextmanager
def _cluster_at(root: Path) -> Iterator[Cluster]:
    if ClusterDir(root).has_state():
        existing = Cluster.open(root)
        if existing.running_nodes():
            yield existing
            return
        spec = existing.spec
    else:
        spec = ClusterSpec(base_port=free_port_block(3), controller_base_port=free_port_block(1))
    cluster = lifecycle.up(root, spec, set(), READY_TIMEOUT_S)
    try:
        yield cluster
    finally:
        lifecycle.down(root)


def producer_perf_test(topic: str, records: int, size: int, *props: str) -> list[str]:
    """'failsafe kafka' arguments for Kafka's producer-perf-test writing ``records`` of ``size`` bytes as fast as it can
    with acks=all (and ``props``, more producer settings)."""
    return [
        "kafka",
        "producer-perf-test",
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--record-size",
        str(size),
        "--throughput",
        "-1",
        "--producer-props",
        "acks=all",
        *props,
    ]


def percentiles(latencies: list[float]) -> dict:
    """Count, p50, p99 and max of latencies in seconds (p99: the value at rank 0.99 * (n - 1), no interpolation)."""
    latencies = sorted(latencies)
    if not latencies:
        return {"records": 0}
    return {
        "records": len(latencies),
        "p50_s": round(statistics.median(latencies), 3),
        "p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 3),
        "max_s": round(latencies[-1], 3),
    }


def write_summary(summary: dict, out: Path | None) -> None:
    text = json.dumps(summary, indent=2)
    print(text)
    if out:
        out.write_text(text + "\n")


def command_line(script: str, *positional: str, **flags: object) -> str:
    """How a benchmark was run, as its summary records it: ``.venv/bin/python benchmarks/SCRIPT`` with its positional
    arguments and each flag that was given (``--name value``, underscores as dashes; None left out)."""
    words = [f".venv/bin/python benchmarks/{script}", *positional]
    words += [f"--{name.replace('_', '-')} {value}" for name, value in flags.items() if value is not None]
    return " ".join(words)


def failsafe_cli(root: Path, *args: str) -> str | None:
    """``failsafe ARGS`` with FAILSAFE_DIR at ``root``: what went wrong, in its last words, or None."""
    done = subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args],
        env={**os.environ, "FAILSAFE_DIR": str(root)},
        capture_output=True,
        text=True,
        check=False,
    )
    return f"failsafe {' '.join(args)}: {done.stderr.strip()[-300:]}" if done.returncode != 0 else None


def failsafe_run(
    root: Path, args: tuple[str, ...], timeout_s: float = 600, keep: Path | None = None
) -> tuple[int, dict | None, list[dict], str]:
    """``failsafe run ARGS`` on the cluster at ``root`` (started by the run when none fits there), its run directory
    kept under ``keep`` or thrown away after: the exit code, its results.json (None when the run wrote none), its
    history, and stderr's tail."""
    with tempfile.TemporaryDirectory() as scratch:
        runs = str(keep) if keep is not None else scratch
        began = time.time()
        done = subprocess.run(
            [sys.executable, "-m", "failsafe.cli.main", "run", *args, "--runs", runs],
            env={**os.environ, "FAILSAFE_DIR": str(root)},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        # This run's own: a run that wrote none must not be given an earlier run's, kept in the same place.
        found = sorted(
            (p for p in Path(runs).glob("*/*/results.json") if p.stat().st_mtime >= began),
            key=lambda p: p.stat().st_mtime,
        )
        if not found:
            return done.returncode, None, [], done.stderr.strip()[-300:]
        newest = found[-1]
        history = [json.loads(line) for line in (newest.parent / "history.jsonl").read_text().splitlines()]
        return done.returncode, json.loads(newest.read_text()), history, ""
