"""Actions a scenario takes at a time: one type each, run by the engine through the context it hands them.

A kind declares the actions its scenarios take (``ScenarioKind.actions``): these common ones, and
its own (the DR kind's failover and failback, which move its workload's clients). The engine knows
no action by name: it runs the declared type's ``run`` with an ``ActionContext``.

    elect-leaders  a preferred leader election (seed 000's kafka-leader-election)
    create-topic   a topic created while the schedule runs, recorded as an op (does metadata still change?)
    migrate        the live ZooKeeper-to-KRaft migration, each step a window in the history

and the cluster's life (scenarios/engine/lifecycle_actions.py): rolling-upgrade, add-controller, remove-controller,
set-feature, add-broker, reassign-partitions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from failsafe.cluster.site import RunSite
from failsafe.cluster.spec import ZOOKEEPER_MODE
from failsafe.history.ops import Family, Target, fault_start, fault_stop
from failsafe.scenarios.base import ActionSpec, Scenario
from failsafe.scenarios.engine import lifecycle_actions as lifecycle
from failsafe.scenarios.engine import setup
from failsafe.scenarios.engine.plugin import RunContext

CREATE_TOPIC_NAME = "create-topic"


class Background:
    """An action's work that goes on beside the schedule (a move waited on while the schedule kills one of its
    brokers): a thread each, waited on before the chaos phase ends, told to stop (``stopping``) when the run closes.
    The work bounds its own waits; an error it raises is one line in the run's events."""

    def __init__(self, event: Callable[[str], None]) -> None:
        self.stopping = threading.Event()
        self._event = event
        self._threads: list[threading.Thread] = []

    def spawn(self, name: str, work: Callable[[threading.Event], None]) -> None:
        def run() -> None:
            try:
                work(self.stopping)
            except Exception as e:  # noqa: BLE001 - said in the run's events; the action recorded its own window
                self._event(f"{name} failed: {type(e).__name__}: {e}")

        thread = threading.Thread(target=run, name=f"failsafe-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def running(self) -> list[str]:
        return [t.name for t in self._threads if t.is_alive()]

    def stop(self, timeout_s: float) -> list[str]:
        """Tell every work to stop and wait ``timeout_s`` for each; returns those still running."""
        self.stopping.set()
        for thread in self._threads:
            thread.join(timeout_s)
        return self.running()


@dataclass(frozen=True)
class ActionContext:
    """What the engine hands an action: the scenario, the cluster it runs on, its workload, the run, and fault ids for
    windows."""

    scenario: Scenario
    cluster: RunSite
    workload: Any
    run: RunContext
    status: Callable[[str], None]
    new_fault_id: Callable[[], int]
    background: Background = field(default_factory=lambda: Background(lambda _: None))

    def window_start(
        self,
        fault: str,
        family: str,
        role: str,
        node: Any = None,
        nodes: list | None = None,
        target: Target = Target.CONTROLLER,
    ) -> int:
        """A step of an operation begins, recorded as a fault window (on ``node``, else on ``nodes`` of ``target``, or
        on the quorum): the checkers measure what it cost like a fault's. Returns its id for ``window_stop``."""
        fault_id = self.new_fault_id()
        on = [node.node_id] if node is not None else list(nodes or [])
        target = node.role if node is not None else target if nodes else Target.QUORUM
        self.run.recorder.record(fault_start(fault_id, fault, target=target, nodes=on, role=role, family=family))
        return fault_id

    def window_stop(self, fault_id: int, fault: str, ok: bool = True, error: str | None = None) -> None:
        """The step ended (``ok``), or failed with ``error``: a window that never stopped."""
        self.run.recorder.record(fault_stop(fault_id, fault, ok, 1, error=error))

    def steps(self, family: str, words: str) -> tuple[Callable[[Any], None], Callable[[Any, bool, str | None], None]]:
        """The (started, done) observers of an operation whose steps have ``kind``, ``description`` and ``node``
        (the migration's, a rolling upgrade's): each step a window of ``family``, announced as "WORDS: ..."."""
        ids: dict[int, int] = {}

        def started(step: Any) -> None:
            described = getattr(step, "name", None)
            role = f"{described}: {step.description}" if described else step.description
            ids[id(step)] = self.window_start(step.kind, family, role, node=step.node)
            self.run.event(f"{words}: {step.description}")

        def done(step: Any, ok: bool, error: str | None) -> None:
            self.window_stop(ids[id(step)], step.kind, ok, error)

        return started, done


def _any_scenario(spec: ActionSpec, scenario: Scenario) -> str | None:
    return None


@dataclass(frozen=True)
class ActionType:
    name: str
    summary: str
    run: Callable[[ActionSpec, ActionContext], None]
    validate: Callable[[ActionSpec, Scenario], str | None] = _any_scenario  # why a scenario cannot take it, or None


def _elect_leaders(spec: ActionSpec, a: ActionContext) -> None:
    a.run.event("preferred leader election")
    setup.elect_leaders(a.cluster.bootstrap_servers, a.run.recorder)


def created_topic(spec: ActionSpec, scenario: Scenario) -> str:
    """The topic a create-topic action creates."""
    return spec.topic or f"{scenario.name}-created"


def created_topics(scenario: Scenario) -> tuple[str, ...]:
    """Every topic the scenario's create-topic actions create (an earlier run's are deleted before a run:
    scenarios/engine/setup.py)."""
    return tuple(dict.fromkeys(created_topic(s, scenario) for s in scenario.actions if s.action == CREATE_TOPIC_NAME))


def _create_topic(spec: ActionSpec, a: ActionContext) -> None:
    topic = created_topic(spec, a.scenario)
    outcome = setup.attempt_create_topic(a.cluster.bootstrap_servers, topic, a.run.recorder)
    a.run.event(f"create topic {topic}: {outcome}")


def _migrate(spec: ActionSpec, a: ActionContext) -> None:
    """The live migration to KRaft; each step is a window in the history (family migration: the ``roll`` of a node, or a
    ``migration`` step), so the checkers measure every partition's unavailability during each roll. A failed step is
    recorded and the run goes on to its checks: the scenario's expectations say the migration did not complete."""
    from failsafe.cluster.modes.migration import MigrationFailed, migrate

    started, done = a.steps(Family.MIGRATION, "migration")
    try:
        migrate(a.cluster, lambda message: a.status(f"{a.scenario.name} · migration · {message}"), started, done)
    except MigrationFailed as e:
        a.run.event(f"migration failed: {e}")


def _zookeeper_mode(spec: ActionSpec, scenario: Scenario) -> str | None:
    return (
        None
        if scenario.cluster.mode == ZOOKEEPER_MODE
        else 'migrate needs a ZooKeeper-mode cluster: set cluster.mode = "zookeeper"'
    )


ELECT_LEADERS = ActionType("elect-leaders", "a preferred leader election", _elect_leaders)
CREATE_TOPIC = ActionType(
    CREATE_TOPIC_NAME, "create a topic (recorded: does the metadata still change?)", _create_topic
)
MIGRATE = ActionType("migrate", "the live ZooKeeper-to-KRaft migration, each step a window", _migrate, _zookeeper_mode)
ROLLING_UPGRADE = ActionType(
    "rolling-upgrade",
    "every node rolled onto another Kafka release, then the features finalized, each step a window",
    lifecycle.rolling_upgrade,
    lifecycle.upgradable,
)
ADD_CONTROLLER = ActionType(
    lifecycle.ADD_CONTROLLER,
    "a controller added to a dynamic quorum, a window",
    lifecycle.add_controller_action,
    lifecycle.dynamic_quorum,
)
REMOVE_CONTROLLER = ActionType(
    lifecycle.REMOVE_CONTROLLER,
    "a controller removed from a dynamic quorum and stopped, a window",
    lifecycle.remove_controller_action,
    lifecycle.dynamic_quorum,
)
SET_FEATURE = ActionType(
    lifecycle.SET_FEATURE,
    "a feature level finalized mid-run (kafka-features upgrade or downgrade), a window",
    lifecycle.set_feature,
    lifecycle.settable_feature,
)
ADD_BROKER = ActionType(
    lifecycle.ADD_BROKER,
    "a broker added to the running cluster (the next id), a window",
    lifecycle.add_broker,
    lifecycle.adds_brokers,
)
REASSIGN = ActionType(
    lifecycle.REASSIGN,
    "replicas moved from one broker to another, throttled (kafka-reassign-partitions), a window until in force",
    lifecycle.reassign_partitions,
    lifecycle.reassignable,
)
LIFECYCLE_ACTIONS = (ROLLING_UPGRADE, ADD_CONTROLLER, REMOVE_CONTROLLER, SET_FEATURE, ADD_BROKER, REASSIGN)

COMMON_ACTIONS: Mapping[str, ActionType] = {
    a.name: a for a in (ELECT_LEADERS, CREATE_TOPIC, MIGRATE, *LIFECYCLE_ACTIONS)
}
