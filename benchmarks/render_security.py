"""Tables of docs/security.md: `failsafe up` and producer-perf-test per security mode, and broker failover secured
against plaintext (benchmarks/bench_security.py)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, num, source, table

RAW_FILE = "docs/benchmarks/security.json"


def _or_dash(value: object, fmt: str = "{}") -> str:
    return "—" if value is None else fmt.format(value)


def t_security_modes(root: Path) -> str:
    d = load(root, RAW_FILE)
    rows = []
    for m in d["modes"]:
        if "records_per_s" not in m:
            rows.append([m["mode"], _or_dash(m.get("up_s"), "{:.1f} s"), "not measured: " + str(
                m.get("up_error") or m.get("perf_error")
            ), "", "", ""])  # fmt: skip
            continue
        rows.append(
            [
                m["mode"],
                f"{m['up_s']:.1f} s",
                num(m["records_per_s"]),
                f"{m['mb_per_s']:.1f}",
                f"{m['avg_latency_ms']:.0f}",
                _or_dash(m.get("throughput_vs_plaintext"), "{:.2f}"),
            ]
        )
    header = [
        "mode",
        "failsafe up",
        "producer-perf-test records/s",
        "MB/s",
        "avg latency ms",
        "throughput against plaintext",
    ]
    return table(header, rows) + source(root, RAW_FILE)


def t_security_failover(root: Path) -> str:
    return _failover(root, RAW_FILE)


ISOLATION_FILE = "docs/benchmarks/security-isolation.json"


def t_security_isolation(root: Path) -> str:
    # leader-isolated's acks=1 producer may lose what the isolated leader alone acknowledged; its acks=all one may not
    # (an expectation of the scenario's: a run where it lost a write is not VALID).
    return _failover(root, ISOLATION_FILE, lost="lost, all producers (acks=1 may lose)")


def _failover(root: Path, raw_file: str, lost: str = "lost") -> str:
    d = load(root, raw_file)
    rows = []
    for mode, cell in d["failover"].items():
        s = cell["summary"]
        rows.append(
            [
                mode,
                f"{s['valid']} of {s['runs']}",
                str(s["lost"]),
                str(s["partitions"]),
                _or_dash(s["unavailable_p50_ms"], "{:,.0f}"),
                _or_dash(s["unavailable_p95_ms"], "{:,.0f}"),
                _or_dash(s["propagation_p50_s"], "{:.3f}"),
                _or_dash(s["propagation_p95_s"], "{:.3f}"),
                _or_dash(s["detection_p50_s"], "{:.2f}"),
            ]
        )
    header = [
        "listeners",
        "VALID runs",
        lost,
        "partitions measured",
        "unavailable p50 ms",
        "unavailable p95 ms",
        "new leader to first ack p50 s",
        "p95 s",
        "detection p50 s",
    ]
    return table(header, rows) + source(root, raw_file)


RUNS_FILE = "docs/benchmarks/security-runs.json"


def _median(values: list) -> float | None:
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


def _in_force_ms(run: dict) -> list[int]:
    """How long each broker a certificate fault changed took to present the new certificate."""
    return [b["in_force_ms"] for b in run.get("details", {}).get("brokers", {}).values() if "in_force_ms" in b]


def _back_ms(run: dict) -> list[int]:
    """How long each took to present its own again after the undo."""
    return list(run.get("stop_details", {}).get("back_ms", {}).values())


def t_security_runs(root: Path) -> str:
    d = load(root, RUNS_FILE)
    rows = []
    for scenario, runs in d["scenarios"].items():
        done = [r for r in runs if "verdict" in r]
        told = sorted({b.get("new_client") for r in done for b in r.get("details", {}).get("brokers", {}).values()})
        rows.append(
            [
                f"`{scenario}`",
                f"{sum(r['verdict'] == 'VALID' for r in done)} of {len(runs)}",
                str(sum(r.get("lost") or 0 for r in done)),
                _or_dash(_median([r.get("refused_sends") for r in done]), "{:,}"),
                _or_dash(_median([r.get("first_refused_ms") for r in done]), "{:,.0f}"),
                _or_dash(_median([r.get("first_ack_after_undo_ms") for r in done]), "{:,.0f}"),
                _or_dash(_median([r.get("longest_partition_stall_ms") for r in done]), "{:,.0f}"),
                _or_dash(_median([v for r in done for v in _in_force_ms(r)]), "{:,}"),
                _or_dash(_median([v for r in done for v in _back_ms(r)]), "{:,}"),
                _or_dash(_median([r.get("restarted_member_assigned_after_undo_ms") for r in done]), "{:,.0f}"),
                "; ".join(t for t in told if t) or "—",
            ]
        )
    header = [
        "scenario",
        "VALID runs",
        "lost",
        "refused sends p50",
        "first refusal after the fault ms p50",
        "first ack after the undo ms p50",
        "longest partition stall ms p50",
        "certificate in force ms p50",
        "own certificate back ms p50",
        "restarted consumer assigned after the undo ms p50",
        "a new client was told",
    ]
    return table(header, rows) + source(root, RUNS_FILE)


PRODUCER_FILE = "docs/benchmarks/security-producer.json"


def t_security_producer(root: Path) -> str:
    d = load(root, PRODUCER_FILE)
    rows = [
        [
            m["mode"],
            str(len(m["rounds"])),
            num(m["perf_test_median"]),
            num(m["failsafe_median"]),
            f"{m['median_ratio']:.2f}",
            " / ".join(f"{r['ratio']:.2f}" for r in m["rounds"]),
        ]
        for m in d["modes"]
    ]
    header = [
        "mode",
        "rounds",
        "producer-perf-test records/s p50",
        "failsafe's producer records/s p50",
        "failsafe against the perf tool p50",
        "each round",
    ]
    return table(header, rows) + source(root, PRODUCER_FILE)
