"""What a transactional producer is told after its coordinator was frozen: the runs of `findings.sh txn-fence` read one
by one.

A campaign run (txn-kafka-java-tv2, seed 2913, run 0) had a transactional producer told it was fenced with no other
instance of its transactional.id anywhere: the broker coordinating it was paused 14 s, past its 10 s
transaction.timeout.ms. This reads every run directory of each stored configuration (docs/findings/LABEL.json, made by
findings.sh from failsafe run --repeat of txn-coordinator-pause: writer-0's coordinator frozen 15 s or 5 s, librdkafka
or Kafka's Java client, transaction.timeout.ms 10 s or 60 s, transaction.version 2) and records, per run, the errors
writer-0's transactions ended with (the history's txn ops), which words of them its client log has, whether it
stopped, and when it committed again. The scenario starts no other writer-0. The counts go into the stored file
under "txn_fence".

    .venv/bin/python benchmarks/findings_txn_fence.py --runs /tmp/failsafe-findings/runs \
        txn-pause-15s-librdkafka txn-pause-5s-librdkafka txn-pause-15s-java txn-pause-5s-java \
        txn-pause-15s-timeout-60s-librdkafka txn-pause-15s-timeout-60s-java
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.findings_runs import annotate_stored  # noqa: E402

WRITER = "writer-0"
# The names a fence goes by in the history: librdkafka's own _FENCED (its fatal error, also what it makes of
# INVALID_PRODUCER_EPOCH in EndTxn), recorded as FENCED (workloads/outcomes.error_name drops the leading underscore),
# and Kafka's PRODUCER_FENCED (the Java client's ProducerFencedException).
FENCED = {"FENCED", "_FENCED", "PRODUCER_FENCED"}
EPOCH = "INVALID_PRODUCER_EPOCH"
# What the clients' logs say when the coordinator answers with a stale epoch.
LOG_WORDS = ("INVALID_PRODUCER_EPOCH", "InvalidProducerEpoch", "PRODUCER_FENCED", "ProducerFenced", "_FENCED", "fenced")


def ops(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if line.strip()]


def record(run_dir: Path) -> dict:
    results = json.loads((run_dir / "results.json").read_text())
    history = ops(run_dir)
    pauses = [o for o in history if o.get("f") in ("fault-start", "fault-stop") and o.get("fault") == "pause"]
    start = next((o["time_ns"] for o in pauses if o["f"] == "fault-start"), None)
    stop = next((o["time_ns"] for o in pauses if o["f"] == "fault-stop"), None)
    ended = [o for o in history if o.get("process") == WRITER and o.get("f") == "txn" and o.get("type") != "invoke"]
    errors = Counter(o["error"] for o in ended if o.get("error"))
    outcomes = Counter(o["type"] for o in ended)
    closes = [o for o in history if o.get("process") == WRITER and o.get("f") in ("close", "crash")]
    log_path = run_dir / "logs" / f"{WRITER}.client.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    transactions = (results.get("checkers") or {}).get("transactions") or {}
    faults = transactions.get("faults") or []
    first_new = next(
        (f["writers"].get(WRITER, {}).get("first_new_commit_ms") for f in faults if f.get("fault") == "pause"), None
    )
    return {
        "dir": run_dir.name,
        "verdict": results.get("verdict"),
        "pause_s": None if start is None or stop is None else round((stop - start) / 1e9, 1),
        "errors": dict(sorted(errors.items())),
        "outcomes": dict(sorted(outcomes.items())),
        "told_fenced": sum(n for e, n in errors.items() if e in FENCED),
        "told_invalid_epoch": errors.get(EPOCH, 0),
        "log_lines": {w: log.count(w) for w in LOG_WORDS if w in log},
        "stopped": [o.get("error") for o in closes if o.get("error")],
        "first_new_commit_ms": first_new,
        "violations": transactions.get("violations") or [],
    }


def summary(records: list[dict]) -> dict:
    waits = [r["first_new_commit_ms"] for r in records if r["first_new_commit_ms"] is not None]
    errors: Counter = Counter()
    for r in records:
        errors.update(r["errors"])
    return {
        "runs": len(records),
        "verdicts": dict(Counter(r["verdict"] for r in records)),
        "pause_s_median": statistics.median([r["pause_s"] for r in records if r["pause_s"] is not None] or [0]),
        "runs_told_fenced": sum(r["told_fenced"] > 0 for r in records),
        "runs_told_invalid_epoch": sum(r["told_invalid_epoch"] > 0 for r in records),
        "runs_where_writer_stopped": sum(bool(r["stopped"]) for r in records),
        "runs_committing_again": len(waits),
        "first_new_commit_ms_median": statistics.median(waits) if waits else None,
        "errors": dict(sorted(errors.items())),
        "unknown_outcomes": sum(r["outcomes"].get("info", 0) for r in records),
        "records": records,
    }


def main() -> None:
    annotate_stored(__doc__, "txn_fence", record, summary)


if __name__ == "__main__":
    main()
