"""Run checkers over one history; a checker that raises is reported, never propagated."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from failsafe.checkers import availability, delivery, dr, order, rebalance, semantics
from failsafe.checkers.common import UNKNOWN, CheckerResult, Validity
from failsafe.history.model import History

Checker = Callable[[History, Mapping | None], CheckerResult]

CHECKERS: dict[str, Checker] = {
    "delivery": delivery.check,
    "order": order.check,
    "semantics": semantics.check,
    "availability": availability.check,
    "rebalance": rebalance.check,
    "dr": dr.check,
}
# What a run of a kind is checked with: a lab run on one cluster, a DR run across two (checkers/dr.py).
LAB_CHECKERS = ("delivery", "order", "semantics", "availability", "rebalance")
DR_CHECKERS = ("dr",)


def run_checkers(
    history: History,
    options_by_checker: Mapping[str, Mapping] | None = None,
    names: Sequence[str] | None = None,
) -> dict[str, CheckerResult]:
    """Each named checker's result (those of a lab run by default), in CHECKERS order."""
    options_by_checker = options_by_checker or {}
    wanted = list(LAB_CHECKERS) if names is None else list(names)
    unknown = sorted(set(wanted) - set(CHECKERS))
    if unknown:
        raise ValueError(f"no checker named {unknown}; known: {sorted(CHECKERS)}")
    results: dict[str, CheckerResult] = {}
    for name in wanted:
        try:
            results[name] = CHECKERS[name](history, options_by_checker.get(name))
        except Exception as e:  # noqa: BLE001 - the contract: a checker that raises is "unknown", the others still run
            results[name] = {"valid": UNKNOWN, "error": f"{type(e).__name__}: {e}"}
    return results


def combine_validity(values: Iterable[Validity]) -> Validity:
    """False if any is false, else "unknown" if any is not true, else true."""
    values = list(values)
    if any(value is False for value in values):
        return False
    if any(value is not True for value in values):
        return UNKNOWN
    return True
