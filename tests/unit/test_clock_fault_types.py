"""Clock faults without a cluster: their fields and what they refuse, the cluster they need, their settings and draws,
and a campaign that draws them only when asked."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

import failsafe.faults  # noqa: F401 - registers the fault types
from failsafe.cluster.clocks import Setting
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES, FaultContext, FaultError, Need
from failsafe.faults import clock as clock_faults
from failsafe.faults.clock import DriftAim, JumpAim, SkewAim
from failsafe.faults.draw import Arena
from failsafe.history.ops import Family
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.registry import load_scenario

CLOCK = sorted(name for name, t in FAULT_TYPES.items() if t.family == Family.CLOCK)
CTX = FaultContext(where="s.faults[0]", topics={"t": 3}, clients={"transactional-ids": ("writer-0",)})
TEN_YEARS_S = 10 * 365 * 86400


def test_the_three_clock_faults_are_registered_and_need_clocks_apart() -> None:
    assert CLOCK == ["clock-drift", "clock-jump", "clock-skew"]
    params = {"clock-jump": JumpAim, "clock-skew": SkewAim, "clock-drift": DriftAim}
    for name in CLOCK:
        fault = FAULT_TYPES[name]
        assert fault.family == Family.CLOCK == "clock"
        assert fault.params is params[name] and fault.needs == frozenset({Need.NODES})
        assert fault.cluster_needs == ("clock_faults",)
        assert "--clock-faults" in (fault.fits(ClusterSpec()) or "")
        assert fault.fits(ClusterSpec(clock_faults=True)) is None
        assert fault.draw is not None


def test_fits_asks_the_spec_for_clock_faults_alone() -> None:
    assert clock_faults._fits(object()) == clock_faults.NEEDS_CLOCKS
    assert clock_faults._fits(ClusterSpec(clock_faults=False)) == clock_faults.NEEDS_CLOCKS
    assert clock_faults._fits(ClusterSpec(clock_faults=True)) is None


@pytest.mark.parametrize(
    ("fault", "table", "field", "fragment"),
    [
        ("clock-jump", {}, "offset_s", "not zero"),
        ("clock-jump", {"offset_s": 0}, "offset_s", "not zero"),
        ("clock-jump", {"offset_s": -0.0}, "offset_s", "not zero"),
        ("clock-jump", {"offset_s": TEN_YEARS_S + 1}, "offset_s", "ten years"),
        ("clock-jump", {"offset_s": -TEN_YEARS_S - 1}, "offset_s", "ten years"),
        ("clock-jump", {"offset_s": "1h"}, "offset_s", "expected float"),
        ("clock-jump", {"offset_s": float("inf")}, "offset_s", "finite"),
        ("clock-skew", {}, "max_s", "above zero"),
        ("clock-skew", {"max_s": 0}, "max_s", "above zero"),
        ("clock-skew", {"max_s": -5}, "max_s", "above zero"),
        ("clock-skew", {"max_s": TEN_YEARS_S + 1}, "max_s", "ten years"),
        ("clock-skew", {"max_s": 5, "seed": 1.5}, "seed", "expected int"),
        ("clock-drift", {}, "rate_ppm", "not zero"),
        ("clock-drift", {"rate_ppm": 0}, "rate_ppm", "not zero"),
        ("clock-drift", {"rate_ppm": 1_000_001}, "rate_ppm", "1e+06"),
        ("clock-drift", {"rate_ppm": -1_000_001}, "rate_ppm", "1e+06"),
        ("clock-jump", {"offset_s": 60, "role": "king"}, "role", "is not one of"),
        ("clock-skew", {"max_s": 5, "role": "every"}, "role", "is not one of"),
        ("clock-jump", {"offset_s": 60, "node": 3}, "node", "not a broker"),
        ("clock-drift", {"rate_ppm": 500, "node": -1}, "node", "not a broker"),
        ("clock-jump", {"offset_s": 60, "role": "any", "node": 7}, "node", "not a broker"),
        ("clock-jump", {"offset_s": 60, "role": "leader"}, "partition", "TOPIC-N"),
        ("clock-jump", {"offset_s": 60, "role": "replicas", "partition": "t-3"}, "partition", "TOPIC-N"),
        ("clock-skew", {"max_s": 5, "role": "txn-coordinator", "transactional_id": "x"}, "transactional_id", "x"),
        ("clock-drift", {"rate_ppm": 500, "role": "group-coordinator"}, "group", "needs the group"),
        ("clock-jump", {"offset_s": 60, "seed": 1}, "seed", "not a field"),
        ("clock-drift", {"rate_ppm": 500, "max_s": 5}, "max_s", "not a field"),
    ],
)
def test_a_bad_field_is_named(fault: str, table: dict, field: str, fragment: str) -> None:
    with pytest.raises(FaultError, match=rf"s\.faults\[0\]\.{field}") as raised:
        FAULT_TYPES[fault].parse(table, CTX)
    assert fragment in str(raised.value)


def test_good_fields_parse_and_aim_at_every_node_by_default() -> None:
    jump = FAULT_TYPES["clock-jump"].parse({"offset_s": -3600}, CTX)
    assert jump == JumpAim(offset_s=-3600.0) and jump.role == clock_faults.EVERY_NODE == "all"
    assert (jump.node, jump.partition) == (None, None) and isinstance(jump.offset_s, float)
    skew = FAULT_TYPES["clock-skew"].parse({"max_s": 0.5, "seed": 7}, CTX)
    assert (skew.max_s, skew.seed, skew.role) == (0.5, 7, "all")
    drift = FAULT_TYPES["clock-drift"].parse({"rate_ppm": -50000}, CTX)
    assert (drift.rate_ppm, drift.role) == (-50000.0, "all")


@pytest.mark.parametrize(
    ("fault", "table"),
    [
        ("clock-jump", {"offset_s": TEN_YEARS_S}),
        ("clock-jump", {"offset_s": -TEN_YEARS_S}),
        ("clock-jump", {"offset_s": 0.001}),
        ("clock-skew", {"max_s": TEN_YEARS_S}),
        ("clock-drift", {"rate_ppm": 1_000_000}),
        ("clock-drift", {"rate_ppm": -1_000_000}),
        ("clock-drift", {"rate_ppm": 0.5}),
        ("clock-jump", {"offset_s": 60, "node": 2}),
        ("clock-jump", {"offset_s": 60, "role": "any"}),
        ("clock-jump", {"offset_s": 60, "role": "controller"}),
        ("clock-jump", {"offset_s": 60, "role": "replicas", "partition": "t-2"}),
        ("clock-skew", {"max_s": 5, "role": "leader", "partition": "t-0"}),
        ("clock-drift", {"rate_ppm": 500, "role": "txn-coordinator", "transactional_id": "writer-0"}),
        ("clock-drift", {"rate_ppm": 500, "role": "group-coordinator", "group": "g"}),
    ],
)
def test_the_limits_and_the_node_faults_choices_are_taken(fault: str, table: dict) -> None:
    params = FAULT_TYPES[fault].parse(table, CTX)
    assert {k: getattr(params, k) for k in table} == table


def test_a_node_beyond_a_smaller_cluster_is_refused() -> None:
    small = FaultContext(where="s.faults[2]", brokers=1)
    FAULT_TYPES["clock-jump"].parse({"offset_s": 60, "node": 0}, small)
    with pytest.raises(FaultError, match=r"s\.faults\[2\]\.node: 1 is not a broker .*\(0-0\)"):
        FAULT_TYPES["clock-jump"].parse({"offset_s": 60, "node": 1}, small)


def test_each_fault_holds_the_clocks_as_it_says() -> None:
    paths = [Path(f"/c/clocks/server-{i}") for i in range(3)]
    jump = clock_faults._settings("clock-jump", JumpAim(offset_s=-60.0), paths)
    assert jump == [Setting(p, -60.0) for p in paths]
    drift = clock_faults._settings("clock-drift", DriftAim(rate_ppm=500.0), paths)
    assert drift == [Setting(p, 0.0, 500.0) for p in paths]
    skew = clock_faults._settings("clock-skew", SkewAim(max_s=600.0, seed=11), paths)
    assert [s.path for s in skew] == paths and all(s.drift_ppm == 0 for s in skew)
    assert all(-600 <= s.offset_s <= 600 and round(s.offset_s, 3) == s.offset_s for s in skew)
    assert len({s.offset_s for s in skew}) == 3, "each node apart by its own offset"
    assert skew == clock_faults._settings("clock-skew", SkewAim(max_s=600.0, seed=11), paths), "the seed decides"
    assert skew != clock_faults._settings("clock-skew", SkewAim(max_s=600.0, seed=12), paths)


def test_a_fault_is_labelled_by_what_it_does() -> None:
    assert clock_faults._label("clock-jump", JumpAim(offset_s=3600.0)) == "clock-jump +3600s"
    assert clock_faults._label("clock-jump", JumpAim(offset_s=-60.0)) == "clock-jump -60s"
    assert clock_faults._label("clock-skew", SkewAim(max_s=5.0)) == "clock-skew ±5s"
    assert clock_faults._label("clock-drift", DriftAim(rate_ppm=-50000.0)) == "clock-drift -50000ppm"


@pytest.mark.parametrize("fault", CLOCK)
def test_every_draw_is_a_fault_a_scenario_could_write_and_takes_no_node(fault: str) -> None:
    arena = Arena(("t-0", "t-1", "t-2"), brokers=3, txn_clients=("writer-0",))
    rng = random.Random(53)
    kinds = {"clock-jump": "offset_s", "clock-skew": "max_s", "clock-drift": "rate_ppm"}
    amounts, nodes = set(), set()
    for _ in range(60):
        drawn = FAULT_TYPES[fault].draw(rng, arena)  # type: ignore[misc]
        assert (drawn.brokers, drawn.controllers) == (0, 0)
        params = FAULT_TYPES[fault].parse(drawn.fields, CTX)
        assert params.role == "all"
        amounts.add(drawn.fields[kinds[fault]])
        nodes.add(drawn.fields.get("node"))
    assert len(amounts) > 1, "the amount is part of the draw"
    assert nodes == {None, 0, 1, 2}, "every node, or one of them"


def test_a_skews_draw_draws_its_seed() -> None:
    rng = random.Random(1)
    seeds = {FAULT_TYPES["clock-skew"].draw(rng, Arena(("t-0",))).fields["seed"] for _ in range(10)}  # type: ignore[misc]
    assert len(seeds) == 10


def test_a_scenario_with_a_clock_fault_gets_a_cluster_with_clocks_apart() -> None:
    scenario = load_scenario("retention-clock-jump")
    assert [f.fault for f in scenario.faults] == ["clock-jump"]
    needs = needs_of([scenario])
    assert needs.clock_faults
    spec = spec_for(needs, None, None, None)
    assert spec.clock_faults
    assert misfit(spec, needs, [scenario]) is None
    assert "--clock-faults" in (misfit(replace(spec, clock_faults=False), needs, [scenario]) or "")
    assert not needs_of([load_scenario("broker-failover")]).clock_faults


def test_clocks_apart_are_refused_on_hosts() -> None:
    placed = ClusterSpec(clock_faults=True, placement={f"server-{i}": "10.0.0.2" for i in (0, 1, 2, 1000)})
    with pytest.raises(UserError, match="--clock-faults"):
        placed.validate()


def test_a_campaign_draws_clock_faults_when_asked_and_its_cluster_then_sets_clocks_apart() -> None:
    from failsafe.campaigns.nemesis import Envelope, drawable, drawn_by_default
    from failsafe.campaigns.plan import Plan

    assert set(CLOCK) <= set(drawable())
    assert not set(CLOCK) & set(drawn_by_default())
    default = Plan.make("acks-all", (), Envelope.SAFE, 20)
    assert not set(default.nemesis.faults) & set(CLOCK) and not default.scenario.cluster.clock_faults
    asked = Plan.make("acks-all", ("clock-skew", "kill"), Envelope.SAFE, 20)
    assert asked.scenario.cluster.clock_faults and needs_of([asked.scenario]).clock_faults
    assert not asked.scenario.cluster.protocol_proxy
