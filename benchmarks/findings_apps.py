"""The app findings' runs judged again by today's checkers, and what their verdicts do not say: read from the runs of
findings.sh apps-python and apps-streams, into docs/findings/LABEL.json.

    .venv/bin/python benchmarks/findings_apps.py --runs /tmp/failsafe-findings/runs app-python-eos app-python-naive

For each LABEL: 'failsafe check' of every run under RUNS/LABEL (the checkers of this commit: a run is judged by the
code the docs describe), the file's statistics rebuilt from those results as 'failsafe run --repeat' builds them (its
overrides kept), and per run:

    app_exits    the app instances that exited by themselves (the app's own crash, not a fault), with their error
    input_duplicates  runs whose input held an acknowledged record more than once (the input producer's retry), each
                 copy owed an output
    hung         the app instances that were still running when the run stopped them after its drain and did not stop
                 within stop_timeout_s of a SIGTERM (killed: exit code -9), with whether the drain had finished
    pace         per run: the app checker's verdict, violations, its count of inputs not in the output (lost when
                 decided, unprocessed when the run is UNKNOWN) and its reason; and its measure of the run: its longest
                 output pause while input waited (ms), with the faults in force during it, and the input-to-output
                 latency p50/p99 (ms; each contract only)
    set_aside    runs in which an input partition had records and none of them reached the output, though the app's
                 group had committed it to its end: the group kept an earlier run's committed offsets, so the app
                 skipped that input. failsafe's setup missed the group on a cluster just restarted (a coordinator
                 still loading left it out of ListConsumerGroups; fixed with this script's column): the app is not
                 to blame, and these runs are listed here and not counted
    kill_phase   (app-python-naive) where in its 5 s auto-commit interval the killed instance's kill landed: the time
                 from its start (its app-start) to its kill (its app-exit), modulo the interval (librdkafka's timer runs
                 from its consumer's creation, a little after the start), beside the duplicates the run had
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from failsafe.checkers.app.each import identity_of  # noqa: E402
from failsafe.history.load import load_history  # noqa: E402
from failsafe.scenarios.store.repeat import aggregate  # noqa: E402

OUT = ROOT / "docs" / "findings"
INTERVAL_S = 5.0
NAIVE = "app-python-naive"
KILLED = "naive-0"


def _ops(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def app_exits(run_dir: Path) -> dict:
    exits = [o for o in _ops(run_dir) if o["f"] == "app-exit" and o.get("ok") is False]
    return {
        "run": run_dir.name,
        "exited": [{"process": o["process"], "error": (o.get("error") or "")[-240:]} for o in exits],
    }


def _drained(run_dir: Path) -> bool:
    """Whether the app's group had committed all its input to its end when the drain ended."""
    return any(o["f"] == "drained" and o.get("process") == "apps" and o.get("ok") for o in _ops(run_dir))


def hung(run_dir: Path) -> dict:
    ops = _ops(run_dir)
    drained = next((o for o in ops if o["f"] == "drained"), None)
    after = [o for o in ops if drained is not None and o["time_ns"] > drained["time_ns"]]
    killed = [o["process"] for o in after if o["f"] == "app-exit" and o.get("exit_code") == -9]
    return {"run": run_dir.name, "drained": None if drained is None else drained.get("ok"), "killed_at_stop": killed}


def pace(run_dir: Path, results: dict) -> dict:
    measured = results["checkers"]["app"].get("pace") or {}
    longest = max(measured.get("pauses") or [], key=lambda p: p["ms"], default=None)
    latency = measured.get("latency-ms") or {}
    app = results["checkers"]["app"]
    return {
        "run": run_dir.name,
        "verdict": app.get("valid"),
        "violations": app.get("violations") or [],
        # An UNKNOWN run's inputs not in the output are unprocessed (the app had not finished), not judged lost.
        "lost": app["counts"]["lost"],
        "reason": app.get("reason"),
        "longest_pause_ms": measured.get("longest-pause-ms"),
        "longest_pause_faults": longest["faults"] if longest else [],
        "latency_p50_ms": latency.get("p50"),
        "latency_p99_ms": latency.get("p99"),
    }


