"""The actions of the cluster's life (docs/lifecycle.md), each step a window in the history so the checkers measure
every partition's unavailability during it (the engine's ActionContext runs them; actions.py declares them):

    rolling-upgrade    every node rolled onto another Kafka release (``to``), then the features finalized
                       (``finalize``): cluster/topology/upgrade.py
    add-controller     a controller added to a dynamic quorum (``node``: its id; absent, the first free slot)
    remove-controller  a controller removed from it (``node``; absent, the active one): cluster/topology/quorum.py
    set-feature        a feature (``feature``) finalized at ``level`` with kafka-features, an upgrade or a downgrade
    add-broker         a broker added to the running cluster (the next id): cluster/topology/brokers.py
    reassign-partitions  every replica of the workload's topics (or ``topic``) on broker ``source`` moved to ``node``
                       (absent: the newest broker), throttled at ``throttle`` bytes/s: cluster/topology/reassign.py.
                       The move is started on the schedule's thread and waited on beside it (ActionContext.background),
                       so a fault scheduled during it (a kill -9 of the source or the destination) starts on time

A step that fails is recorded (a window that never stopped, with its error) and the run goes on to its checks: the
measurements say it did not complete, the scenario's expectations turn that into a verdict.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any

from failsafe.cluster.spec import ZOOKEEPER_MODE
from failsafe.history.ops import Family, Op, Target, event
from failsafe.scenarios.base import ActionSpec, Scenario

if TYPE_CHECKING:
    from failsafe.scenarios.engine.actions import ActionContext

ADD_BROKER = "add-broker"
REASSIGN = "reassign-partitions"
ADD_CONTROLLER = "add-controller"
REMOVE_CONTROLLER = "remove-controller"
SET_FEATURE = "set-feature"


def rolling_upgrade(spec: ActionSpec, a: ActionContext) -> None:
    """Each node rolled onto ``spec.to`` (then the features finalized at it when ``spec.finalize``), each step a window
    of family upgrade, so the checkers measure every partition's unavailability during each roll. A failed step is
    recorded and the run goes on to its checks: the upgrade's measurement says it did not complete."""
    from failsafe.cluster.topology.upgrade import UpgradeFailed, upgrade

    recorder = a.run.recorder
    started, done = a.steps(Family.UPGRADE, "upgrade")

    to = str(spec.to)
    try:
        done_upgrade = upgrade(
            a.cluster,  # type: ignore[arg-type]
            to,
            spec.finalize,
            lambda message: a.status(f"{a.scenario.name} · upgrade · {message}"),
            started,
            done,
        )
    except UpgradeFailed as e:
        a.run.event(f"upgrade failed: {e}")
        return
    for feature, (before, after) in sorted(done_upgrade.changed.items()):
        if after.isdigit():  # a feature's level; metadata.version's (4.4-IV2) is said in the event line below
            recorder.record(event(Op.FEATURE_LEVEL, feature=feature, level=int(after), before=before, by="finalize"))
    if done_upgrade.changed:
        moved = ", ".join(f"{f} {b} -> {v}" for f, (b, v) in sorted(done_upgrade.changed.items()))
        a.run.event(f"upgrade: finalizing moved {moved}")


def upgradable(spec: ActionSpec, scenario: Scenario) -> str | None:
    if not spec.to or not re.fullmatch(r"\d+\.\d+\.\d+", spec.to):
        return f"rolling-upgrade needs to = the Kafka release to roll onto (X.Y.Z), not {spec.to!r}"
    if scenario.cluster.mode == ZOOKEEPER_MODE:
        return "rolling-upgrade rolls a KRaft cluster: a ZooKeeper-mode one moves to KRaft with migrate"
    if not scenario.cluster.kafka_version:
        return "rolling-upgrade needs cluster.kafka_version: the release the run's cluster starts on"
    return None


