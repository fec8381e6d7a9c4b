"""The transactions tables in docs/transactions.md (render_docs.py renders and checks them)."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.render_base import load, num, source, table

THROUGHPUT = "docs/benchmarks/transactions-throughput.json"
FAILOVER = "docs/benchmarks/transactions-failover.json"


def t_transactions_throughput(root: Path) -> str:
    d = load(root, THROUGHPUT)
    rows = []
    for r in d["rounds"]:
        k, f = r["perf_test"], r["failsafe"]
        rows.append([str(r["transaction_version"]), str(r["round"] + 1), f"{k['transactions_per_s']:.1f} ({k['records_per_transaction']:.0f} rec/txn)",
                     f"{f['transactions_per_s']:.1f} ({f['records_per_transaction']} rec/txn)", f"{r['ratio']:.2f}"])
    for version, ratio in d["median_ratio_by_transaction_version"].items():
        rows.append([f"**{version}**", "median", "", "", f"**{ratio:.2f}**"])
    return table(["transaction.version", "round", "producer-perf-test (Java), committed txn/s", "failsafe writer (librdkafka), committed txn/s",
                  "ratio"], rows) + source(root, THROUGHPUT)


def t_transactions_epochs(root: Path) -> str:
    d = load(root, THROUGHPUT)
    rows = []
    for r in d["rounds"]:
        k, f = r["perf_test"], r["failsafe"]
        rows.append([str(r["transaction_version"]), str(r["round"] + 1), f"{num(k['transactions'])} → epoch {k['epoch_after']}",
                     f"{num(sum(f['outcomes'].values()))} → epoch {f['epoch_after']}"])
    return table(["transaction.version", "round", "Java client 4.3.1: transactions → producer epoch after them",
                  "librdkafka 2.16.0: transactions → producer epoch after them"], rows) + source(root, THROUGHPUT)


def t_transactions_failover(root: Path) -> str:
    d = load(root, FAILOVER)
    rows = []
    for s in d["summary"]:
        runs = [r for r in d["rows"] if r["client"] == s["client"] and r["transaction_version"] == s["transaction_version"]]
        anomalies = sorted({k for r in runs for k in r["counts"] if k in ("aborted-read", "lost-write", "torn-transaction", "precommitted-read",
                                                                             "intermediate-read", "duplicate", "G1c")})
        firsts = [r["first_new_commit_ms"] for r in runs if r.get("first_new_commit_ms") is not None]
        gaps = [r["longest_gap_ms"] for r in runs if r.get("longest_gap_ms") is not None]
        rows.append([s["client"], str(s["transaction_version"]), str(s["runs"]), ", ".join(f"{v} {n}" for v, n in sorted(s["verdicts"].items())),
                     f"{statistics.median(firsts) / 1000:.1f} (max {max(firsts) / 1000:.1f})" if firsts else "—",
                     f"{statistics.median(gaps) / 1000:.1f} (max {max(gaps) / 1000:.1f})" if gaps else "—",
                     f"{sum(r['counts'].get('unknown', 0) for r in runs)} of {sum(r['counts'].get('txns', 0) for r in runs)}",
                     ", ".join(anomalies) or "none"])
    return table(["client", "transaction.version", "runs", "verdicts", "kill → first commit of a new transaction, s (median)",
                  "longest time without a commit, s (median)", "transactions of unknown outcome, all runs", "anomalies seen"],
                 rows) + source(root, FAILOVER)

