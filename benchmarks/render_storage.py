"""Tables of docs/disk-faults.md for storage faults: each corrupted file class, and what a slow disk costs."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from benchmarks.render_base import load, source, table

QUOTED = 110  # characters of a broker's line shown


def _message(line: str | None) -> str:
    """A log line without its time stamp and its class, cut short: what Kafka said."""
    if not line:
        return "—"
    text = line.split("] ", 1)[-1]
    text = re.sub(r"\s*\([a-z][\w.]*\)$", "", text)  # the logger's name
    text = re.sub(r"/[^\s\]]*/(kafka-\d+)", r"\1", text)  # a run's directory is no part of what Kafka said
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"


def _refusal(message: str | None) -> str | None:
    """Why a node did not start, as failsafe's start said it: the node's own words, without where its log is."""
    if not message:
        return None
    said = message.split("exited during start-up: ", 1)[-1]
    return "refused to start: " + re.sub(r"\s*\(log: [^)]*\)$", "", said)


def _checkers(runs: list[dict]) -> str:
    """How many runs the checkers judged valid (an unmet scenario expectation is not counted against it)."""
    done = [r for r in runs if "invalid_checkers" in r]
    bad = sum(1 for r in done if r["invalid_checkers"])
    failed = len(runs) - len(done)
    words = [f"{len(done) - bad} valid"] + ([f"{bad} invalid"] if bad else [])
    return ", ".join(words + ([f"{failed} failed"] if failed else []))


def t_corruption(root: Path) -> str:
    rel = "docs/benchmarks/corruption.json"
    d = load(root, rel)
    rows = []
    for name, cell in d["cells"].items():
        runs = [r for r in cell["runs"] if "verdict" in r]
        events = sorted({e for r in runs for e in (r.get("events") or {})})
        restarts = [r["restart_s"] for r in runs if r.get("restart_s") is not None]
        refused = sum(1 for r in runs if r.get("refused_to_start"))
        lost = [r.get("lost") or 0 for r in runs]
        first = next((r.get("first_line") for r in runs if r.get("first_line")), None)
        first = first or next((_refusal(r.get("refused_to_start")) for r in runs if r.get("refused_to_start")), None)
        noticed = sum(1 for r in runs if r.get("detected") or r.get("refused_to_start"))
        rows.append(
            [
                name,
                f"{len(cell['runs'])}",
                _checkers(cell["runs"]),
                f"{noticed} of {len(runs)}",
                ", ".join(events) or "none",
                f"{refused} of {len(runs)}" if refused else "0",
                f"{statistics.median(restarts):.1f}" if restarts else "—",
                ", ".join(str(n) for n in lost) or "—",
                _message(first),
            ]
        )
    header = [
        "file, node",
        "runs",
        "checkers",
        "Kafka noticed (said so, or refused to start)",
        "what it said (node events)",
        "refused to start (repaired)",
        "restart until ready, s (median)",
        "acknowledged writes lost, each run",
        "its first line (or why it did not start)",
    ]
    return table(header, rows) + source(root, rel)


def _pair(latency: dict | None) -> str:
    if not latency or latency.get("p50") is None:
        return "—"
    return f"{latency['p50']:.0f} / {latency['p99']:.0f}"


def t_slow_disk(root: Path) -> str:
    rel = "docs/benchmarks/slow-disk.json"
    d = load(root, rel)
    rows = []
    for name, cell in d["cells"].items():
        for i, r in enumerate(cell["runs"]):
            if "verdict" not in r:
                rows.append([name if i == 0 else "", str(i + 1), f"exit {r['exit']}", "", "", "", "", "", ""])
                continue
            slowed = r.get("slowed") or {}
            rows.append(
                [
                    name if i == 0 else "",
                    str(i + 1),
                    _checkers([r]),
                    _pair(r.get("ack_latency_before_ms")),
                    _pair(r.get("ack_latency_during_ms")),
                    f"{slowed.get('slowed_ops', 0):,} ({slowed.get('waited_s', 0):.1f} s)",
                    ", ".join(str(n) for n in r.get("new_leaders") or []) or "none",
                    ", ".join(r.get("isr_shrank") or []) or "none",
                    str(r.get("lost") or 0),
                ]
            )
    header = [
        "disk, aim",
        "run",
        "checkers",
        "ack latency before, ms (p50 / p99)",
        "during the fault, ms (p50 / p99)",
        "operations slowed (waited)",
        "new leader of its partitions",
        "partitions it fell out of the ISR of",
        "acknowledged lost",
    ]
    return table(header, rows) + source(root, rel)
