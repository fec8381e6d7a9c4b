"""What both the terminal summary and report.html show, as rows of plain strings.

results.json is read defensively: only ``valid``, ``checkers`` and ``expectations`` are relied on;
every checker-specific field is optional and shown as ``—`` when missing, so a report can always
be rendered, even from a run whose checkers failed or predate a field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from failsafe.checkers.common import Verdict

if TYPE_CHECKING:
    from failsafe.history.model import History

DASH = "—"
MAX_LISTED_PARTITIONS = 6
PRODUCER_COLUMNS = ("acknowledged", "lost", "failed", "unknown", "recovered")


def verdict(value: object) -> Verdict:
    """results.json's three-valued ``valid``: only the booleans decide, anything else is UNKNOWN."""
    return Verdict.of(value)


def run_verdict(results: dict) -> Verdict:
    """A run's verdict: KNOWN when every violation matched a known anomaly (results' ``verdict``), else from
    ``valid``."""
    return Verdict.of_run(results)


KNOWN_HEADERS = ("known anomaly", "count", "client and condition", "reference")


def known_rows(results: dict) -> list[tuple[str, str, str, str]]:
    """(anomaly, count, client and condition, reference) per known anomaly the run showed."""
    rows = []
    for entry in results.get("known") or []:
        if isinstance(entry, dict):
            when = entry.get("when") or {}
            condition = " ".join([str(entry.get("client") or "?"), *(f"{k}={v}" for k, v in when.items())])
            rows.append((fmt(entry.get("anomaly")), fmt(entry.get("count")), condition, fmt(entry.get("reference"))))
    return rows


def unexplained(results: dict) -> list[str]:
    """The violations no known anomaly covers (why a run with known anomalies is still INVALID)."""
    return [str(item) for item in results.get("unexplained") or []]


def fmt(value: object) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(", ", ": "), default=str)
    return str(value)


def expectation_rows(results: dict) -> list[tuple[str, str, str, str]]:
    """(name, expected, observed, verdict) per expectation."""
    rows = []
    for exp in results.get("expectations") or []:
        if isinstance(exp, dict):
            rows.append(
                (fmt(exp.get("name")), fmt(exp.get("expected")), fmt(exp.get("observed")), verdict(exp.get("valid")))
            )
    return rows


def checker_rows(results: dict) -> list[tuple[str, str, str]]:
    """(name, verdict, counts or error) per checker."""
    rows = []
    for name, entry in (results.get("checkers") or {}).items():
        if not isinstance(entry, dict):
            rows.append((str(name), "UNKNOWN", fmt(entry)))
            continue
        counts = entry.get("counts")
        detail = ", ".join(f"{k}={fmt(v)}" for k, v in counts.items()) if isinstance(counts, dict) and counts else DASH
        if entry.get("error"):
            detail = f"error: {entry['error']}" if detail == DASH else f"{detail}; error: {entry['error']}"
        rows.append((str(name), verdict(entry.get("valid")), detail))
    return rows


@dataclass(frozen=True)
class FaultRow:
    fault_id: str
    fault: str
    nodes: str
    partitions: str
    max_unavailable_ms: str
    new_leader_ms: str
    rebalances: str
    pause_ms: str

    HEADERS = (
        "#",
        "fault",
        "nodes",
        "partitions affected",
        "max unavailable ms",
        "new leader ms",
        "rebalances during",
        "rebalance pause ms",
    )

    def cells(self) -> tuple[str, ...]:
        return (
            self.fault_id,
            self.fault,
            self.nodes,
            self.partitions,
            self.max_unavailable_ms,
            self.new_leader_ms,
            self.rebalances,
            self.pause_ms,
        )


def _entries(raw: object, key_name: str = "fault_id") -> list[dict]:
    if isinstance(raw, dict):
        return [{key_name: k, **v} for k, v in raw.items() if isinstance(v, dict)]
    if isinstance(raw, list):
        return [item for item in raw if isinstance(item, dict)]
    return []


def per_fault(checker: object) -> dict[str, dict]:
    """The availability checker's ``faults`` (a list of objects with ``fault_id``) keyed by fault id as a string."""
    if not isinstance(checker, dict):
        return {}
    return {
        str(item.get("fault_id")): item for item in _entries(checker.get("faults")) if item.get("fault_id") is not None
    }


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _max_of(values: list[object]) -> float | None:
    numbers = [n for n in (_number(v) for v in values) if n is not None]
    return max(numbers) if numbers else None


