"""Shrinking a failed campaign run: a smaller schedule that still shows the same anomaly.

``shrink`` takes the schedule of an INVALID run and an oracle, ``attempt(schedule) -> bool``: one
run of that schedule on the cluster, True when it showed the original run's anomaly kind. It shrinks
the choices the nemesis made (which faults, how long, when, how long the chaos phase lasts), never
the run's output, and runs every candidate again. It does no I/O of its own.

The search is greedy. From the current schedule it makes candidates in this order, accepts the
first one that reproduces, then starts over from it:

    drop     leave faults out: each half, then each quarter, ... (delta debugging, ddmin), then each
             fault alone, including the last one (an anomaly that needs no fault is worth knowing)
    shorten  halve one fault's duration, to no less than ``min_duration_s``; a fault without a
             duration (a restart) keeps none
    earlier  move a fault to the start of the fault before it (or 0), then half way there, first
             together with every fault after it (their overlaps stay as they were), then alone;
             times to 0.1 s, and half way only when that moves it at least MIN_SHIFT_S
    chaos    cut the chaos phase to a margin after the last fault ends (Schedule.fitted), smallest
             margin first

It stops when no candidate reproduces or when ``max_runs`` attempts are spent. Then it runs the
smallest schedule ``confirm`` more times and reports "reproduced k of n".

The limits, which the result reports:

- Greedy: the result is a local minimum (no single move from it reproduced), not the smallest schedule
  that reproduces. The moves could be tried in another order and end somewhere else.
- Flaky: a cluster is not deterministic. Each candidate gets up to ``tries`` runs and is accepted at
  the first reproduction. A candidate that reproduces with probability p is missed with probability
  (1-p)**tries (p 0.3, 3 tries: 34%). A candidate accepted on a lucky run may rarely reproduce, and the
  confirmation runs show how often it does. "Reproduced 0 of n" is reported as such. A rejected
  candidate is never run again.
- Times are the schedule's, not the run's. The engine runs starts and undos one after another, and an
  undo takes as long as it takes (undoing a kill waits for the broker to be back), so a fault lasts
  longer than its duration and whatever is due during that wait starts late. A kill shrunk to 1 s is a
  kill and a restart, and two faults overlap in the run longer or shorter than the schedule says. The
  run's record has the faults as they happened.
- Overlaps: moving a fault earlier never makes it overlap a fault it did not overlap before (unless
  ``new_overlaps``). Faults in force together afterwards were in force together before, because
  intervals that overlap pairwise share a point. So a schedule drawn within the ``safe`` envelope
  stays within it, and the anomaly is not blamed on a pile-up the original never had. A fault
  without a duration counts as in force for ``instant_s``, as long as the envelope counts a restart.
- Budget: each rejected candidate costs ``tries`` runs. After every accepted step the search starts
  over and runs the drops again. ``max_runs`` limits the search, and the confirmation runs come on
  top. If the budget runs out, the result is a smaller schedule, not a local minimum.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from failsafe.campaigns.schedule import Schedule
from failsafe.errors import UserError
from failsafe.faults.nodes import RESTART_OCCUPIES_S

DEFAULT_TRIES = 3
DEFAULT_MAX_RUNS = 100
MIN_DURATION_S = 1.0
# Tried smallest first. 0 is safe: the undo of the last fault still runs, and heal and recovery follow the chaos phase.
MARGINS_S = (0.0, 2.0, 5.0)
INSTANT_S = RESTART_OCCUPIES_S
# Actual fault times drift by more than this (see Times above), so a smaller move is not worth a run.
MIN_SHIFT_S = 1.0

Attempt = Callable[[Schedule], bool]
Progress = Callable[[str], None]


class Move(StrEnum):
    DROP = "drop"
    SHORTEN = "shorten"
    EARLIER = "earlier"
    CHAOS = "chaos"


@dataclass(frozen=True)
class Step:
    """An accepted candidate: the move, what it changed, the sizes before and after it (Schedule.size), the runs it
    took."""

    move: Move
    detail: str
    before: dict[str, float]
    after: dict[str, float]
    runs: int
    schedule: Schedule

    def as_json(self) -> dict[str, Any]:
        return {
            "move": str(self.move),
            "detail": self.detail,
            "before": self.before,
            "after": self.after,
            "runs": self.runs,
        }


@dataclass(frozen=True)
class ShrinkResult:
    """What a search found. ``runs`` and ``reproductions`` count the search's attempts, ``confirm_*`` the
    confirmation's."""

    original: Schedule
    smallest: Schedule
    steps: tuple[Step, ...]
    tries: int
    max_runs: int
    runs: int
    reproductions: int
    budget_spent: bool
    confirm_runs: int
    confirm_reproduced: int

    @property
    def shrunk(self) -> bool:
        return bool(self.steps)

    @property
    def unconfirmed(self) -> bool:
        """The confirmation ran and the final schedule reproduced in none of its runs."""
        return self.confirm_runs > 0 and self.confirm_reproduced == 0

    def summary(self) -> list[str]:
        """A few lines for a person: what shrank, what it cost, how often the result reproduces."""
        which = "smallest" if self.shrunk else "original"
        if self.shrunk:
            lines = [f"shrunk {size_text(self.original)} to {size_text(self.smallest)} in {len(self.steps)} steps"]
        else:
            lines = [
                f"no smaller schedule reproduced the anomaly: the original comes back ({size_text(self.original)})"
            ]
        lines.append(
            f"{self.runs} runs of candidates ({self.tries} tries each at most), {self.reproductions} reproduced"
        )
        if self.budget_spent:
            lines.append(f"the budget of {self.max_runs} runs ran out: a smaller schedule, perhaps not a local minimum")
        if self.unconfirmed:
            why = (
                "the step that accepted it may have been luck"
                if self.shrunk
                else "the anomaly is rare, or came from what a schedule does not hold (timing, the cluster's state)"
            )
            lines.append(f"the {which} schedule reproduced in none of {self.confirm_runs} confirmation runs: {why}")
        elif self.confirm_runs:
            lines.append(
                f"the {which} schedule reproduced {self.confirm_reproduced} of {self.confirm_runs} confirmation runs"
            )
        return lines

    def as_json(self) -> dict[str, Any]:
        return {
            "original": self.original.as_json(),
            "smallest": self.smallest.as_json(),
            "steps": [s.as_json() for s in self.steps],
            "tries": self.tries,
            "max_runs": self.max_runs,
            "runs": self.runs,
            "reproductions": self.reproductions,
            "budget_spent": self.budget_spent,
            "confirm": {"runs": self.confirm_runs, "reproduced": self.confirm_reproduced},
        }


