"""Shrinking any schedule the nemesis could draw, against an oracle that answers at random: what holds whatever it says.

Each generated fault carries its own number in its fields, so a fault can be followed through every
candidate the oracle is given.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failsafe.campaigns.schedule import Planned, Schedule
from failsafe.campaigns.shrink import INSTANT_S, MIN_DURATION_S, candidates, shrink

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TENTHS = 10


@st.composite
def schedules(draw: st.DrawFn) -> Schedule:
    chaos_s = float(draw(st.integers(4, 120)))
    faults = []
    for n in range(draw(st.integers(0, 7))):
        at_tenths = draw(st.integers(0, int((chaos_s - 2) * TENTHS)))
        at_s = at_tenths / TENTHS
        instant = draw(st.booleans())
        longest = min(15 * TENTHS, int(chaos_s * TENTHS) - at_tenths)  # as the nemesis draws
        duration_s = None if instant else draw(st.integers(2 * TENTHS, longest)) / TENTHS
        faults.append(
            Planned(draw(st.sampled_from(["kill", "pause", "restart", "partition"])), at_s, duration_s, {"n": n})
        )
    return Schedule(chaos_s, tuple(sorted(faults, key=lambda f: f.at_s)))


def no_larger(after: Schedule, before: Schedule) -> bool:
    return all(after.size()[k] <= before.size()[k] for k in before.size())


def smaller_or_earlier(after: Schedule, before: Schedule) -> bool:
    return after.size() != before.size() or sum(f.at_s for f in after.faults) < sum(f.at_s for f in before.faults)


def overlapping(schedule: Schedule) -> set[tuple[int, int]]:
    spans = {
        f.fields["n"]: (f.at_s, f.at_s + (INSTANT_S if f.duration_s is None else f.duration_s)) for f in schedule.faults
    }
    return {(a, b) for a, (a0, a1) in spans.items() for b, (b0, b1) in spans.items() if a < b and a0 < b1 and b0 < a1}


@SETTINGS
@given(schedules())
def test_every_candidate_is_no_larger_and_smaller_or_earlier(schedule: Schedule) -> None:
    for _move, _detail, candidate in candidates(schedule):
        assert no_larger(candidate, schedule) and smaller_or_earlier(candidate, schedule), candidate


@SETTINGS
@given(
    schedules(),
    st.randoms(use_true_random=False),
    st.floats(0.0, 1.0),
    st.sets(st.integers(0, 6)),
    st.integers(1, 4),
    st.integers(0, 150),
    st.integers(0, 3),
)
def test_whatever_the_oracle_says(
    original: Schedule, rng: random.Random, p: float, needed: set[int], tries: int, max_runs: int, confirm: int
) -> None:
    seen: list[Schedule] = []
    lines: list[str] = []

    def oracle(schedule: Schedule) -> bool:
        # Reproduces, with probability p, while the faults numbered in ``needed`` are all there, so the search gets past
        # the drops.
        seen.append(schedule)
        return needed <= {f.fields["n"] for f in schedule.faults} and rng.random() < p

    result = shrink(original, oracle, tries=tries, max_runs=max_runs, confirm=confirm, progress=lines.append)

    assert len(seen) == len(lines) == result.runs + result.confirm_runs <= max_runs + confirm
    assert result.confirm_runs == confirm and seen[len(seen) - confirm :] == [result.smallest] * confirm
    assert result.runs == max_runs if result.budget_spent else result.runs <= max_runs
    chain = [original, *(s.schedule for s in result.steps)]
    assert chain[-1] == result.smallest
    for before, step in zip(chain, result.steps, strict=False):
        assert step.before == before.size() and step.after == step.schedule.size()
        assert no_larger(step.schedule, before) and smaller_or_earlier(step.schedule, before)
        assert 1 <= step.runs <= tries

    by_number = {f.fields["n"]: f for f in original.faults}
    pairs = overlapping(original)
    for schedule in seen:
        assert schedule.chaos_s <= original.chaos_s
        assert overlapping(schedule) <= pairs
        for f in schedule.faults:
            was = by_number[f.fields["n"]]
            assert (f.fault, f.fields) == (was.fault, was.fields)
            assert 0.0 <= f.at_s <= was.at_s and abs(f.at_s * TENTHS - round(f.at_s * TENTHS)) < 1e-6
            assert f.end_s <= schedule.chaos_s
            if was.duration_s is None:
                assert f.duration_s is None
            else:
                assert (
                    f.duration_s is not None and min(MIN_DURATION_S, was.duration_s) <= f.duration_s <= was.duration_s
                )