def _partition_names(partitions: list[dict]) -> str:
    names = [f"{p.get('topic', '?')}-{p.get('partition', '?')}" for p in partitions]
    if not names:
        return "none"
    shown = ", ".join(names[:MAX_LISTED_PARTITIONS])
    return shown if len(names) <= MAX_LISTED_PARTITIONS else f"{shown}, … (+{len(names) - MAX_LISTED_PARTITIONS})"


def _pause(events: list[dict]) -> str:
    """The longest pause of a fault's rebalance events (one per group); 'never' when its partitions were never all
    assigned again."""
    if not events:
        return DASH
    if any(e.get("pause_ms") is None for e in events):
        return "never"
    return fmt(_max_of([e.get("pause_ms") for e in events]))


def _nodes(nodes: object) -> str:
    if isinstance(nodes, list) and nodes:
        return ", ".join(str(n) for n in nodes)
    return fmt(nodes or None)


def fault_rows(results: dict, history: History | None = None) -> list[FaultRow]:
    """One row per fault (history's fault windows and the availability checker's faults), then one per
    consumer crash or close that the rebalance checker measured and no fault explains."""
    checkers = results.get("checkers") or {}
    availability = per_fault(checkers.get("availability"))
    rebalance = checkers.get("rebalance") if isinstance(checkers.get("rebalance"), dict) else {}
    events = _entries(rebalance.get("events"))
    recorded = (
        {}
        if history is None
        else {str(r["fault_id"]): r for r in history.faults.sort("start_ns").iter_rows(named=True)}
    )
    rows = []
    for key in dict.fromkeys([*recorded, *availability]):
        avail, rec = availability.get(key, {}), recorded.get(key) or {}
        parts = _entries(avail.get("affected_partitions", avail.get("partitions")))
        unavailable = _max_of([p.get("unavailable_ms") for p in parts])
        rows.append(
            FaultRow(
                fault_id=key,
                fault=" ".join(
                    str(x)
                    for x in (rec.get("fault") or avail.get("fault"), rec.get("target") or avail.get("target"))
                    if x
                )
                or DASH,
                nodes=_nodes(rec.get("nodes") if rec else avail.get("nodes")),
                partitions=_partition_names(parts) if "affected_partitions" in avail or "partitions" in avail else DASH,
                max_unavailable_ms=fmt(unavailable if unavailable is not None else avail.get("max_unavailable_ms")),
                new_leader_ms=fmt(_max_of([p.get("new_leader_ms") for p in parts])),
                rebalances=fmt(avail.get("rebalances_during")),
                pause_ms=_pause([e for e in events if str(e.get("fault_id")) == key]),
            )
        )
    for event in events:
        if event.get("fault_id") is None:
            rows.append(
                FaultRow(
                    DASH,
                    f"consumer {event.get('source') or 'event'}",
                    _nodes(event.get("processes")),
                    DASH,
                    DASH,
                    DASH,
                    DASH,
                    _pause([event]),
                )
            )
    return rows


def availability_totals(results: dict) -> list[tuple[str, str]]:
    """The run-wide failover numbers that exist, as (label, value)."""
    checkers = results.get("checkers") or {}
    avail = checkers.get("availability") if isinstance(checkers.get("availability"), dict) else {}
    reb = checkers.get("rebalance") if isinstance(checkers.get("rebalance"), dict) else {}
    pairs = [
        ("max unavailable ms", avail.get("max_unavailable_ms")),
        ("median unavailable ms", avail.get("median_unavailable_ms")),
        ("median new leader ms", avail.get("median_new_leader_ms")),
        ("max rebalance pause ms", reb.get("max_pause_ms")),
        ("median rebalance pause ms", reb.get("median_pause_ms")),
    ]
    return [(label, fmt(value)) for label, value in pairs if value is not None]


STALL_HEADERS = ("#", "replica role", "partitions", "max stall ms", "median stall ms")


def _stall_cells(fault_id: str, group: str, stall: dict) -> tuple[str, ...]:
    """An open stall (no acknowledgement after the fault's start) is longer than any measured one: 'never'."""
    open_ = _number(stall.get("open")) or 0
    partitions = fmt(stall.get("partitions")) + (f" ({int(open_):,} never acked)" if open_ else "")
    return (
        fault_id,
        str(group),
        partitions,
        "never" if open_ else fmt(stall.get("max_stall_ms")),
        fmt(stall.get("median_stall_ms")),
    )


