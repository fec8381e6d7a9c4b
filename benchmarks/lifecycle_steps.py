"""What each step of a rolling upgrade (or its rollback) cost, over N runs: read from the runs' results.json, into the
JSON benchmarks/lifecycle.sh keeps as docs/benchmarks/lifecycle-SCENARIO.json.

    .venv/bin/python benchmarks/lifecycle_steps.py /tmp/failsafe-lifecycle/runs/rolling-upgrade --command "..."

A step is a window of family upgrade (measurements.upgrade.by_step). Steps are grouped by what they do:

    controller roll          a controller that was not the quorum's leader, rolled (controllers roll first)
    active controller roll   the last controller rolled: the one that was active (cluster/topology/upgrade.py)
    broker roll              a broker rolled (a controlled shutdown moves its leaders away first)
    finalize                 kafka-features upgrade --release-version

With --reassign, the runs are of the reassignment scenarios (measurements.reassignment): per scenario, the broker
added, the move (its wall time from --execute until its replicas are in force and in the ISR) and the kill mid-move.

With --quorum, the runs are of a dynamic quorum's scenarios (measurements.quorum_changes), grouped as add-controller,
remove-controller and remove-controller (the active one): each change's wall time, the time to a new active controller
(from the change's start: the tool's launch included), the writes acknowledged during it and how many of the topics
created after it were created.

For each group over every run, the spread (n, median, p95, min, max; nearest rank, as 'failsafe run --repeat')
of the step's wall time, of its client-visible unavailability (availability.faults[].max_unavailable_ms: the longest a
partition the node led took no write) and of the writes acknowledged during it, and the rebalances of the consumer
group seen during it. Per run: verdict, acknowledged writes lost, the upgrade's wall time, and whether it completed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from failsafe.scenarios.store.repeat import spread  # noqa: E402

GROUPS = ("controller roll", "active controller roll", "broker roll", "finalize")


def group_of(step: dict[str, Any], last_controller: int | None) -> str:
    if step["step"] == "finalize":
        return "finalize"
    if step["target"] == "controller":
        return "active controller roll" if step["fault_id"] == last_controller else "controller roll"
    return "broker roll"


def run_steps(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's steps, each with its group, wall time, unavailability, acknowledged writes and rebalances."""
    upgrade = (results.get("measurements") or {}).get("upgrade") or {}
    faults = {f["fault_id"]: f for f in (results.get("checkers") or {}).get("availability", {}).get("faults", [])}
    steps = list(upgrade.get("by_step") or [])
    # A rollback's rolls come in two passes (there, then back): the active controller is the last of each pass.
    out = []
    passes: list[list[dict]] = [[]]
    for step in steps:
        if (
            step["step"] == "roll"
            and step["target"] == "controller"
            and passes[-1]
            and passes[-1][-1]["target"] != "controller"
        ):
            passes.append([])
        passes[-1].append(step)
    for one_pass in passes:
        controllers = [s["fault_id"] for s in one_pass if s["step"] == "roll" and s["target"] == "controller"]
        last = controllers[-1] if controllers else None
        for step in one_pass:
            fault = faults.get(step["fault_id"], {})
            out.append(
                {
                    "group": group_of(step, last),
                    "description": step["description"],
                    "wall_ms": step["wall_ms"],
                    "max_unavailable_ms": fault.get("max_unavailable_ms"),
                    "acknowledged_during": step.get("acknowledged_during"),
                    "rebalances_during": fault.get("rebalances_during"),
                }
            )
    return out


def quorum_steps(results: dict[str, Any]) -> list[dict[str, Any]]:
    changes = ((results.get("measurements") or {}).get("quorum_changes") or {}).get("by_change") or []
    return [
        {
            "group": c["change"] + (" (the active one)" if "(the active one)" in (c["description"] or "") else ""),
            "description": c["description"],
            "completed": c["completed"],
            "wall_ms": c["wall_ms"],
            "new_controller_ms": c["new_controller_ms"],
            "acknowledged_during": c["acknowledged_during"],
            "topic_created_after": c["topic_created_after"],
        }
        for c in changes
    ]


