"""A fault type and a scenario kind written here, in the test, register and run through the engine: no file under src/
changes.

The toy fault records its start and its undo; the toy kind has a fake workload, one action of its own
and a judge that reads the history. The engine's cluster is test_engine's fake.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from failsafe import faults
from failsafe.faults import AppliedFault, FaultContext, FaultSpec, FaultTargets, FaultType, Target
from failsafe.history.load import load_history
from failsafe.history.ops import Op, event
from failsafe.scenarios import kinds
from failsafe.scenarios.base import (
    Scenario,
    ScenarioError,
    fault_context,
    parse_actions,
    parse_cluster,
    parse_faults,
    parse_phases,
    refuse_unknown,
    scenario_name,
)
from failsafe.scenarios.engine.actions import ActionContext, ActionType
from failsafe.scenarios.engine.core import Engine, RunSettings, run_scenario
from failsafe.scenarios.kinds import ScenarioKind
from failsafe.scenarios.registry import parse_scenario
from failsafe.scenarios.store.rundir import RunDir
from tests.unit.test_engine import FakeCluster, FakeSampler, FakeWorkload

TOY_NEED = "toy-gizmo"
CALLS: list[str] = []


@dataclass(frozen=True)
class GizmoChoice:
    gizmo: str
    strength: int = 1


def _check_gizmo(params: GizmoChoice, ctx: FaultContext) -> None:
    if params.gizmo not in ctx.clients.get(TOY_NEED, ()):
        raise ctx.fail("gizmo", f"{params.gizmo!r} is not one of the scenario's gizmos {ctx.clients.get(TOY_NEED, ())}")


def _shake(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    CALLS.append(f"shake {spec.params.gizmo} x{spec.params.strength}")
    return AppliedFault(
        "shake",
        Target.CLUSTER,
        [spec.params.gizmo],
        "a gizmo",
        lambda: CALLS.append(f"settle {spec.params.gizmo}"),
        label=f"gizmo {spec.params.gizmo} shaken",
    )


SHAKE = FaultType(
    "shake", "toy", "shake a gizmo", frozenset({TOY_NEED}), _shake, "it settles", GizmoChoice, _check_gizmo
)


def _parse(data: dict, kind: Any) -> Scenario:
    name = scenario_name(data)
    refuse_unknown(data, name, {"name", "description", "gizmos", "faults", "actions", "phases"})
    cluster, phases = parse_cluster(data, name), parse_phases(data, name)
    ctx = fault_context(name, cluster, {}, {TOY_NEED: tuple(data.get("gizmos", ()))})
    return Scenario(
        name=name,
        description="",
        seed="",
        cluster=cluster,
        faults=parse_faults(data, name, kind, ctx, phases),
        actions=parse_actions(data, name, kind),
        phases=phases,
        raw=data,
    )


def _polish(spec: Any, a: ActionContext) -> None:
    CALLS.append("polish")
    a.run.recorder.record(event(Op.ELECT_LEADERS, process="toy", elected=["polished"]))


def _judge(run_dir: RunDir, scenario: Any) -> tuple[dict, Any]:
    history = load_history(run_dir.history_path)
    return {"valid": history.faults.height == 1 and history.faults["stop_ns"][0] is not None, "checkers": {}}, history


TOY = ScenarioKind(
    name="toy",
    summary="a toy kind",
    parser=_parse,
    workload=lambda scenario: FakeWorkload(),
    judge=_judge,
    show=lambda *_: None,
    report=lambda run_dir, results, history: run_dir.report_path,
    offers=frozenset({TOY_NEED}),
    checkers=(),
    actions={"polish": ActionType("polish", "polish the gizmos", _polish)},
)


@pytest.fixture
def registered() -> Iterator[None]:
    CALLS.clear()
    faults.register(SHAKE)
    kinds.register(TOY)
    yield
    kinds.unregister("toy")
    faults.unregister("shake")


TOY_SCENARIO = {
    "kind": "toy",
    "name": "toy-run",
    "gizmos": ["g1", "g2"],
    "phases": {"warmup_s": 0, "chaos_s": 0.05, "recover_s": 0},
    "faults": [{"fault": "shake", "gizmo": "g2", "strength": 3, "at_s": 0, "duration_s": 0.01}],
    "actions": [{"action": "polish", "phase": "recover"}],
}


def test_a_toy_fault_and_a_toy_kind_run_through_the_engine(registered: None, tmp_path: Path) -> None:
    scenario = parse_scenario(dict(TOY_SCENARIO))
    assert (
        scenario.kind == "toy" and scenario.raw["kind"] == "toy" and scenario.faults[0].params == GizmoChoice("g2", 3)
    )
    kind = kinds.kind_of(scenario)
    engine = Engine(
        scenario,
        kind.workload(scenario),
        RunDir.create(tmp_path, scenario),
        FakeCluster(),
        RunSettings("4.3.1", {}, lambda _: None, lambda _: None, actions=kind.actions, sampler=FakeSampler()),
    )
    run_dir = run_scenario(engine)
    assert CALLS == ["shake g2 x3", "settle g2", "polish"]
    results, history = kinds.kind_of_run(run_dir).judge(run_dir, scenario)
    assert results["valid"] is True
    (row,) = history.faults.to_dicts()
    assert (row["fault"], row["family"], row["label"], row["nodes"]) == ("shake", "toy", "gizmo g2 shaken", ["g2"])
    assert history.events.filter(history.events["process"] == "toy").height == 1


def test_the_toy_fault_is_validated_by_its_own_type_and_refused_where_no_kind_offers_it(registered: None) -> None:
    with pytest.raises(ScenarioError, match=r"toy-run.faults\[0\].gizmo: 'g9' is not one of the scenario's gizmos"):
        parse_scenario({**TOY_SCENARIO, "faults": [{"fault": "shake", "gizmo": "g9", "at_s": 0}]})
    with pytest.raises(ScenarioError, match=r"toy-run.faults\[0\].colour: is not a field of this fault"):
        parse_scenario({**TOY_SCENARIO, "faults": [{"fault": "shake", "gizmo": "g1", "colour": "red", "at_s": 0}]})
    lab = {
        "name": "lab-run",
        "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}],
        "faults": [{"fault": "shake", "gizmo": "g1", "at_s": 0}],
    }
    with pytest.raises(
        ScenarioError, match=r"'shake' is not one of kill-consumer.* \('shake' needs what lab scenarios do not offer\)"
    ):
        parse_scenario(lab)
    # And the kind's own action is the kind's: a lab scenario cannot take it.
    with pytest.raises(ScenarioError, match="'polish' is not an action lab scenarios take"):
        parse_scenario({**{k: v for k, v in lab.items() if k != "faults"}, "actions": [{"action": "polish"}]})


def test_a_second_type_or_kind_of_one_name_is_refused(registered: None) -> None:
    with pytest.raises(ValueError, match="already registered"):
        faults.register(dataclasses.replace(SHAKE))
    with pytest.raises(ValueError, match="already registered"):
        kinds.register(dataclasses.replace(TOY))


# What each shipped kind offers its faults, its workload must do: a kind offering a client need implements
# ClientTargets.
CLIENT_NEEDS = {"consumers", "spark-driver", "spark-workers"}


@pytest.mark.parametrize("kind_name", sorted(kinds.KINDS))
def test_a_kind_offering_its_clients_to_faults_has_a_workload_that_acts_on_them(kind_name: str) -> None:
    from failsafe.scenarios.registry import catalog_names, load_scenario

    kind = kinds.KINDS[kind_name]
    # A kind the catalog has no scenario of (app: it runs your program) has one in examples/.
    examples = sorted(Path(__file__).parents[2].glob("examples/*/*.toml"))
    scenario = next(
        s
        for s in (*map(load_scenario, catalog_names()), *map(load_scenario, map(str, examples)))
        if s.kind == kind_name
    )
    workload = kind.workload(scenario)
    if CLIENT_NEEDS & set(kind.offers):
        for method in ("kill_client", "close_client", "restart_client", "process_of", "wait_settled"):
            assert callable(getattr(workload, method, None)), (
                f"{kind_name} offers {sorted(CLIENT_NEEDS & set(kind.offers))} but cannot {method}"
            )
    # Every fault the kind takes is one whose needs it offers: none can reach a workload that cannot do it.
    assert all(faults.FAULT_TYPES[name].needs <= kind.offers for name in faults.allowed(kind.offers))
