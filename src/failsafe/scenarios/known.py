"""Known anomalies: a run whose only violations are ones its scenario declares known gets KNOWN, never VALID.

A scenario's ``[[known]]`` entry names a violation (``delivery.duplicate-acknowledged``), the client
library it is known of, the client properties under which it is known (``when``, required), and the
upstream reference that explains it. The condition is checked against the clients on the
violation's side (checkers/run.py: producers for a write's anomaly, consumers for a read's, every
client for the cluster's), or only the clients that showed it when its checker names them
(``processes`` in the checker's result), as each ran: the library and settings its ``client-config``
op recorded, and for a reader ``assignment`` (``manual`` when it assigned partitions itself, ``group``
when a consumer group gave them), read from its own assign ops.
A run is KNOWN when it is invalid, no expectation failed, every invalid checker names its
violations, and each of them matches an entry whose condition every client on its side meets.
A loss of an acknowledged write never matches (checkers.LOSS_VIOLATIONS: the scenario's parser
refuses such an entry and ``classify`` checks again), and neither does a violation of a client or
configuration outside the entry's condition: those runs stay INVALID.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import polars as pl

from failsafe.checkers import LOSS_VIOLATIONS, combine_validity, violation_side
from failsafe.checkers.common import Side, Verdict
from failsafe.history.model import History
from failsafe.history.ops import Op
from failsafe.scenarios.base import KnownAnomaly, Scenario

ASSIGNMENT = "assignment"


def clients_on_side(
    history: History, side: Side, only: Collection[str] | None = None
) -> dict[str, tuple[str | None, dict[str, str]]]:
    """process -> (client library, settings) of every client on ``side`` (of those in ``only`` when given), as its
    client-config op recorded them, with a reader's ``assignment``; a client that recorded none is (None, {}): nothing
    is known of it, so no condition holds for it."""
    writers = set(history.sends["process"].drop_nulls().to_list())
    readers = set(history.reads["process"].drop_nulls().to_list()) | set(
        history.membership["process"].drop_nulls().to_list()
    )
    wanted = writers if side == Side.PRODUCERS else readers if side == Side.CONSUMERS else writers | readers
    if only is not None:
        wanted &= set(only)
    out: dict[str, tuple[str | None, dict[str, str]]] = {process: (None, {}) for process in wanted}
    assigns = history.membership.filter((pl.col("f") == Op.ASSIGN) & pl.col("process").is_in(list(wanted)))
    manual = set(assigns.filter(pl.col("group").is_null())["process"].to_list())
    grouped = set(assigns.filter(pl.col("group").is_not_null())["process"].to_list())
    for row in (
        history.clients.sort("time_ns", maintain_order=True).filter(pl.col("process").is_in(list(wanted))).to_dicts()
    ):
        settings = {entry["name"]: str(entry["value"]).lower() for entry in row["config"] or []}
        process = row["process"]
        # A reader that took partitions both ways has no one assignment: no condition on it holds.
        if process in manual ^ grouped:
            settings[ASSIGNMENT] = "manual" if process in manual else "group"
        out[process] = (row["client"], settings)
    return out


def condition_holds(entry: KnownAnomaly, clients: Mapping[str, tuple[str | None, Mapping[str, str]]]) -> bool:
    """Every client is of the entry's library and ran with every property of ``when`` set to its value."""
    if not clients or not entry.when:
        return False
    return all(
        library == entry.client and all(settings.get(name) == value.lower() for name, value in entry.when.items())
        for library, settings in clients.values()
    )


def classify(results: dict[str, Any], scenario: Scenario | None, history: History) -> dict[str, Any]:
    """``verdict`` (and ``known`` / ``unexplained`` when the run was invalid) added to a run's results."""
    verdict = Verdict.of(results.get("valid"))
    results["verdict"] = verdict.value
    if verdict is not Verdict.INVALID or scenario is None:
        return results
    checkers: Mapping[str, Mapping] = results.get("checkers") or {}
    violations = [
        (name, v)
        for name, c in checkers.items()
        if c.get("valid") is False
        for v in (c.get("violations") or [f"{name}-invalid"])
    ]
    failed_expectations = [e.get("name") for e in results.get("expectations") or [] if e.get("valid") is False]
    matched: list[dict[str, Any]] = []
    unexplained: list[str] = [f"expectation {name}" for name in failed_expectations]
    for checker, violation in violations:
        anomaly = f"{checker}.{violation}"
        side = violation_side(anomaly)
        entries = [k for k in scenario.known if k.anomaly == anomaly]
        showed = (checkers[checker].get("processes") or {}).get(violation)
        clients = clients_on_side(history, side, showed) if side is not None and entries else {}
        entry = next((k for k in entries if condition_holds(k, clients)), None)
        if entry is None or anomaly in LOSS_VIOLATIONS:
            unexplained.append(anomaly)
            continue
        count = (checkers[checker].get("counts") or {}).get(violation)
        matched.append(
            {
                "anomaly": anomaly,
                "count": count,
                "client": entry.client,
                "when": entry.when,
                "reference": entry.reference,
                "description": entry.description,
                "side": str(side),
                "clients": sorted(clients),
            }
        )
    if matched:
        results["known"] = matched
    if unexplained:
        results["unexplained"] = unexplained
        return results
    # Every violation is known: what the run is, is what its other checkers say.
    rest = [c.get("valid", "unknown") for c in checkers.values() if c.get("valid") is not False]
    rest += [e.get("valid", "unknown") for e in results.get("expectations") or []]
    results["verdict"] = (Verdict.KNOWN if combine_validity(rest + [True]) is True else Verdict.UNKNOWN).value
    return results
