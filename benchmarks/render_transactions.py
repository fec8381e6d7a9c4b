"""The transactions tables in docs/transactions.md (render_docs.py renders and checks them)."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.render_base import RenderError, command_of, load, num, source, table

THROUGHPUT = "docs/benchmarks/transactions-throughput.json"
FAILOVER = "docs/benchmarks/transactions-failover.json"
CAMPAIGNS = "docs/benchmarks/campaign-txn-*.json"
# What the transactions checker can report (checkers/txn/transactions.py), each shown even at 0: a count of 0 is a
# result.
TXN_ANOMALIES = (
    "aborted-read",
    "precommitted-read",
    "lost-write",
    "torn-transaction",
    "intermediate-read",
    "duplicate",
    "G1c",
    "G0",
)


def t_transactions_throughput(root: Path) -> str:
    d = load(root, THROUGHPUT)
    rows = []
    for r in d["rounds"]:
        k, f = r["perf_test"], r["failsafe"]
        rows.append(
            [
                str(r["transaction_version"]),
                str(r["round"] + 1),
                f"{k['transactions_per_s']:.1f} ({k['records_per_transaction']:.0f} rec/txn)",
                f"{f['transactions_per_s']:.1f} ({f['records_per_transaction']} rec/txn)",
                f"{r['ratio']:.2f}",
            ]
        )
    for version, ratio in d["median_ratio_by_transaction_version"].items():
        rows.append([f"**{version}**", "median", "", "", f"**{ratio:.2f}**"])
    return table(
        [
            "transaction.version",
            "round",
            "producer-perf-test (Java), committed txn/s",
            "failsafe writer (librdkafka), committed txn/s",
            "ratio",
        ],
        rows,
    ) + source(root, THROUGHPUT)


def t_transactions_epochs(root: Path) -> str:
    d = load(root, THROUGHPUT)
    rows = []
    for r in d["rounds"]:
        k, f = r["perf_test"], r["failsafe"]
        rows.append(
            [
                str(r["transaction_version"]),
                str(r["round"] + 1),
                f"{num(k['transactions'])} → epoch {k['epoch_after']}",
                f"{num(sum(f['outcomes'].values()))} → epoch {f['epoch_after']}",
            ]
        )
    return table(
        [
            "transaction.version",
            "round",
            "Java client 4.3.1: transactions → producer epoch after them",
            "librdkafka 2.16.0: transactions → producer epoch after them",
        ],
        rows,
    ) + source(root, THROUGHPUT)


def t_transactions_failover(root: Path) -> str:
    d = load(root, FAILOVER)
    rows = []
    for s in d["summary"]:
        runs = [
            r for r in d["rows"] if r["client"] == s["client"] and r["transaction_version"] == s["transaction_version"]
        ]
        anomalies = sorted(
            {
                k
                for r in runs
                for k in r["counts"]
                if k
                in (
                    "aborted-read",
                    "lost-write",
                    "torn-transaction",
                    "precommitted-read",
                    "intermediate-read",
                    "duplicate",
                    "G1c",
                )
            }
        )
        firsts = [r["first_new_commit_ms"] for r in runs if r.get("first_new_commit_ms") is not None]
        gaps = [r["longest_gap_ms"] for r in runs if r.get("longest_gap_ms") is not None]
        rows.append(
            [
                s["client"],
                str(s["transaction_version"]),
                str(s["runs"]),
                ", ".join(f"{v} {n}" for v, n in sorted(s["verdicts"].items())),
                f"{statistics.median(firsts) / 1000:.1f} (max {max(firsts) / 1000:.1f})" if firsts else "—",
                f"{statistics.median(gaps) / 1000:.1f} (max {max(gaps) / 1000:.1f})" if gaps else "—",
                f"{sum(r['counts'].get('unknown', 0) for r in runs)} of "
                f"{sum(r['counts'].get('txns', 0) for r in runs)}",
                ", ".join(anomalies) or "none",
            ]
        )
    return table(
        [
            "client",
            "transaction.version",
            "runs",
            "verdicts",
            "kill → first commit of a new transaction, s (median)",
            "longest time without a commit, s (median)",
            "transactions of unknown outcome, all runs",
            "anomalies seen",
        ],
        rows,
    ) + source(root, FAILOVER)


def t_transactions_campaigns(root: Path) -> str:
    rels = sorted(str(p.relative_to(root)) for p in root.glob(CAMPAIGNS))
    if not rels:
        raise RenderError(f"no {CAMPAIGNS}")
    rows = []
    for rel in rels:
        d = load(root, rel)
        c, s = d["campaign"], d["summary"]
        counts = {a: sum(r["anomalies"].get(f"transactions.{a}", 0) for r in d["runs"]) for a in TXN_ANOMALIES}
        showing = {a: sum(bool(r["anomalies"].get(f"transactions.{a}")) for r in d["runs"]) for a in TXN_ANOMALIES}
        shown = {f"transactions.{a}" for a in TXN_ANOMALIES}
        others = sorted({k for r in d["runs"] for k in r["anomalies"] if k not in shown})
        started = [f for r in d["runs"] for f in r["faults"] if f.get("started")]
        node_faults = [f for f in started if f["fault"] in ("kill", "pause", "restart")]
        at_coordinator = sum("coordinator" in str(f.get("role") or "") for f in node_faults)
        faults = (
            f"{len(node_faults)} kill, pause or restart of a node ({at_coordinator} at a transaction coordinator), "
            + ", ".join(
                f"{sum(f['fault'] == name for f in started)} {name}"
                for name in ("kill-txn-client", "zombie-txn-client")
            )
        )
        rows.append(
            [
                f"`{c['workload']}`",
                f"{s['runs_done']}/{c['runs']}",
                faults,
                ", ".join(f"{v} {n}" for v, n in s["verdicts"].items() if n),
                str(s["lost_acknowledged"]),
                *(f"{num(counts[a])} ({showing[a]})" if counts[a] else "0" for a in TXN_ANOMALIES),
                ", ".join(f"`{k}` {sum(bool(r['anomalies'].get(k)) for r in d['runs'])}" for k in others) or "none",
            ]
        )
    header = [
        "campaign (seed 2913)",
        "runs",
        "faults started",
        "verdicts",
        "committed writes lost",
        *(f"{a} (runs)" for a in TXN_ANOMALIES),
        "other anomalies (runs)",
    ]
    return (
        table(header, rows)
        + "\n\nRendered from "
        + ", ".join(f"`{r}`" for r in rels)
        + f"; made by `{command_of(root, rels[0])}`."
    )