def kill_phase(run_dir: Path, results: dict) -> dict:
    ops = _ops(run_dir)
    start = next(o["time_ns"] for o in ops if o["f"] == "app-start" and o["process"] == KILLED)
    killed = next(o["time_ns"] for o in ops if o["f"] == "app-exit" and o["process"] == KILLED)
    counts = results["checkers"]["app"]["counts"]
    since_start = (killed - start) / 1e9
    return {
        "run": run_dir.name,
        "killed_after_start_s": round(since_start, 2),
        "phase_s": round(since_start % INTERVAL_S, 2),
        "duplicate": counts["duplicate"],
        "lost": counts["lost"],
    }


def skipped_partitions(run_dir: Path) -> list[str]:
    """The input partitions with records of which none reached the output (set_aside above)."""
    scenario = json.loads((run_dir / "scenario.json").read_text())
    inputs = sorted({t for a in scenario["apps"] for t in a["input"]})
    outputs = sorted({t for a in scenario["apps"] for t in a["output"]})
    log = load_history(run_dir / "history.jsonl").log
    identity = (scenario.get("contract") or {}).get("identity", "value")
    carried = log.filter(pl.col("topic").is_in(outputs)).select(identity_of(identity).alias("id"))["id"].drop_nulls()
    per_partition = (
        log.filter(pl.col("topic").is_in(inputs))
        .group_by("topic", "partition")
        .agg(pl.col("value").is_in(carried.implode()).any().alias("reached"))
        .filter(~pl.col("reached"))
        .sort("topic", "partition")
    )
    return [f"{t}-{n}" for t, n, _ in per_partition.rows()]


def recheck(run_dir: Path) -> dict:
    """'failsafe check' of the run (it rewrites results.json), and the results it wrote."""
    subprocess.run([sys.executable, "-m", "failsafe.cli.main", "check", str(run_dir)], capture_output=True, check=False)
    return json.loads((run_dir / "results.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, required=True, help="findings.sh's DIR/runs")
    parser.add_argument("--out", type=Path, default=OUT, help="where LABEL.json is (docs/findings)")
    parser.add_argument("labels", nargs="+")
    args = parser.parse_args()
    for label in args.labels:
        stored = args.out / f"{label}.json"
        before = json.loads(stored.read_text())
        run_dirs = sorted(d for d in (args.runs / label).glob("*/*/") if (d / "history.jsonl").exists())
        judged, set_aside = [], []
        for d in run_dirs:
            skipped = skipped_partitions(d)
            if skipped and _drained(d):
                set_aside.append({"run": d.name, "partitions_never_processed": skipped})
            else:
                judged.append((d, recheck(d)))
        stats = aggregate(before["scenario"], [(str(d), r) for d, r in judged], before.get("overrides") or ())
        stats["app_exits"] = [e for e in (app_exits(d) for d, _ in judged) if e["exited"]]
        stats["input_duplicates"] = [
            {"run": d.name, "values": r["checkers"]["app"]["counts"].get("input-duplicates", 0)}
            for d, r in judged
            if r["checkers"]["app"]["counts"].get("input-duplicates")
        ]
        stats["hung"] = [h for h in (hung(d) for d, _ in judged) if h["killed_at_stop"]]
        stats["pace"] = [pace(d, r) for d, r in judged]
        stats["set_aside"] = set_aside
        if label == NAIVE:
            records = sorted((kill_phase(d, r) for d, r in judged), key=lambda r: r["phase_s"])
            stats["kill_phase"] = {"interval_s": INTERVAL_S, "runs": len(records), "records": records}
        stored.write_text(json.dumps(stats, indent=2, default=str) + "\n")
        print(
            label,
            json.dumps(
                {
                    "runs": stats["runs"],
                    "verdicts": stats["verdicts"],
                    "exits": len(stats["app_exits"]),
                    "set_aside": [a["run"] for a in set_aside],
                }
            ),
        )


if __name__ == "__main__":
    main()
