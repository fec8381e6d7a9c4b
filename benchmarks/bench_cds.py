"""Class-data sharing, measured: node start with and without the archive, in alternating rounds.

    .venv/bin/python benchmarks/bench_cds.py --rounds 3 --out docs/benchmarks/cds.json

Each round makes a fresh 3-broker cluster on free ports (`failsafe up`, timed to ready), then
kills broker 1, waits until the controller has fenced it (it leaves the metadata: until then a
new instance's registration is refused, so its start would measure the session timeout), and
starts it again (`failsafe broker start 1` returns once it has registered: timed), then cleans
up. Rounds alternate between the archive in place and moved aside, so the machine's noise falls
on both. Needs `failsafe setup` to have made the archive.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from failsafe.cluster.observe.readiness import registered_brokers  # noqa: E402
from failsafe.jvm.cds import archive_path  # noqa: E402
from failsafe.jvm.java import find_java  # noqa: E402
from failsafe.jvm.kafka import kafka_dist  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from tests.helpers import cluster_ports  # noqa: E402


def cli(*args: str) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, check=True)
    return time.monotonic() - started


def one_round(root: Path) -> dict[str, float]:
    cluster = root / "cluster"
    try:
        ports = cluster_ports()
        up_s = cli("up", "--dir", str(cluster), *ports)
        cli("broker", "kill", "1", "--dir", str(cluster))
        broker0 = int(ports[1])
        wait_until(lambda: 1 not in registered_brokers(broker0), 60, "broker 1 was not fenced within 60 s")
        restart_s = cli("broker", "start", "1", "--dir", str(cluster))
    finally:
        subprocess.run([sys.executable, "-m", "failsafe.cli.main", "clean", "--dir", str(cluster)], capture_output=True)
    return {"up_s": up_s, "broker_restart_s": restart_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    archive = archive_path(find_java(), kafka_dist())
    if not archive.is_file():
        raise SystemExit(f"no archive at {archive}: run 'failsafe setup' first")
    aside = archive.with_suffix(".jsa.aside")
    results: dict[str, list[dict[str, float]]] = {"with_cds": [], "without_cds": []}
    try:
        for i in range(args.rounds * 2):
            with_cds = i % 2 == 0
            if not with_cds:
                archive.rename(aside)
            try:
                with tempfile.TemporaryDirectory(prefix="failsafe-bench-cds-") as tmp:
                    result = one_round(Path(tmp))
            finally:
                if aside.exists():
                    aside.rename(archive)
            results["with_cds" if with_cds else "without_cds"].append(result)
            print(("with   " if with_cds else "without"), {k: round(v, 2) for k, v in result.items()}, flush=True)
    finally:
        if aside.exists():
            aside.rename(archive)
    summary = {
        side: {k: statistics.median(r[k] for r in rounds) for k in rounds[0]} for side, rounds in results.items()
    }
    print("medians:", json.dumps(summary))
    if args.out:
        args.out.write_text(
            json.dumps({"rounds": results, "medians": summary, "archive": str(archive)}, indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
