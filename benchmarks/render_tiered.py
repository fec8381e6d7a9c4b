"""The table of docs/tiered-storage.md: each tiered scenario on Kafka 4.3.1 and 4.4.0."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.render_base import load, source, table

REL = "docs/benchmarks/tiered-storage.json"


def _each(values: list) -> str:
    return ", ".join("—" if v is None else str(v) for v in values) or "—"


def _store(runs: list[dict]) -> str:
    """What the remote store refused or slowed while its faults were in force, each run."""
    said = []
    for r in runs:
        faults = r.get("store_faults") or []
        if not faults:
            continue
        refused = sum(n for f in faults for n in (f.get("refused") or {}).values())
        slowed = sum(f.get("slowed_ops") or 0 for f in faults)
        said.append(f"{refused} refused" if refused else f"{slowed} slowed")
    return ", ".join(said) or "—"


def _p99(latency: dict | None) -> float | None:
    return None if not latency else latency.get("p99")


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def t_tiered(root: Path) -> str:
    d = load(root, REL)
    rows = []
    for version, release in d["releases"].items():
        store = release["remote_storage_manager_of"]
        if "error" in release:  # its cluster did not start
            rows.append([version, "—", release["error"], *["—"] * 7])
        for name, runs in release.get("scenarios", {}).items():
            done = [r for r in runs if "verdict" in r]
            # Each run: p99 before its first fault / the highest p99 during one of its faults.
            latency = [
                f"{_ms(_p99(r.get('ack_latency_before_ms')))} / "
                f"{_ms(max((_p99(f) or 0 for f in r.get('ack_latency_during_ms') or []), default=None))}"
                for r in done
            ]
            unavailable = [r["max_unavailable_ms"] for r in done if r.get("max_unavailable_ms") is not None]
            rows.append(
                [
                    version + ("" if store == version else f" (store of {store})"),
                    name,
                    _each([r.get("verdict") or f"exit {r.get('exit')}" for r in runs]),
                    _each([r.get("acknowledged") for r in done]),
                    _each([r.get("lost") for r in done]),
                    _each([r.get("only_in_tier") for r in done]),
                    _each([(r.get("tier_segments") or {}).get("tiered-0") for r in done]),
                    _store(done),
                    f"{statistics.median(unavailable) / 1000:.1f}" if unavailable else "—",
                    ", ".join(latency) or "—",
                ]
            )
    header = [
        "Kafka",
        "scenario",
        "verdict, each run",
        "acknowledged",
        "lost",
        "acknowledged, only in the tier after the run",
        "tier segments of tiered-0",
        "remote store (refused or slowed operations)",
        "longest unavailability, s (median)",
        "acks p99 ms, before the first fault / during a fault (the highest), each run",
    ]
    return table(header, rows) + source(root, REL)
