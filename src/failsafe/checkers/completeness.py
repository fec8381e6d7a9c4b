"""Completeness: a run is judged only when it ran to its end. Pure.

The engine records each phase it finished (``phase-end``): setup, warm-up, chaos, heal, recover, drain and the final
read. A history without one of them (failsafe was killed, a crash, a history cut short, or recorded before phases ended
in the history) says nothing about what the run would have shown after it: its verdict is UNKNOWN, never VALID, and
never INVALID for what only the end could show. So is a history without the ``declare`` op (the clients its scenario
declared, checkers/clients.py) and an empty history. scenarios/store/check.py makes the whole run UNKNOWN when this
checker is not true."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, read_options, result
from failsafe.history.model import History
from failsafe.history.ops import Op, PhaseName

DEFAULTS: dict[str, Any] = {}
VIOLATIONS: dict = {}
# Every phase of the one engine, in order; each kind's runs go through all of them.
REQUIRED: tuple[str, ...] = tuple(str(p) for p in PhaseName)


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    read_options(options, DEFAULTS, "completeness")
    ended = set(history.phase_ends["phase"].to_list())
    missing = [phase for phase in REQUIRED if phase not in ended]
    declared = history.events.filter(pl.col("f") == Op.DECLARE).height > 0
    counts = {"ops": history.op_count, "phases-ended": len(ended & set(REQUIRED)), "phases-required": len(REQUIRED)}
    reason = None
    if history.op_count == 0:
        reason = "the history is empty: the run recorded nothing"
    elif missing:
        reason = f"the run did not finish: its {missing[0]} phase never ended" + (
            f" (nor {', '.join(missing[1:])})" if missing[1:] else ""
        )
    elif not declared:
        reason = "the history records no declare op: which clients the scenario declared is unknown"
    return result(
        True if reason is None else UNKNOWN, counts, {}, [], missing=missing, **({"reason": reason} if reason else {})
    )
