"""Tables of docs/protocol-faults.md: what the protocol proxies cost."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, num, source, table, verdicts_of


def t_proxy(root: Path) -> str:
    rel = "docs/benchmarks/proxy.json"
    d = load(root, rel)
    rows = [
        [
            str(r["round"] + 1),
            f"{num(r['around']['records_per_s'])} rec/s ({r['around']['p99_ms']:.0f} ms p99)",
            f"{num(r['through']['records_per_s'])} rec/s ({r['through']['p99_ms']:.0f} ms p99)",
            f"{r['through']['records_per_s'] / r['around']['records_per_s']:.2f}",
        ]
        for r in d["rounds"]
    ]
    rows.append(["**median**", "", "", f"**{d['ratio_median']:.2f}** (target {d['target_ratio']:.1f})"])
    header = ["round", "around the proxies (DIRECT)", "through the proxies", "ratio"]
    return table(header, rows) + source(root, rel)


def t_protocol_runs(root: Path) -> str:
    rel = "docs/benchmarks/protocol-runs.json"
    d = load(root, rel)
    rows = []
    for name, cell in d["cells"].items():
        runs = cell["runs"]
        taken: dict[str, list[int]] = {}
        for r in runs:
            for key, n in r.get("taken", {}).items():
                taken.setdefault(key, []).append(n)
        took = "; ".join(f"{key}: {'/'.join(map(str, ns))}" for key, ns in sorted(taken.items())) or "none"
        writers = sorted({w for r in runs for w in r.get("duplicate_writers", [])}) or ["none"]
        counted = [r.get("duplicates") for r in runs]
        duplicates = (
            "-" if all(c is None for c in counted) else "/".join(map(str, counted)) + f" ({', '.join(writers)})"
        )
        txns = [r["transactions"] for r in runs if r.get("transactions")]
        anomalies = (
            "/".join(
                str(sum(t.get(k) or 0 for k in ("aborted-read", "lost-write", "torn-transaction", "duplicate")))
                for t in txns
            )
            if txns
            else "-"
        )
        unknown = "/".join(str(t.get("unknown")) for t in txns) if txns else "-"
        rows.append(
            [
                name,
                str(len(runs)),
                verdicts_of(runs),
                took,
                duplicates,
                unknown,
                anomalies,
            ]
        )
    header = [
        "scenario",
        "runs",
        "verdicts",
        "requests taken, per run (fault, API, client)",
        "duplicates per run (writers)",
        "transactions unknown",
        "transaction anomalies",
    ]
    return table(header, rows) + source(root, rel)


def t_txn_gap(root: Path) -> str:
    rel = "docs/benchmarks/txn-gap.json"
    d = load(root, rel)
    rows = []
    for name, cell in d["cells"].items():
        runs = cell["runs"]
        with_anomaly = [r for r in runs if r.get("anomalies")]
        kinds: dict[str, list[int]] = {}
        for r in runs:
            for key, n in r.get("anomalies", {}).items():
                kinds.setdefault(key, []).append(n)
        held = "/".join(str(r.get("held", "-")) for r in runs)
        answered: dict[str, int] = {}
        for r in runs:
            for error in r.get("late_answers") or ["none"]:
                answered[str(error)] = answered.get(str(error), 0) + 1
        unknown = "/".join(str(r.get("txn_outcomes", {}).get("info", 0)) for r in runs)
        rows.append(
            [
                name,
                str(len(runs)),
                verdicts_of(runs),
                held,
                ", ".join(f"{e} {n}" for e, n in sorted(answered.items(), key=lambda kv: -kv[1])),
                unknown,
                f"{len(with_anomaly)} of {len(runs)}",
                "; ".join(f"{k}: {len(ns)} runs ({'/'.join(map(str, ns))})" for k, ns in sorted(kinds.items()))
                or "none",
            ]
        )
    header = [
        "cell",
        "runs",
        "verdicts",
        "EndTxn held, per run",
        "the late EndTxn answered (runs)",
        "commits unknown, per run",
        "runs with an anomaly",
        "anomalies (runs, count per run)",
    ]
    return table(header, rows) + source(root, rel)
