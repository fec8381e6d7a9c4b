"""The checkers, what each can report, and running them over one history (a checker that raises is reported, never
propagated).

Each checker module declares its options (``DEFAULTS``) and the violations it can report with
whose behaviour each is about (``VIOLATIONS``: name -> Side). Scenarios are validated against
these before anything runs: an option a checker does not take, or a known anomaly naming a
violation no checker reports, is refused at parse time (scenarios/base.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType

import failsafe.checkers.availability as availability
import failsafe.checkers.clients as clients
import failsafe.checkers.completeness as completeness
import failsafe.checkers.delivery as delivery
import failsafe.checkers.durability as durability
import failsafe.checkers.order as order
import failsafe.checkers.rebalance as rebalance
import failsafe.checkers.semantics as semantics
from failsafe.checkers.common import (
    UNKNOWN,
    CheckerInfo,
    CheckerOptionError,
    CheckerResult,
    Side,
    Validity,
    read_options,
)
from failsafe.history.model import History

# The checkers every kind may ask for, here; a kind's own declare themselves in the sub-package named after it
# (checkers/KIND/__init__.py: CHECKERS, and LOSS_VIOLATIONS for its kinds of loss), found and added below.
_COMMON = (
    CheckerInfo("completeness", completeness.check, completeness.DEFAULTS, completeness.VIOLATIONS),
    CheckerInfo("durability", durability.check, durability.DEFAULTS, durability.VIOLATIONS),
    CheckerInfo("clients", clients.check, clients.DEFAULTS, clients.VIOLATIONS),
    CheckerInfo("delivery", delivery.check, delivery.DEFAULTS, delivery.VIOLATIONS),
    CheckerInfo("order", order.check, order.DEFAULTS, order.VIOLATIONS),
    CheckerInfo("semantics", semantics.check, semantics.DEFAULTS, semantics.VIOLATIONS),
    CheckerInfo("availability", availability.check, availability.DEFAULTS, availability.VIOLATIONS),
    CheckerInfo("rebalance", rebalance.check, rebalance.DEFAULTS, rebalance.VIOLATIONS),
)
# Sub-packages that are parts of every kind's judging, not a kind's own checkers.
_NOT_KINDS = ("explain", "measure")


def kinds_checkers() -> list[ModuleType]:
    """The kinds' checker sub-packages (checkers/KIND/), each imported."""
    import failsafe.checkers as package

    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.ispkg and m.name not in _NOT_KINDS)
    return [importlib.import_module(f"failsafe.checkers.{name}") for name in names]


def _registry(infos: Iterable[CheckerInfo]) -> dict[str, CheckerInfo]:
    out: dict[str, CheckerInfo] = {}
    for info in infos:
        if info.name in out:
            raise ValueError(f"two checkers are named {info.name!r}")
        out[info.name] = info
    return out


_KINDS = kinds_checkers()
CHECKERS: dict[str, CheckerInfo] = _registry([*_COMMON, *(info for m in _KINDS for info in m.CHECKERS)])

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
    "availability.never-recovered",
    # each kind's own, declared beside its checkers
    *(loss for m in _KINDS for loss in m.LOSS_VIOLATIONS),
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