def shrink(
    original: Schedule,
    attempt: Attempt,
    *,
    tries: int = DEFAULT_TRIES,
    max_runs: int = DEFAULT_MAX_RUNS,
    confirm: int | None = None,
    min_duration_s: float = MIN_DURATION_S,
    margins_s: tuple[float, ...] = MARGINS_S,
    new_overlaps: bool = False,
    instant_s: float = INSTANT_S,
    progress: Progress | None = None,
    on_step: Callable[[Step], None] | None = None,
) -> ShrinkResult:
    """The smallest schedule the greedy search finds that still reproduces, and how it got there.

    ``attempt`` is called at most ``max_runs + confirm`` times (``confirm`` defaults to ``tries``).
    ``progress`` gets one line per attempt. ``on_step`` gets each accepted step as it is accepted,
    so a caller can keep the smallest schedule so far if the search is interrupted.
    """
    confirm = tries if confirm is None else confirm
    _check(tries, max_runs, confirm, min_duration_s, margins_s)
    say = progress or (lambda _line: None)
    current = original
    steps: list[Step] = []
    rejected: set[str] = set()  # candidates that had all their tries and never reproduced
    runs = reproductions = 0
    budget_spent = False
    while not budget_spent:
        for move, detail, candidate in candidates(
            current, min_duration_s=min_duration_s, margins_s=margins_s, new_overlaps=new_overlaps, instant_s=instant_s
        ):
            key = _key(candidate)
            if key in rejected:
                continue
            used = 0
            hit = False
            while used < tries and not hit:
                if runs >= max_runs:
                    budget_spent = True
                    break
                used += 1
                runs += 1
                hit = bool(attempt(candidate))
                reproductions += hit
                say(
                    f"run {runs}/{max_runs}: {move} {detail} (try {used}/{tries}): "
                    f"{'reproduced' if hit else 'not reproduced'}"
                )
            if hit:
                step = Step(move, detail, current.size(), candidate.size(), used, candidate)
                steps.append(step)
                current = candidate
                if on_step is not None:
                    on_step(step)
                break
            if budget_spent:
                break
            rejected.add(key)
        else:
            break  # no candidate reproduced: a local minimum
    confirmed = 0
    for n in range(1, confirm + 1):
        hit = bool(attempt(current))
        confirmed += hit
        say(f"confirm {n}/{confirm}: {'reproduced' if hit else 'not reproduced'}")
    return ShrinkResult(
        original, current, tuple(steps), tries, max_runs, runs, reproductions, budget_spent, confirm, confirmed
    )


def candidates(
    schedule: Schedule,
    *,
    min_duration_s: float = MIN_DURATION_S,
    margins_s: tuple[float, ...] = MARGINS_S,
    new_overlaps: bool = False,
    instant_s: float = INSTANT_S,
) -> Iterator[tuple[Move, str, Schedule]]:
    """Every one-move change of ``schedule`` that makes it smaller, in order of preference: (move, what it does, the
    candidate).

    The same candidate may come twice (a half that is one fault); the search runs it once.
    """
    # The chaos phase first: every later candidate run is then that much cheaper on a real cluster.
    yield from _chaos_cut(schedule, margins_s)
    yield from _drops(schedule)
    yield from _shortened(schedule, min_duration_s)
    yield from _earlier(schedule, new_overlaps, instant_s)
    yield from _chaos_cut(schedule, margins_s)