def stall_rows(results: dict) -> list[tuple[str, ...]]:
    """(fault #, replica role, partitions, max stall ms, median stall ms) per fault and group of the availability
    checker's ``stalls``; without per-fault stalls, one row per group of ``stall_by_group`` with fault '—'."""
    avail = (results.get("checkers") or {}).get("availability")
    rows = [
        _stall_cells(key, group, stall)
        for key, fault in per_fault(avail).items()
        if isinstance(fault.get("stalls"), dict)
        for group, stall in fault["stalls"].items()
        if isinstance(stall, dict)
    ]
    by_group = avail.get("stall_by_group") if isinstance(avail, dict) else None
    if not rows and isinstance(by_group, dict):
        rows = [_stall_cells(DASH, group, stall) for group, stall in by_group.items() if isinstance(stall, dict)]
    return rows


def stall_baseline(results: dict) -> str | None:
    """The median gap between a partition's acknowledgements before the first fault, to tell a stall from sparse
    traffic."""
    avail = (results.get("checkers") or {}).get("availability")
    value = avail.get("baseline_gap_ms") if isinstance(avail, dict) else None
    return None if _number(value) is None else f"{fmt(value)} ms"


def producer_rows(results: dict) -> list[tuple[str, ...]]:
    """(process, acknowledged, lost, failed, unknown, recovered) from delivery's ``by_process``: the acks matrix."""
    delivery: Any = (results.get("checkers") or {}).get("delivery")
    by_process = delivery.get("by_process") if isinstance(delivery, dict) else None
    if not isinstance(by_process, dict):
        return []
    return [
        (str(process), *(fmt(counts.get(c)) for c in PRODUCER_COLUMNS))
        for process, counts in sorted(by_process.items())
        if isinstance(counts, dict)
    ]


BREAKDOWN_HEADERS = (
    "#",
    "partition",
    "leader",
    "detection s",
    "election s",
    "propagation s",
    "client backoff s",
    "client-visible s",
)
_BREAKDOWN_COMPONENTS = ("detection_s", "election_s", "propagation_s", "client_backoff_s", "client_visible_s")


def _breakdown(results: dict) -> dict:
    measured = results.get("measurements")
    found = measured.get("failover_breakdown") if isinstance(measured, dict) else None
    return found if isinstance(found, dict) else {}


def _seconds(value: object) -> str:
    number = _number(value)
    return DASH if number is None else f"{number:,.3f}"


def breakdown_rows(results: dict) -> list[tuple[str, ...]]:
    """Where each failover's time went (measurements' ``failover_breakdown``, checkers/measure/breakdown.py): one row
    per fault and partition whose leader it took, the leader as old -> new, each component in seconds ('—': unknown, see
    the notes)."""
    rows = []
    for row in _entries(_breakdown(results).get("partitions")):
        leader = f"{fmt(row.get('old_leader'))} → {fmt(row.get('new_leader'))}"
        rows.append(
            (
                fmt(row.get("fault_id")),
                f"{row.get('topic', '?')}-{row.get('partition', '?')}",
                leader,
                *(_seconds(row.get(name)) for name in _BREAKDOWN_COMPONENTS),
            )
        )
    return rows


def breakdown_failed(results: dict) -> str | None:
    """Why the breakdown could not be measured (its checker raised), or None."""
    error = _breakdown(results).get("error")
    return f"the breakdown could not be measured: {error}" if error else None


def breakdown_notes(results: dict) -> list[str]:
    """Why some components are unknown (each reason once, with how many rows gave it), and the sampling bound."""
    found = _breakdown(results)
    if found.get("error"):
        return [f"the breakdown could not be measured: {found['error']}"]
    reasons: dict[str, int] = {}
    for row in _entries(found.get("partitions")):
        why = row.get("why")
        for component, reason in why.items() if isinstance(why, dict) else []:
            key = f"{component.removesuffix('_s').replace('_', ' ')} unknown: {reason}"
            reasons[key] = reasons.get(key, 0) + 1
    notes = [f"{reason} ({count} row{'s' if count > 1 else ''})" for reason, count in reasons.items()]
    errors = [_number(row.get("leader_sample_error_s")) for row in _entries(found.get("partitions"))]
    bound = max((e for e in errors if e is not None), default=None)
    if bound is not None:
        notes.append(
            f"a new leader is seen by the topology samples, here up to {bound:.2f} s after it came: election may be "
            "that much shorter, and propagation that much longer"
        )
    return notes
