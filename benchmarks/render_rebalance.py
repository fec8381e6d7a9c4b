"""The rebalance protocols side by side in docs/share-groups.md (render_docs.py renders and checks them)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, source, table

REBALANCE_3 = "docs/benchmarks/rebalance-3.json"
REBALANCE_30 = "docs/benchmarks/rebalance-30.json"
REBALANCE_900 = "docs/benchmarks/rebalance-900.json"
FAULT_WORDS = {
    "killed": "member killed (kill -9)",
    "closed": "member closed",
    "paused": "member frozen 16 s (SIGSTOP)",
    "coordinator": "group coordinator's broker killed 10 s",
    "joining": "member joining (restarted after 8 s)",
    "rolling": "rolling restart of 3 members, 12 s apart, each after the group settled (6 rebalances)",
}


def _ms(spread: dict | None, key: str) -> str:
    return "—" if not spread else f"{spread[key] / 1000:.1f}"


def _verdicts(verdicts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(verdicts.items()))


def t_rebalance_protocols(root: Path, rel: str = REBALANCE_3) -> str:
    d = load(root, rel)
    rows = []
    for c in sorted(d["cells"], key=lambda c: (list(FAULT_WORDS).index(c["fault"]), c["client"], c["protocol"])):
        rows.append(
            [
                FAULT_WORDS[c["fault"]],
                c["client"],
                c["protocol"],
                str(c["runs"]),
                _verdicts(c["verdicts"]),
                f"{_ms(c['pause_ms'], 'p50')} / {_ms(c['pause_ms'], 'p95')}",
                f"{_ms(c['moved_gap_ms'], 'p50')} / {_ms(c['moved_gap_ms'], 'p95')}",
                f"{c['moved_per_run']:.1f}",
                f"{c['survivor_partitions_revoked_per_run']:.1f} of {c['survivor_partitions_per_run']:.1f}",
                f"{_ms(c['kept_gap_ms'], 'p50')} / {_ms(c['kept_gap_ms'], 'p95')}",
                f"{c['reread_across_rebalance_per_run']:.0f}",
                str(c["lost"]),
            ]
        )
    return table(
        [
            "fault",
            "client",
            "protocol",
            "runs",
            "verdicts",
            "until every partition owned again, s (p50 / p95)",
            "moved partitions' processing gap, s (p50 / p95)",
            "partitions moved per run",
            "survivors' partitions revoked per run",
            "survivors' partitions' gap, s (p50 / p95)",
            "records re-read by another member per run",
            "acknowledged writes lost",
        ],
        rows,
    ) + source(root, rel)


def t_rebalance_protocols_30(root: Path) -> str:
    return t_rebalance_protocols(root, REBALANCE_30)


def t_rebalance_protocols_900(root: Path) -> str:
    return t_rebalance_protocols(root, REBALANCE_900)


SHARE = "docs/benchmarks/share.json"
SHARE_JAVA = "docs/benchmarks/share-java.json"
SHARE_THROUGHPUT = "docs/benchmarks/share-throughput.json"


def t_share_redelivery_java(root: Path) -> str:
    return t_share_redelivery(root, SHARE_JAVA)


def t_share_redelivery(root: Path, rel: str = SHARE) -> str:
    d = load(root, rel)
    rows = []
    for r in d["redelivery"]:
        after = r["fault_to_redelivery_ms"]
        lock = r["redelivery_delay_ms"].get("lock-expired") or {}
        rows.append(
            [
                r["scenario"],
                r["verdict"],
                str(r["held_at_fault"]),
                str(r["redelivered_to_another"]),
                "—" if not after else f"{after['min'] / 1000:.2f}–{after['max'] / 1000:.2f}",
                "—" if not lock else f"{lock['median'] / 1000:.1f}",
                str(r["counts"].get("redeliveries-holder-stopped", 0)),
                str(r["counts"].get("redeliveries-lock-expired", 0)),
                str(r["counts"].get("accepted-twice", 0)),
                str(r["counts"].get("lost", 0)),
            ]
        )
    return table(
        [
            "scenario",
            "verdict",
            "records the member held",
            "delivered to another member",
            "fault → other member, s (min–max)",
            "acquisition → redelivery, lock-expired, s (median)",
            "redeliveries holder-stopped",
            "redeliveries lock-expired",
            "accepted twice",
            "lost",
        ],
        rows,
    ) + source(root, rel)


def t_share_throughput(root: Path) -> str:
    d = load(root, SHARE_THROUGHPUT)
    rows = [
        [
            str(r["round"] + 1),
            f"{r['kafka']['records_per_s_wall']:,.0f} ({r['kafka']['wall_s']:.1f} s)",
            f"{r['failsafe']['records_per_s_wall']:,.0f} ({r['failsafe']['wall_s']:.1f} s)",
            f"{r['ratio']:.2f}",
        ]
        for r in d["throughput"]
    ]
    return table(
        [
            f"round ({d['records']:,} records of 100 bytes, 3 partitions)",
            "ShareConsumerPerformance (Java), records/s (wall)",
            "failsafe's verifying share consumer (librdkafka), records/s (wall)",
            "ratio",
        ],
        rows,
    ) + source(root, SHARE_THROUGHPUT)