def size_text(schedule: Schedule) -> str:
    size = schedule.size()
    return f"{size['faults']:g} faults, {size['fault_seconds']:g} fault-seconds, chaos {size['chaos_s']:g}s"


def _drops(schedule: Schedule) -> Iterator[tuple[Move, str, Schedule]]:
    count = len(schedule.faults)
    parts = 2
    while (chunk := -(-count // parts)) > 1:
        for start in range(0, count, chunk):
            end = min(count, start + chunk)
            kept = schedule.faults[:start] + schedule.faults[end:]
            yield Move.DROP, f"faults {start + 1}-{end} of {count}", replace(schedule, faults=kept)
        parts *= 2
    for i, fault in enumerate(schedule.faults):
        yield Move.DROP, fault.describe(), schedule.without(i)


def _shortened(schedule: Schedule, min_duration_s: float) -> Iterator[tuple[Move, str, Schedule]]:
    for i, fault in enumerate(schedule.faults):
        if fault.duration_s is None:
            continue
        duration = max(min_duration_s, round(fault.duration_s / 2, 1))
        if duration < fault.duration_s:
            yield (
                Move.SHORTEN,
                f"{fault.describe()} to {duration:g}s",
                schedule.with_fault(i, replace(fault, duration_s=duration)),
            )


def _earlier(schedule: Schedule, new_overlaps: bool, instant_s: float) -> Iterator[tuple[Move, str, Schedule]]:
    faults = schedule.faults
    order = sorted(range(len(faults)), key=lambda i: (faults[i].at_s, i))
    overlapping = _overlapping(schedule, instant_s)
    for rank, i in enumerate(order):
        fault = faults[i]
        previous = faults[order[rank - 1]].at_s if rank else 0.0
        gap = fault.at_s - previous
        if gap <= 0:
            continue
        half = fault.at_s - round(previous + gap / 2, 1)
        # All the way first (for the first fault with the rest, that keeps every relation); half way only when it moves
        # enough to matter.
        distances = [gap, *([half] if MIN_SHIFT_S <= half < gap else [])]
        later = order[rank + 1 :]
        groups = [(f"{fault.describe()} and the {len(later)} after it", [i, *later])] if later else []
        for what, moved in [*groups, (fault.describe(), [i])]:
            for by in distances:
                candidate = _shifted(schedule, moved, by)
                if candidate != schedule and (new_overlaps or _overlapping(candidate, instant_s) <= overlapping):
                    yield Move.EARLIER, f"{what} {by:.1f}s earlier", candidate


def _chaos_cut(schedule: Schedule, margins_s: tuple[float, ...]) -> Iterator[tuple[Move, str, Schedule]]:
    for margin in sorted(margins_s):
        chaos_s = float(schedule.fitted(margin).chaos_s)
        if chaos_s < schedule.chaos_s:
            yield (
                Move.CHAOS,
                f"{schedule.chaos_s:g}s to {chaos_s:g}s ({margin:g}s after the last fault ends)",
                replace(schedule, chaos_s=chaos_s),
            )


def _shifted(schedule: Schedule, indices: list[int], by_s: float) -> Schedule:
    faults = list(schedule.faults)
    for i in indices:
        at_s = faults[i].at_s
        faults[i] = replace(faults[i], at_s=min(at_s, max(0.0, round(at_s - by_s, 1))))
    return replace(schedule, faults=tuple(faults))


def _overlapping(schedule: Schedule, instant_s: float) -> set[tuple[int, int]]:
    """Pairs of faults (by index) in force at once, each from its start until it ends (half-open, as the envelope
    counts)."""
    spans = [(f.at_s, f.at_s + (instant_s if f.duration_s is None else f.duration_s)) for f in schedule.faults]
    return {
        (i, j) for i, (a0, a1) in enumerate(spans) for j, (b0, b1) in enumerate(spans) if i < j and a0 < b1 and b0 < a1
    }


def _key(schedule: Schedule) -> str:
    data = schedule.as_json()
    data["chaos_s"] = float(data["chaos_s"])
    return json.dumps(data, sort_keys=True, default=repr)


def _check(tries: int, max_runs: int, confirm: int, min_duration_s: float, margins_s: tuple[float, ...]) -> None:
    if tries < 1:
        raise UserError(f"--tries {tries}: each candidate needs at least 1 try")
    if max_runs < 0:
        raise UserError(f"--max-runs {max_runs}: a budget of runs is 0 or more")
    if confirm < 0:
        raise UserError(f"--confirm {confirm}: confirmation runs are 0 or more")
    if min_duration_s <= 0:
        raise UserError(f"min_duration_s {min_duration_s:g}: a fault lasts more than 0s")
    if any(m < 0 for m in margins_s):
        raise UserError(f"margins_s {margins_s}: a margin after the last fault is 0 or more")
