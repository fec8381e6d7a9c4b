"""The nemesis: the same seed draws the same schedules, and every schedule keeps to its envelope."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import failsafe.faults  # noqa: F401 - registers the fault types
from failsafe.campaigns.nemesis import MIN_DURATION_S, Envelope, Limits, Nemesis, drawable
from failsafe.campaigns.plan import Plan, parse
from failsafe.faults import FAULT_TYPES
from failsafe.faults.draw import Arena

ARENA = Arena(("events-0", "events-1", "events-2"), brokers=3, controllers=3, combined=False, txn_clients=("writer-0",))
SAFE = Limits.of(Envelope.SAFE, ARENA, replication_factor=3, min_insync=2)


def nemesis(limits: Limits = SAFE, chaos_s: float = 30.0, faults: tuple[str, ...] | None = None) -> Nemesis:
    return Nemesis(faults or tuple(drawable()), chaos_s, ARENA, limits)


def away_at_most(schedule, arena: Arena) -> tuple[int, int]:
    """The most brokers and controllers the schedule's faults take away at once, re-derived from their fields."""

    def footprint(f) -> tuple[int, int]:
        fields = f.fields
        if f.fault == "quorum-loss":
            return 0, arena.controllers
        if {"client", "feature", "api", "offset_s", "max_s", "rate_ppm", "mode"} & set(fields):
            # A transactional client, a feature level, a proxy's rule, a clock, the remote store: no node taken away.
            return 0, 0
        if "sides" in fields:
            side = fields["sides"]
            return {
                "{leader,follower} | {others}": (2, 0),
                "{brokers} | {controllers}": (arena.brokers, 0),
                "{controller} | {others}": (0, 1),
            }.get(side, (1, 0))
        if fields.get("role") == "replicas":
            return arena.brokers, 0
        if fields.get("role") == "controller":
            return 0, 1
        return 1, 0

    spans = [
        (f.at_s, f.at_s + (f.duration_s if f.duration_s is not None else 15.0), footprint(f)) for f in schedule.faults
    ]
    worst = (0, 0)
    for t, _, _ in spans:
        live = [fp for a, b, fp in spans if a <= t < b]
        worst = (max(worst[0], sum(b for b, _ in live)), max(worst[1], sum(c for _, c in live)))
    return worst


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), run=st.integers(0, 10_000))
def test_the_same_seed_and_run_draw_the_same_schedule(seed: int, run: int) -> None:
    assert nemesis().schedule(seed, run) == nemesis().schedule(seed, run)


def test_different_runs_draw_different_schedules() -> None:
    schedules = {repr(nemesis().schedule(7, run)) for run in range(50)}
    assert len(schedules) > 45


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), run=st.integers(0, 10_000), chaos_s=st.floats(5, 120))
def test_a_safe_schedule_never_takes_more_than_one_broker_or_one_controller_at_once(
    seed: int, run: int, chaos_s: float
) -> None:
    schedule = nemesis(chaos_s=chaos_s).schedule(seed, run)
    assert schedule.faults, "every run has at least one fault (a draw that fits always exists: pause node 0)"
    brokers, controllers = away_at_most(schedule, ARENA)
    assert brokers <= 1 and controllers <= 1
    for f in schedule.faults:
        assert 0 <= f.at_s <= chaos_s - MIN_DURATION_S + 0.05
        assert f.duration_s is None or (
            MIN_DURATION_S - 0.05 <= f.duration_s and f.end_s <= max(chaos_s, f.at_s + MIN_DURATION_S) + 0.05
        )


def test_anything_goes_draws_what_the_safe_envelope_never_does() -> None:
    anything = nemesis(Limits.of(Envelope.ANYTHING, ARENA, 3, 2))
    worst = [away_at_most(anything.schedule(1, run), ARENA) for run in range(300)]
    assert max(b for b, _ in worst) >= 2 and max(c for _, c in worst) >= 2
    safe = [away_at_most(nemesis().schedule(1, run), ARENA) for run in range(300)]
    assert max(b for b, _ in safe) == 1 and max(c for _, c in safe) == 1


def test_a_safe_nemesis_over_quorum_loss_alone_draws_nothing_that_breaks_the_envelope() -> None:
    # Quorum loss takes every controller: it never fits the safe envelope, so such a campaign has no faults at all.
    assert nemesis(faults=("quorum-loss",)).schedule(3, 0).faults == ()


@pytest.mark.parametrize("run", range(40))
def test_every_drawn_schedule_is_a_scenario_the_lab_takes(run: int) -> None:
    plan = Plan.make("client-matrix", (), Envelope.ANYTHING, 30.0)
    schedule = plan.nemesis.schedule(11, run)
    scenario = parse(plan.base, schedule, f"check-{run}", plan.workload)
    assert [(f.fault, f.at_s, f.duration_s, f.may_fail) for f in scenario.faults] == [
        (f.fault, f.at_s, f.duration_s, True) for f in schedule.faults
    ]


def test_every_fault_type_a_campaign_draws_declares_its_draw() -> None:
    assert set(drawable()) >= {
        "kill",
        "pause",
        "terminate",
        "restart",
        "partition",
        "lossy-link",
        "isolate",
        "cut-clients",
        "quorum-loss",
    }
    assert all(
        FAULT_TYPES[name].draw is None for name in ("kill-consumer", "close-consumer", "kill-driver", "cluster-loss")
    )
