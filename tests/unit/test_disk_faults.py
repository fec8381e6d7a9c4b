"""The power-loss fault without Kafka: which nodes it takes, in which order it kills and cuts, what it records, what it
refuses."""

from __future__ import annotations

import signal
from dataclasses import replace

import pytest

from failsafe.faults import FAULT_TYPES, FaultContext, FaultError, FaultSpec, FaultTargets
from failsafe.faults.disk import POWER_LOSS
from failsafe.history.ops import Family
from failsafe.scenarios.engine.placement import misfit, needs_of
from tests.unit.test_engine import TOPOLOGY, FakeCluster

CTX = FaultContext(where="s.faults[0]", topics={"t": 3}, brokers=3, volatile_disks=True)


class LayeredCluster(FakeCluster):
    """A fake cluster whose nodes have disk layers: a power cut of a running node is refused, as the real one's is."""

    def __init__(self, layered: set[int] | None = None) -> None:
        super().__init__()
        self.spec = replace(self.spec, volatile_disks=True)
        self.layered = {n.node_id for n in self.spec.nodes()} if layered is None else layered
        self.events: list[tuple[str, int]] = []

    def disk_status(self, node):
        return {"unsynced": {"files": 1, "bytes": 10}} if node.node_id in self.layered else None

    def stop_nodes(self, nodes, sig, timeout_s):
        super().stop_nodes(nodes, sig, timeout_s)
        self.events += [("kill", n.node_id) for n in nodes]

    def power_off(self, node, *, torn=False, seed=0):
        assert self.states[node.node_id] != "up", "a node lost power while it still ran"
        self.events.append(("power-off", node.node_id))
        return {"bytes_lost": 10 * (node.node_id + 1), "torn": [], "seed": seed, "torn_asked": torn}


def _start(cluster: FakeCluster, **fields):
    params = FAULT_TYPES[POWER_LOSS].parse(fields, CTX)
    targets = FaultTargets(
        cluster=cluster,
        clients=None,
        partition=lambda name: next(  # type: ignore[arg-type]
            (p for p in TOPOLOGY if f"{p['topic']}-{p['partition']}" == name), None
        ),
    )
    return FAULT_TYPES[POWER_LOSS].start(FaultSpec(POWER_LOSS, 1.0, 5.0, params), targets)


def test_every_broker_dies_before_any_loses_power_and_the_undo_starts_them_again() -> None:
    cluster = LayeredCluster()
    applied = _start(cluster, nodes="{brokers}", torn=True, seed=7)
    assert [e for e, _ in cluster.events] == ["kill", "kill", "kill", "power-off", "power-off", "power-off"]
    assert cluster.stopped == [([0, 1, 2], signal.SIGKILL)]
    assert applied.kind == POWER_LOSS and applied.nodes == [0, 1, 2] and FAULT_TYPES[POWER_LOSS].family == Family.DISK
    # Each node's tear is drawn from its own seed: the same schedule and seed cut the same bytes.
    assert {k: (v["bytes_lost"], v["seed"], v["torn_asked"]) for k, v in applied.details["lost"].items()} == {
        "0": (10, 7, True),
        "1": (20, 8, True),
        "2": (30, 9, True),
    }
    applied.undo()
    assert cluster.restarts == [[0, 1, 2]]


def test_one_node_is_chosen_as_kill_chooses_it() -> None:
    cluster = LayeredCluster()
    applied = _start(cluster, role="leader", partition="t-1")
    assert applied.nodes == [1] and cluster.events == [("kill", 1), ("power-off", 1)]
    assert "leader of t-1" in applied.role


def test_a_node_without_a_disk_layer_is_refused_before_anything_is_killed() -> None:
    cluster = LayeredCluster(layered={0, 1})
    with pytest.raises(FaultError, match="server-2 has no disk layer mounted"):
        _start(cluster, nodes="{0,1,2}")
    assert cluster.events == [] and cluster.restarts == []


