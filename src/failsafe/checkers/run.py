"""The checkers, what each can report, and running them over one history (a checker that raises is reported, never
propagated).

Each checker module declares its options (``DEFAULTS``) and the violations it can report with
whose behaviour each is about (``VIOLATIONS``: name -> Side). Scenarios are validated against
these before anything runs: an option a checker does not take, or a known anomaly naming a
violation no checker reports, is refused at parse time (scenarios/base.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import failsafe.checkers.availability as availability
import failsafe.checkers.clients as clients
import failsafe.checkers.completeness as completeness
import failsafe.checkers.delivery as delivery
import failsafe.checkers.dr.failover as dr
import failsafe.checkers.durability as durability
import failsafe.checkers.order as order
import failsafe.checkers.pipeline.enriched as enriched
import failsafe.checkers.pipeline.judgeable as pipeline_run
import failsafe.checkers.pipeline.sales as sales
import failsafe.checkers.rebalance as rebalance
import failsafe.checkers.semantics as semantics
import failsafe.checkers.share.deliveries as share
import failsafe.checkers.txn.transactions as transactions
from failsafe.checkers.common import UNKNOWN, CheckerOptionError, CheckerResult, Side, Validity, read_options
from failsafe.history.model import History

Checker = Callable[[History, Mapping | None], CheckerResult]


@dataclass(frozen=True)
class CheckerInfo:
    name: str
    check: Checker | None  # None: not a function of the history alone (sales and enriched compare a sink with a ledger)
    defaults: Mapping[str, Any]
    violations: Mapping[str, Side]
    # What the options must hold beyond their types (raises CheckerOptionError); checked when a scenario is parsed.
    check_options: Callable[[Mapping], None] | None = None


CHECKERS: dict[str, CheckerInfo] = {
    info.name: info
    for info in (
        CheckerInfo("completeness", completeness.check, completeness.DEFAULTS, completeness.VIOLATIONS),
        CheckerInfo("durability", durability.check, durability.DEFAULTS, durability.VIOLATIONS),
        CheckerInfo("clients", clients.check, clients.DEFAULTS, clients.VIOLATIONS),
        CheckerInfo("delivery", delivery.check, delivery.DEFAULTS, delivery.VIOLATIONS),
        CheckerInfo("order", order.check, order.DEFAULTS, order.VIOLATIONS),
        CheckerInfo("semantics", semantics.check, semantics.DEFAULTS, semantics.VIOLATIONS),
        CheckerInfo("availability", availability.check, availability.DEFAULTS, availability.VIOLATIONS),
        CheckerInfo("rebalance", rebalance.check, rebalance.DEFAULTS, rebalance.VIOLATIONS),
        CheckerInfo("dr", dr.check, dr.DEFAULTS, dr.VIOLATIONS, dr.check_options),
        CheckerInfo("pipeline", pipeline_run.check, pipeline_run.DEFAULTS, pipeline_run.VIOLATIONS),
        CheckerInfo("sales", None, {}, {name: Side.PRODUCERS for name in sales.ANOMALIES}),
        CheckerInfo("enriched", None, enriched.DEFAULTS, enriched.VIOLATIONS),
        CheckerInfo("transactions", transactions.check, transactions.DEFAULTS, transactions.VIOLATIONS),
        CheckerInfo("share", share.check, share.DEFAULTS, share.VIOLATIONS),
    )
}

# The checkers every run of every kind is judged by, before its kind's own: a kind adds checkers, it never removes
# these. completeness: the run ran to its end (else the run is UNKNOWN); durability: every acknowledged write is in the
# final read; clients: every client the scenario declared showed up, wrote or read.
ALWAYS: tuple[str, ...] = ("completeness", "durability", "clients")

# Every kind of loss of an acknowledged write, as CHECKER.VIOLATION, and a partition that never came back: the one
# list no known anomaly can cover, whatever client or settings it names. (Loss a writer that promised nothing may
# show is not a violation at all: the checkers count it against that writer, see evidence.lossy_writers; a partition a
# scenario expects to stay down is named in expect_unrecovered.)
LOSS_VIOLATIONS: tuple[str, ...] = (
    "durability.lost",
    "delivery.lost",
    "delivery.lost-after-read",
    "semantics.missing",
    "dr.skipped",
    "dr.target-unread",
    "sales.missing_windows",
    "sales.undercounted",
    "sales.dead_letters_missing",
    "availability.never-recovered",
    "pipeline.never-recovered",
    "dr.never-recovered",
    "transactions.lost-write",
    # a transaction half in the log: of a committed one, a write its commit covered is gone
    "transactions.torn-transaction",
    "enriched.missing",
    "share.lost",
)


def violation_side(anomaly: str) -> Side | None:
    """Whose behaviour CHECKER.VIOLATION is about; None when no checker declares it."""
    checker, _, violation = anomaly.partition(".")
    info = CHECKERS.get(checker)
    return None if info is None else info.violations.get(violation)


def check_options(name: str, options: Mapping | None) -> None:
    """Raise CheckerOptionError for an unknown checker or an option it does not take (or of the wrong type)."""
    info = CHECKERS.get(name)
    if info is None:
        raise CheckerOptionError(f"no checker named {name!r}; the checkers are {', '.join(CHECKERS)}")
    read_options(options, info.defaults, name)
    if info.check_options is not None:
        info.check_options(options or {})


def with_always(names: Iterable[str]) -> tuple[str, ...]:
    """The checkers ALWAYS run, then ``names`` (each once)."""
    return tuple(dict.fromkeys([*ALWAYS, *names]))


def run_checkers(
    history: History, options_by_checker: Mapping[str, Mapping] | None, names: Sequence[str]
) -> dict[str, CheckerResult]:
    """Each checker's result: those ALWAYS run first, then the named ones in the order given."""
    names = with_always(names)
    options_by_checker = options_by_checker or {}
    unknown = [n for n in names if n not in CHECKERS or CHECKERS[n].check is None]
    if unknown:
        raise ValueError(
            f"no checker of the history named {unknown}; known: {[n for n, c in CHECKERS.items() if c.check]}"
        )
    results: dict[str, CheckerResult] = {}
    for name in names:
        try:
            results[name] = CHECKERS[name].check(history, options_by_checker.get(name))  # type: ignore[misc]
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