def summarise_quorum(run_dirs: list[Path], command: str) -> dict[str, Any]:
    runs, steps = [], []
    for run_dir in run_dirs:
        results = json.loads((run_dir / "results.json").read_text())
        counts = (results.get("checkers") or {}).get("delivery", {}).get("counts", {})
        mine = quorum_steps(results)
        steps += mine
        runs.append(
            {
                "run_dir": str(run_dir),
                "scenario": run_dir.parent.name,
                "verdict": results.get("verdict"),
                "lost": counts.get("lost"),
                "completed": all(s["completed"] for s in mine),
            }
        )
    groups = sorted({s["group"] for s in steps})

    def values(group: str, field: str) -> list[float]:
        return [s[field] for s in steps if s["group"] == group and s[field] is not None]

    return {
        "what": "each change of a dynamic controller quorum under load: benchmarks/lifecycle_steps.py --quorum",
        "command": command,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "verdicts": {v: sum(1 for r in runs if r["verdict"] == v) for v in sorted({r["verdict"] for r in runs})},
        "changes": {
            group: {
                "n": sum(1 for s in steps if s["group"] == group),
                "completed": sum(1 for s in steps if s["group"] == group and s["completed"]),
                "wall_ms": spread(values(group, "wall_ms")),
                "new_controller_ms": spread(values(group, "new_controller_ms")),
                "acknowledged_during": spread(values(group, "acknowledged_during")),
                "topics_created_after": sum(
                    1 for s in steps if s["group"] == group and s["topic_created_after"] == "ok"
                ),
            }
            for group in groups
        },
    }


def summarise_reassign(run_dirs: list[Path], command: str) -> dict[str, Any]:
    """Runs of the reassignment scenarios (measurements.reassignment): per scenario, the broker's addition and the
    move (wall time, the longest a partition took no write during it, writes acknowledged during it), and the kill
    mid-move's own window where there is one."""
    runs, steps = [], []
    for run_dir in run_dirs:
        results = json.loads((run_dir / "results.json").read_text())
        counts = (results.get("checkers") or {}).get("delivery", {}).get("counts", {})
        moved = (results.get("measurements") or {}).get("reassignment") or {}
        faults = {f["fault_id"]: f for f in (results.get("checkers") or {}).get("availability", {}).get("faults", [])}
        scenario = run_dir.parent.name
        listed = list(moved.get("by_step") or [])
        ids = {s["fault_id"] for s in listed}
        kills = [f for i, f in faults.items() if i not in ids]
        for step in listed:
            stalls = faults.get(step["fault_id"], {}).get("stalls") or {}
            steps.append(
                {
                    "scenario": scenario,
                    "group": step["step"],
                    "completed": step["completed"],
                    "wall_ms": step["wall_ms"],
                    "max_unavailable_ms": faults.get(step["fault_id"], {}).get("max_unavailable_ms"),
                    "acknowledged_during": step["acknowledged_during"],
                    # The longest write stall of a partition the source led, and of one it followed (checkers'
                    # availability.faults[].stalls): a move's cost to partitions whose leader stays.
                    "led_stall_ms": (stalls.get("led") or {}).get("max_stall_ms"),
                    "follower_stall_ms": (stalls.get("follower") or {}).get("max_stall_ms"),
                }
            )
        for kill in kills:
            steps.append(
                {
                    "scenario": scenario,
                    "group": f"{kill.get('fault')} mid-move",
                    "completed": True,
                    "wall_ms": None,
                    "max_unavailable_ms": kill.get("max_unavailable_ms"),
                    "acknowledged_during": None,
                    "led_stall_ms": None,
                    "follower_stall_ms": None,
                }
            )
        runs.append(
            {
                "run_dir": str(run_dir),
                "scenario": scenario,
                "verdict": results.get("verdict"),
                "lost": counts.get("lost"),
                "duplicates": sum(v for k, v in counts.items() if k.startswith("duplicate")),
                "completed": moved.get("completed"),
                "move_ms": moved.get("move_ms"),
            }
        )
    scenarios = sorted({s["scenario"] for s in steps})

    def values(scenario: str, group: str, field: str) -> list[float]:
        return [s[field] for s in steps if (s["scenario"], s["group"]) == (scenario, group) and s[field] is not None]

    return {
        "what": "partitions moved to a new broker under load: benchmarks/lifecycle_steps.py --reassign",
        "command": command,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "verdicts": {v: sum(1 for r in runs if r["verdict"] == v) for v in sorted({r["verdict"] for r in runs})},
        "scenarios": {
            scenario: {
                group: {
                    "n": sum(1 for s in steps if (s["scenario"], s["group"]) == (scenario, group)),
                    "completed": sum(
                        1 for s in steps if (s["scenario"], s["group"]) == (scenario, group) and s["completed"]
                    ),
                    "wall_ms": spread(values(scenario, group, "wall_ms")),
                    "max_unavailable_ms": spread(values(scenario, group, "max_unavailable_ms")),
                    "acknowledged_during": spread(values(scenario, group, "acknowledged_during")),
                    "led_stall_ms": spread(values(scenario, group, "led_stall_ms")),
                    "follower_stall_ms": spread(values(scenario, group, "follower_stall_ms")),
                }
                for group in sorted({s["group"] for s in steps if s["scenario"] == scenario})
            }
            for scenario in scenarios
        },
    }