def test_a_scenario_must_put_its_cluster_on_disk_layers_and_name_one_set_of_nodes() -> None:
    parse = FAULT_TYPES[POWER_LOSS].parse
    with pytest.raises(FaultError, match="set cluster.volatile_disks = true"):
        parse({"node": 0}, replace(CTX, volatile_disks=False))
    with pytest.raises(FaultError, match="one set of nodes"):
        parse({"nodes": "{0} | {1}"}, CTX)
    with pytest.raises(FaultError, match="one set of nodes"):
        parse({"nodes": "{clients}"}, CTX)
    with pytest.raises(FaultError, match="partition"):
        parse({"nodes": "{replicas}"}, CTX)
    with pytest.raises(FaultError, match="'bob' is not a node id"):
        parse({"nodes": "{bob}"}, CTX)
    assert parse({"nodes": "{rack-1}"}, CTX).nodes == "{rack-1}"


def test_a_cluster_on_plain_disks_does_not_fit_a_scenario_that_cuts_power() -> None:
    plain = FakeCluster().spec
    assert FAULT_TYPES[POWER_LOSS].fits(plain) is not None and "--volatile-disks" in FAULT_TYPES[POWER_LOSS].fits(plain)
    assert FAULT_TYPES[POWER_LOSS].fits(replace(plain, volatile_disks=True)) is None


def test_the_catalog_scenario_asks_for_disk_layers_and_a_plain_cluster_does_not_fit_it() -> None:
    from failsafe.scenarios.registry import load_scenario

    scenario = load_scenario("power-loss-single-broker")
    needs = needs_of([scenario])
    assert needs.volatile_disks and needs.brokers == 1
    plain = FakeCluster().spec
    assert "--volatile-disks" in (misfit(plain, needs, [scenario]) or "")
    assert misfit(replace(plain, volatile_disks=True), needs, [scenario]) is None


class OrderedCluster(LayeredCluster):
    """Records injections, clears and restarts in one order, to check that a disk comes back before its node does."""

    def disk_inject(self, node, kind, **fields):
        self.events.append((f"inject-{kind}-{fields.get('ops', '')}-{fields.get('glob', '')}", node.node_id))
        return {"injection": {kind: True}}

    def disk_clear(self, node, kind):
        self.events.append((f"clear-{kind}", node.node_id))
        return {"cleared": [kind]}

    def restart(self, nodes):
        self.events += [("restart", n.node_id) for n in nodes]
        return super().restart(nodes)


@pytest.mark.parametrize(
    "fault, fields, injected",
    [
        ("disk-full", {}, "inject-full--"),
        ("disk-error", {"ops": "write", "glob": "*.log"}, "inject-error-write-*.log"),
    ],
)
def test_a_failing_disk_comes_back_before_its_node_is_started_again(fault: str, fields: dict, injected: str) -> None:
    cluster = OrderedCluster()
    spec_ = FaultSpec(fault, 1.0, 5.0, FAULT_TYPES[fault].parse({"role": "leader", "partition": "t-2", **fields}, CTX))
    targets = FaultTargets(
        cluster=cluster,
        clients=None,
        partition=lambda name: next(  # type: ignore[arg-type]
            (p for p in TOPOLOGY if f"{p['topic']}-{p['partition']}" == name), None
        ),
    )
    applied = FAULT_TYPES[fault].start(spec_, targets)
    assert (
        cluster.events == [(injected, 2)]
        and applied.nodes == [2]
        and applied.details == {"injection": {fault.removeprefix("disk-"): True}}
    )
    applied.undo()
    assert cluster.events[1:] == [(f"clear-{fault.removeprefix('disk-')}", 2), ("restart", 2)]


def test_a_failing_disk_is_one_nodes_and_its_operations_are_named() -> None:
    parse = FAULT_TYPES["disk-error"].parse
    with pytest.raises(FaultError, match="'writes' is not one of read, write, both"):
        parse({"node": 0, "ops": "writes"}, CTX)
    with pytest.raises(FaultError, match="an empty pattern"):
        parse({"node": 0, "glob": " "}, CTX)
    cluster = OrderedCluster()
    spec_ = FaultSpec(
        "disk-full", 1.0, 5.0, FAULT_TYPES["disk-full"].parse({"role": "replicas", "partition": "t-0"}, CTX)
    )
    targets = FaultTargets(cluster=cluster, clients=None, partition=lambda name: TOPOLOGY[0])  # type: ignore[arg-type]
    with pytest.raises(FaultError, match="acts on one node's disk, and replicas of t-0 names 2"):
        FAULT_TYPES["disk-full"].start(spec_, targets)
    assert cluster.events == []