def _quorum_change(kind: str, spec: ActionSpec, a: ActionContext) -> None:
    """One change of a dynamic quorum's voters, recorded as a window on the controller it adds or removes."""
    from failsafe.cluster.topology.quorum import (
        QuorumChangeFailed,
        add_controller,
        next_controller_id,
        remove_controller,
    )
    from failsafe.errors import UserError

    cluster: Any = a.cluster
    node_id = spec.node
    if node_id is None:
        node_id = next_controller_id(cluster.spec) if kind == ADD_CONTROLLER else cluster.active_controller()
    what = f"{'add' if kind == ADD_CONTROLLER else 'remove'} controller {node_id}"
    active = " (the active one)" if kind == REMOVE_CONTROLLER and spec.node is None else ""
    fault_id = a.window_start(kind, Family.QUORUM_CHANGE, what + active, nodes=[node_id] if node_id is not None else [])
    a.run.event(f"quorum: {what}")
    change = add_controller if kind == ADD_CONTROLLER else remove_controller
    try:
        change(cluster, node_id, lambda message: a.status(f"{a.scenario.name} · quorum · {message}"))
    except (QuorumChangeFailed, UserError) as e:
        a.window_stop(fault_id, kind, False, str(e))
        a.run.event(f"quorum: {what} failed: {e}")
        return
    a.window_stop(fault_id, kind)


def add_controller_action(spec: ActionSpec, a: ActionContext) -> None:
    _quorum_change(ADD_CONTROLLER, spec, a)


def remove_controller_action(spec: ActionSpec, a: ActionContext) -> None:
    _quorum_change(REMOVE_CONTROLLER, spec, a)


def dynamic_quorum(spec: ActionSpec, scenario: Scenario) -> str | None:
    return (
        None
        if scenario.cluster.dynamic_quorum
        else f"{spec.action} changes a dynamic controller quorum: set cluster.dynamic_quorum = true"
    )


def set_feature(spec: ActionSpec, a: ActionContext) -> None:
    """Finalize ``spec.feature`` at ``spec.level`` (kafka-features upgrade or downgrade, of the cluster's release), a
    window on the quorum and a feature-level event with the level before."""
    from failsafe.errors import UserError
    from failsafe.tools.kafka_tools import finalized_features, set_feature_level

    cluster: Any = a.cluster
    dist = cluster.dist
    feature, level = str(spec.feature), int(spec.level or 0)
    try:
        known: dict | None = finalized_features(dist, cluster.bootstrap_servers)
    except UserError:
        known = None  # set_feature_level asks again, and says what failed
    before = ((known or {}).get(feature) or ("", "", "?"))[2]
    what = f"{feature} {before} -> {level}"
    fault_id = a.window_start(SET_FEATURE, Family.FEATURE_FLIP, what)
    a.run.event(f"feature: {what}")
    try:
        now = set_feature_level(dist, cluster.bootstrap_servers, feature, level, known)
    except UserError as e:
        a.window_stop(fault_id, SET_FEATURE, False, str(e))
        a.run.event(f"feature: {what} failed: {e}")
        return
    a.window_stop(fault_id, SET_FEATURE)
    a.run.recorder.record(event(Op.FEATURE_LEVEL, feature=feature, level=now, before=before, by=SET_FEATURE))


def settable_feature(spec: ActionSpec, scenario: Scenario) -> str | None:
    from failsafe.tools.kafka_tools import SETTABLE_FEATURES

    if spec.feature not in SETTABLE_FEATURES:
        return f"set-feature needs feature = one of {', '.join(SETTABLE_FEATURES)}, not {spec.feature!r}"
    if spec.level is None or spec.level < 0:
        return f"set-feature needs level = the feature's level to finalize (0 or more), not {spec.level!r}"
    if scenario.cluster.mode == ZOOKEEPER_MODE:
        return "set-feature finalizes a KRaft feature: a ZooKeeper-mode cluster has none"
    return None


