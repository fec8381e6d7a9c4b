"""What an app run's summary adds to the lab's: the app's pace and what a read_uncommitted reader of its output saw,
both measured beside the verdict (checkers/app/pace.py, checkers/app/output.py)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from failsafe.scenarios.kit.judging import show_summary


def show_app(console: Console, run_dir: Any, results: dict, history: Any) -> None:
    show_summary(console, run_dir, results, history)
    for line in app_lines(results.get("checkers", {}).get("app") or {}):
        console.print(line, highlight=False)


def app_lines(app: dict) -> list[str]:
    """One line each: the input-to-output latency, the output's pauses, the read_uncommitted view."""
    lines = []
    pace = app.get("pace") or {}
    if pace.get("measured") is False:
        lines.append(f"App latency and pauses not measured: {pace['why']}")
    latency = pace.get("latency-ms")
    if latency:
        lines.append(
            f"App latency, input send to output: p50 {latency['p50']:,} ms, p99 {latency['p99']:,} ms, "
            f"max {latency['max']:,} ms ({latency['records']:,} inputs)"
        )
    pauses = pace.get("pauses")
    if pauses:
        longest = max(pauses, key=lambda p: p["ms"])
        during = f", during {', '.join(longest['faults'])}" if longest["faults"] else ""
        found = pace.get("pauses-found", len(pauses))
        lines.append(
            f"App output paused {found} time(s) for {pace['pause-min-ms']:,} ms or more while input came in; longest "
            f"{longest['ms'] / 1000:.1f} s, {longest['at_s']:.1f} s after the input began{during}"
        )
    elif pauses is not None and pace.get("longest-pause-ms") is not None:
        lines.append(f"App output never paused for {pace['pause-min-ms']:,} ms or more while input came in")
    view = app.get("uncommitted_view")
    if view:
        twice = view.get("identities-more-than-once")
        lines.append(
            f"read_uncommitted readers ({', '.join(view['readers'])}): {view['records']:,} records, "
            f"{view['not-in-committed-log']:,} not in the committed log"
            + (f", {twice:,} identities seen more than once" if twice is not None else "")
        )
    return lines
