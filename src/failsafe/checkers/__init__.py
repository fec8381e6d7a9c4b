"""Checkers: pure functions from a History to a verdict with counts and examples.

Each ``check(history, options) -> {"valid": True | False | "unknown", "counts", "examples", ...}``
(docs/checkers.md). They import only ``failsafe.history`` and do no I/O.
"""

from __future__ import annotations

from failsafe.checkers.run import (
    ALWAYS,
    CHECKERS,
    LOSS_VIOLATIONS,
    check_options,
    combine_validity,
    run_checkers,
    violation_side,
    with_always,
)

__all__ = [
    "ALWAYS",
    "CHECKERS",
    "LOSS_VIOLATIONS",
    "check_options",
    "combine_validity",
    "run_checkers",
    "violation_side",
    "with_always",
]