def add_broker(spec: ActionSpec, a: ActionContext) -> None:
    """A broker added to the running cluster, a window (family reassignment) on its id until every broker sees it."""
    from failsafe.cluster.topology.brokers import add_broker as grow
    from failsafe.cluster.topology.brokers import next_broker_id
    from failsafe.errors import FailsafeError

    cluster: Any = a.cluster
    node_id = next_broker_id(cluster)
    fault_id = a.window_start(
        ADD_BROKER, Family.REASSIGNMENT, f"add broker {node_id}", nodes=[node_id], target=Target.BROKER
    )
    a.run.event(f"reassignment: add broker {node_id}")
    try:
        grow(cluster, lambda message: a.status(f"{a.scenario.name} · add broker · {message}"))
    except FailsafeError as e:
        a.window_stop(fault_id, ADD_BROKER, False, str(e))
        a.run.event(f"reassignment: add broker {node_id} failed: {e}")
        return
    a.window_stop(fault_id, ADD_BROKER)


def adds_brokers(spec: ActionSpec, scenario: Scenario) -> str | None:
    added = sum(1 for s in scenario.actions if s.action == ADD_BROKER)
    if scenario.cluster.mode == ZOOKEEPER_MODE:
        return "add-broker grows a KRaft cluster"
    if scenario.cluster.adds_brokers != added:
        return f"the scenario adds {added} broker(s): set cluster.adds_brokers = {added}"
    return None


def reassign_partitions(spec: ActionSpec, a: ActionContext) -> None:
    """``kafka-reassign-partitions --execute`` now, a window (family reassignment) on the source and the destination
    from then until the move is in force and ``--verify`` says so; the wait goes on beside the schedule."""
    from failsafe.cluster.topology.reassign import finish, start
    from failsafe.errors import FailsafeError

    cluster: Any = a.cluster
    source = int(spec.source or 0)
    destination = spec.node if spec.node is not None else max(n.node_id for n in cluster.spec.brokers_nodes())
    topics = [spec.topic] if spec.topic else list(a.workload.sampled_topics)
    bootstrap, dist = cluster.bootstrap_servers, cluster.dist
    what = f"move {', '.join(topics)} from broker {source} to broker {destination}"
    throttled = f" (throttled at {spec.throttle} B/s)" if spec.throttle else ""
    fault_id = a.window_start(
        REASSIGN, Family.REASSIGNMENT, what + throttled, nodes=[source, destination], target=Target.BROKER
    )
    plan_file = a.run.run_path / f"reassignment-{fault_id}.json"
    try:
        plan = start(dist, bootstrap, topics, source, destination, plan_file, spec.throttle)
    except FailsafeError as e:
        a.window_stop(fault_id, REASSIGN, False, str(e))
        a.run.event(f"reassignment: {what} failed: {e}")
        return
    a.run.event(f"reassignment: {what}{throttled}: {len(plan)} partition(s), plan in {plan_file.name}")

    def wait(stopping: threading.Event) -> None:
        try:
            said = finish(dist, bootstrap, plan, plan_file, stop=stopping)
        except FailsafeError as e:
            a.window_stop(fault_id, REASSIGN, False, str(e))
            a.run.event(f"reassignment: {what} did not complete: {e}")
            return
        a.window_stop(fault_id, REASSIGN)
        a.run.event(f"reassignment: {what} completed; kafka-reassign-partitions --verify: {said}")

    a.background.spawn(f"reassignment {fault_id}", wait)


def reassignable(spec: ActionSpec, scenario: Scenario) -> str | None:
    brokers = scenario.cluster.brokers + scenario.cluster.adds_brokers
    if spec.source is None or not 0 <= spec.source < brokers:
        return (
            f"reassign-partitions needs source = the broker whose replicas move (0-{brokers - 1}), not {spec.source!r}"
        )
    if spec.node is not None and not 0 <= spec.node < brokers:
        return f"reassign-partitions moves to node = a broker (0-{brokers - 1}), not {spec.node!r}"
    if spec.throttle is not None and spec.throttle <= 0:
        return f"reassign-partitions' throttle is in bytes per second (more than 0), not {spec.throttle!r}"
    if scenario.cluster.mode == ZOOKEEPER_MODE:
        return "reassign-partitions runs on a KRaft cluster here"
    return None
