"""Checkers: pure functions from a History to a verdict with counts and examples.

Each ``check(history, options) -> {"valid": True | False | "unknown", "counts", "examples", ...}``
(docs/checkers.md). They import only ``failsafe.history`` and do no I/O.
"""

from __future__ import annotations

from failsafe.checkers.run import CHECKERS, LOSS_VIOLATIONS, check_options, combine_validity, run_checkers, violation_side

__all__ = ["CHECKERS", "LOSS_VIOLATIONS", "check_options", "combine_validity", "run_checkers", "violation_side"]
