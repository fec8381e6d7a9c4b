"""Shrinking against fake engines: one whose anomaly needs a kill of a leader overlapping a pause of a follower.

The fakes record every schedule they are given; the tests check the records afterwards.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from failsafe.campaigns.schedule import Planned, Schedule
from failsafe.campaigns.shrink import MIN_DURATION_S, Move, candidates, shrink
from failsafe.errors import UserError

KILL_LEADER = Planned("kill", 20.0, 10.0, {"role": "leader", "partition": "t-0"})
PAUSE_FOLLOWER = Planned("pause", 26.0, 8.0, {"role": "follower", "partition": "t-0"})
# Decoys: the same fault types aimed at the other role, and faults of other types, some overlapping the two.
ORIGINAL = Schedule(
    60.0,
    (
        Planned("pause", 2.0, 5.0, {"role": "leader", "partition": "t-1"}),
        Planned("partition", 8.0, 12.0, {"role": "controller"}),
        Planned("restart", 14.0, None, {"node": 1}),
        KILL_LEADER,
        Planned("kill", 24.0, 6.0, {"role": "follower", "partition": "t-1"}),
        PAUSE_FOLLOWER,
        Planned("lossy-link", 35.0, 9.0, {"node": 2}),
        Planned("kill", 40.0, 4.0, {"role": "controller"}),
    ),
)


def overlap(a: Planned, b: Planned) -> bool:
    return a.at_s < b.end_s and b.at_s < a.end_s


def is_kill_leader(f: Planned) -> bool:
    return f.fault == "kill" and f.fields.get("role") == "leader"


def is_pause_follower(f: Planned) -> bool:
    return f.fault == "pause" and f.fields.get("role") == "follower"


def anomaly(schedule: Schedule) -> bool:
    return any(
        is_kill_leader(k) and is_pause_follower(p) and overlap(k, p) for k in schedule.faults for p in schedule.faults
    )


@dataclass
class FakeEngine:
    """Shows the anomaly with probability ``p`` whenever a kill of a leader overlaps a pause of a follower."""

    p: float = 1.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    runs: list[Schedule] = field(default_factory=list)

    def __call__(self, schedule: Schedule) -> bool:
        self.runs.append(schedule)
        return anomaly(schedule) and self.rng.random() < self.p


def assert_found_the_pair(original: Schedule, smallest: Schedule) -> None:
    assert [(f.fault, f.fields) for f in smallest.faults] == [
        (f.fault, f.fields) for f in (KILL_LEADER, PAUSE_FOLLOWER)
    ]
    kill, pause = smallest.faults
    assert overlap(kill, pause)
    assert smallest.chaos_s < original.chaos_s
    assert smallest.fault_seconds < original.fault_seconds


def test_a_deterministic_anomaly_shrinks_to_the_two_overlapping_faults() -> None:
    engine = FakeEngine()
    result = shrink(ORIGINAL, engine, tries=3, max_runs=500)
    assert_found_the_pair(ORIGINAL, result.smallest)
    # A local minimum: both at the minimum duration, together at 0, the chaos phase as long as they last.
    assert result.smallest == Schedule(
        1.0, (replace_timing(KILL_LEADER, 0.0, MIN_DURATION_S), replace_timing(PAUSE_FOLLOWER, 0.0, MIN_DURATION_S))
    )
    assert not any(anomaly(c) for _, _, c in candidates(result.smallest))
    assert not result.budget_spent and result.shrunk and not result.unconfirmed
    assert {s.move for s in result.steps} == set(Move)
    # The chaos phase is cut first (every later run is cheaper), then the drops: each half holds one of the pair, a
    # quarter goes.
    assert (result.steps[0].move, result.steps[0].after["faults"]) == (Move.CHAOS, 8)
    assert (result.steps[1].move, result.steps[1].after["faults"]) == (Move.DROP, 6)
    assert result.steps[0].after["chaos_s"] < ORIGINAL.chaos_s
    assert all(s.runs == 1 for s in result.steps)  # an anomaly that always shows is accepted at its first try
    assert (result.confirm_runs, result.confirm_reproduced) == (3, 3)
    assert result.steps[-1].schedule == result.smallest and result.steps[0].before == ORIGINAL.size()
    assert "reproduced 3 of 3 confirmation runs" in result.summary()[-1]


def replace_timing(f: Planned, at_s: float, duration_s: float) -> Planned:
    return Planned(f.fault, at_s, duration_s, f.fields)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_flaky_anomaly_still_shrinks_to_the_two_faults(seed: int) -> None:
    # Half the runs of a reproducing schedule show it; 12 tries miss one with probability 2**-12.
    engine = FakeEngine(p=0.5, rng=random.Random(seed))
    result = shrink(ORIGINAL, engine, tries=12, max_runs=5000)
    assert_found_the_pair(ORIGINAL, result.smallest)
    assert not result.budget_spent
    assert any(s.runs > 1 for s in result.steps) and all(s.runs <= 12 for s in result.steps)
    assert result.runs + result.confirm_runs == len(engine.runs)
    assert result.reproductions == sum(
        1 for s in result.steps
    )  # each accepted candidate stopped at its first reproduction
    assert result.confirm_runs == 12 and 0 < result.confirm_reproduced < 12


def test_an_anomaly_that_never_reproduces_gives_back_the_original_and_says_so() -> None:
    original = ORIGINAL.without(0)  # 7 faults: the last quarter is the last fault, which also goes alone
    calls: list[Schedule] = []

    def never(schedule: Schedule) -> bool:
        calls.append(schedule)
        return False

    result = shrink(original, never, tries=2, max_runs=10_000, confirm=4)
    assert result.smallest == original and result.steps == () and not result.shrunk
    assert result.reproductions == 0 and not result.budget_spent
    offered = [repr(c) for _, _, c in candidates(original)]
    assert len(set(offered)) < len(offered)
    assert result.runs == 2 * len(set(offered))  # every distinct candidate had all its tries, once
    assert calls[-4:] == [original] * 4
    assert (result.confirm_runs, result.confirm_reproduced) == (4, 0) and result.unconfirmed
    lines = result.summary()
    assert lines[0].startswith("no smaller schedule reproduced") and "none of 4 confirmation runs" in lines[-1]


@pytest.mark.parametrize("max_runs", [0, 1, 7, 25])
def test_the_budget_bounds_the_oracle_calls(max_runs: int) -> None:
    engine = FakeEngine(p=0.5, rng=random.Random(4))
    result = shrink(ORIGINAL, engine, tries=3, max_runs=max_runs, confirm=2)
    assert len(engine.runs) == result.runs + 2 <= max_runs + 2
    assert result.budget_spent and result.runs == max_runs
    assert any("budget of" in line for line in result.summary())


def test_steps_never_grow_and_each_makes_something_smaller_or_earlier() -> None:
    result = shrink(ORIGINAL, FakeEngine(), max_runs=500)
    for step in result.steps:
        assert all(step.after[k] <= step.before[k] for k in step.before), step
    accepted = [s.schedule for s in result.steps]
    assert len(accepted) > 5
    for before, after in zip([ORIGINAL, *accepted[:-1]], accepted, strict=True):
        smaller = after.size() != before.size()
        earlier = sum(f.at_s for f in after.faults) < sum(f.at_s for f in before.faults)
        assert smaller or earlier


def test_a_fault_without_duration_keeps_none() -> None:
    restart = Planned("restart", 10.0, None, {"node": 0})
    schedule = Schedule(30.0, (restart, Planned("kill", 12.0, 6.0, {"role": "leader"})))
    seen: list[Schedule] = []

    def needs_the_restart(s: Schedule) -> bool:
        seen.append(s)
        return any(f.fault == "restart" for f in s.faults)

    result = shrink(schedule, needs_the_restart, max_runs=200)
    assert [f.fault for f in result.smallest.faults] == ["restart"]
    assert all(f.duration_s is None for s in seen for f in s.faults if f.fault == "restart")


def test_moving_earlier_never_makes_new_overlaps_unless_asked() -> None:
    kill = Planned("kill", 0.0, 5.0, {"role": "leader"})
    pause = Planned("pause", 30.0, 5.0, {"role": "follower"})
    schedule = Schedule(40.0, (kill, pause))

    def both(s: Schedule) -> bool:
        return len(s.faults) == 2

    apart = shrink(schedule, both, max_runs=200, min_duration_s=5.0).smallest
    assert apart.faults[1].at_s >= apart.faults[0].end_s
    together = shrink(schedule, both, max_runs=200, min_duration_s=5.0, new_overlaps=True).smallest
    assert together.faults[1].at_s == 0.0


def test_progress_has_a_line_per_attempt_and_steps_are_reported_as_accepted() -> None:
    lines: list[str] = []
    accepted = []
    engine = FakeEngine(p=0.5, rng=random.Random(5))
    result = shrink(ORIGINAL, engine, tries=4, max_runs=60, progress=lines.append, on_step=accepted.append)
    assert len(lines) == len(engine.runs)
    assert lines[0].startswith("run 1/60: chaos") and lines[-1].startswith("confirm 4/4")
    assert tuple(accepted) == result.steps


@pytest.mark.parametrize(
    ("option", "value"), [("tries", 0), ("max_runs", -1), ("confirm", -1), ("min_duration_s", 0.0)]
)
def test_bad_options_are_refused_before_any_run(option: str, value: float) -> None:
    engine = FakeEngine()
    with pytest.raises(UserError):
        shrink(ORIGINAL, engine, **{option: value})
    assert engine.runs == []
