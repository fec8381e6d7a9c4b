"""How a run is shown: a terminal summary (rich) and a self-contained report.html with plots.

Reports read results.json (as a dict) and the history (``failsafe.history``); they import nothing
else of failsafe's. The HTML side imports matplotlib, so it is loaded only when asked for.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render_summary", "write_report"]


def __getattr__(name: str) -> Any:
    if name == "render_summary":
        from failsafe.reports.terminal import render_summary

        return render_summary
    if name == "write_report":
        from failsafe.reports.html import write_report

        return write_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
