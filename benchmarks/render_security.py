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
    d = load(root, RAW_FILE)
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
        "lost",
        "partitions measured",
        "unavailable p50 ms",
        "unavailable p95 ms",
        "new leader to first ack p50 s",
        "p95 s",
        "detection p50 s",
    ]
    return table(header, rows) + source(root, RAW_FILE)
