"""Tiered storage under faults, on Kafka 4.3.1 and 4.4.0: each tiered scenario run alternately on one cluster per
release.

    .venv/bin/python benchmarks/tiered_storage.py --dir /tmp/bench-tiered --runs 2 \
        --out docs/benchmarks/tiered-storage.json

Per release, one cluster started here first (3 brokers, 1 controller, failsafe up --tiered-storage --kafka-version V)
and stopped and deleted at the end; the four tiered scenarios fit it. Kafka 4.4.0's brokers run LocalTieredStorage of
kafka-storage 4.3.1 (its 4.4.0 test jar is not on Maven Central; jvm/tiered.py). For each run: the exit code and
verdict, the acknowledged writes and those lost, the acknowledged writes that only the remote tier held right after the
run (below every replica's first local segment; the final read got each of them, or the run is INVALID), the tier's
segments of the topic, the remote-store fault's refused and slowed operations, the longest unavailability of a
partition, and the acknowledgement latency during each fault against before it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import command_line, failsafe_cli, failsafe_run, write_summary  # noqa: E402
from failsafe.cluster import tiered  # noqa: E402
from failsafe.cluster.state import ClusterDir  # noqa: E402
from failsafe.jvm.tiered import store_version  # noqa: E402

RUN_TIMEOUT_S = 600
VERSIONS = ("4.3.1", "4.4.0")
SCENARIOS = (
    "tiered-leader-killed-during-copy",
    "tiered-leadership-moves-during-retention",
    "tiered-remote-store-failing",
    "tiered-remote-store-slow",
)


def one_run(root: Path, scenario: str, keep: Path | None) -> dict:
    code, results, history, error = failsafe_run(root, (scenario,), RUN_TIMEOUT_S, keep)
    if results is None:
        return {"exit": code, "error": error}
    spec = ClusterDir(root).load().spec
    firsts = tiered.local_first_offsets(root, spec)
    starts = {p: min(by_broker.values()) for p, by_broker in firsts.items()}
    held = tiered.remote_segments(root, tiered.topic_ids(root, spec))
    acked = [(op["partition"], op["offset"]) for op in history if op["f"] == "send" and op["type"] == "ok"]
    counts = results["checkers"].get("durability", {}).get("counts", {})
    availability = results["checkers"].get("availability", {})
    stops = [op for op in history if op["f"] == "fault-stop" and op.get("fault") == "remote-store" and op.get("ok")]
    return {
        "exit": code,
        "verdict": results.get("verdict"),
        "acknowledged": len(acked),
        "lost": counts.get("lost"),
        "only_in_tier": sum(1 for p, o in acked if o < starts.get(f"tiered-{p}", 0)),
        "tier_segments": {p: h["segments"] for p, h in sorted(held.items()) if p.startswith("tiered-")},
        # Which replica holds what on its own disk: who keeps old local segments (a restarted one?).
        "local_first_offset_by_broker": {p: firsts[p] for p in sorted(firsts) if p.startswith("tiered-")},
        "store_faults": [
            {k: (op.get("details") or {}).get(k) for k in ("refused", "slowed_ops", "waited_s")} for op in stops
        ],
        "max_unavailable_ms": max(
            (f.get("max_unavailable_ms") or 0 for f in availability.get("faults", [])), default=0
        ),
        "ack_latency_before_ms": results["measurements"].get("ack_latency_before_ms"),
        "ack_latency_during_ms": [f.get("ack_latency_ms") for f in results["measurements"].get("faults", [])],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-tiered"))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep-runs", type=Path, help="keep every run's directory here")
    args = parser.parse_args()
    releases: dict = {}
    for version in VERSIONS:
        root = args.dir / version
        cells: dict = {name: [] for name in SCENARIOS}
        failed = failsafe_cli(root, "up", "--brokers", "3", "--tiered-storage", "--kafka-version", version)
        if failed:  # recorded, and the next release is still measured
            print(failed, file=sys.stderr, flush=True)
            releases[version] = {"remote_storage_manager_of": store_version(version), "error": failed}
            failsafe_cli(root, "clean")
            continue
        try:
            for n in range(args.runs):  # alternately: every scenario once, then again
                for name in SCENARIOS:
                    keep = args.keep_runs / version if args.keep_runs else None
                    cells[name].append(one_run(root, name, keep))
                    print(f"{version} {name} run {n}: {json.dumps(cells[name][-1])[:300]}", file=sys.stderr, flush=True)
        finally:
            failsafe_cli(root, "down")
            failsafe_cli(root, "clean")
        releases[version] = {"remote_storage_manager_of": store_version(version), "scenarios": cells}
    flags = {"dir": args.dir, "runs": args.runs, "keep_runs": args.keep_runs, "out": args.out}
    write_summary(
        {
            "what": "tiered storage (LocalTieredStorage on a disk layer of its own) under faults, N runs a scenario, "
            "alternately on one cluster of 3 brokers and 1 controller per Kafka release",
            "command": command_line("tiered_storage.py", **flags),
            "releases": releases,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