def summarise_flips(run_dirs: list[Path], command: str) -> dict[str, Any]:
    """Runs with feature levels flipped mid-run (set-feature): each run's verdict, its flips, and what it lost."""
    runs = []
    for run_dir in run_dirs:
        results = json.loads((run_dir / "results.json").read_text())
        counts = (results.get("checkers") or {}).get("delivery", {}).get("counts", {})
        overrides = json.loads((run_dir / "manifest.json").read_text()).get("overrides") or []
        runs.append(
            {
                "run_dir": str(run_dir),
                "scenario": run_dir.parent.name,
                "overrides": overrides,
                "verdict": results.get("verdict"),
                "flips": [
                    {k: f[k] for k in ("description", "completed", "wall_ms")}
                    for f in (results.get("measurements") or {}).get("feature_flips") or []
                ],
                "lost": counts.get("lost"),
                "lost_after_read": counts.get("lost-after-read"),
                # Of "lost": in the log (the final read found them), never read by the consumers.
                "lost_in_log_not_consumed": counts.get("lost-in-log-not-consumed"),
                "lost_committed_writes": ((results.get("checkers") or {}).get("transactions") or {})
                .get("counts", {})
                .get("lost-write"),
            }
        )
    return {
        "what": "runs with a feature level flipped mid-run (set-feature): benchmarks/lifecycle_steps.py --flips",
        "command": command,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
    }


def summarise(run_dirs: list[Path], command: str) -> dict[str, Any]:
    runs, steps = [], []
    for run_dir in run_dirs:
        results = json.loads((run_dir / "results.json").read_text())
        upgrade = (results.get("measurements") or {}).get("upgrade") or {}
        counts = (results.get("checkers") or {}).get("delivery", {}).get("counts", {})
        mine = run_steps(results)
        steps += mine
        runs.append(
            {
                "run_dir": str(run_dir),
                "verdict": results.get("verdict"),
                "lost": counts.get("lost"),
                "duplicates": sum(v for k, v in counts.items() if k.startswith("duplicate")),
                "completed": upgrade.get("completed"),
                "finalized": upgrade.get("finalized"),
                "upgrade_wall_ms": upgrade.get("wall_ms"),
                "max_unavailable_ms": max((s["max_unavailable_ms"] or 0 for s in mine), default=None),
            }
        )

    def values(group: str, field: str) -> list[float]:
        return [s[field] for s in steps if s["group"] == group and s[field] is not None]

    return {
        "what": "each step of a rolling upgrade under load, over every run: benchmarks/lifecycle_steps.py",
        "command": command,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "verdicts": {v: sum(1 for r in runs if r["verdict"] == v) for v in sorted({r["verdict"] for r in runs})},
        "upgrade_wall_ms": spread([r["upgrade_wall_ms"] for r in runs if r["upgrade_wall_ms"] is not None]),
        "steps": {
            group: {
                "n": sum(1 for s in steps if s["group"] == group),
                "wall_ms": spread(values(group, "wall_ms")),
                "max_unavailable_ms": spread(values(group, "max_unavailable_ms")),
                "acknowledged_during": spread(values(group, "acknowledged_during")),
                "rebalances_during": sum(values(group, "rebalances_during")),
            }
            for group in GROUPS
            if any(s["group"] == group for s in steps)
        },
        "by_run": [run_steps(json.loads((d / "results.json").read_text())) for d in run_dirs],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="the scenario's run directories' parent (RUNS/SCENARIO)")
    parser.add_argument("--quorum", action="store_true", help="runs of the dynamic quorum's scenarios")
    parser.add_argument("--flips", action="store_true", help="runs with feature levels flipped mid-run")
    parser.add_argument("--reassign", action="store_true", help="runs of the reassignment scenarios")
    parser.add_argument("--command", required=True, help="the command that made the runs (kept in the JSON)")
    args = parser.parse_args()
    run_dirs = sorted(p.parent for runs in args.runs for p in runs.glob("*/results.json"))
    if not run_dirs:
        print(f"no run under {' '.join(map(str, args.runs))}", file=sys.stderr)
        return 2
    summary = (
        summarise_quorum
        if args.quorum
        else summarise_flips
        if args.flips
        else summarise_reassign
        if args.reassign
        else summarise
    )(run_dirs, args.command)
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
