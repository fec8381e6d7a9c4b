"""Power loss: nodes die and their disks forget what was not synced (docs/disk-faults.md).

A kill -9 keeps what a process wrote in the page cache; a power cut does not. ``power-loss`` kills
its nodes (kill -9, all first, so none writes after another lost power), then each node's disk layer
(cluster/disks.py) discards every write and directory change not made durable by an fsync, optionally
tearing the last unsynced write of each file at a seeded random byte. What each node lost (files
rolled back, bytes, directory changes undone, tears) is recorded in the fault's details. The undo
mounts the layers again and starts the nodes: Kafka recovers its logs as after any unclean shutdown.

The nodes: one by ``role``, ``node`` or ``partition`` as for kill, or a set at once in ``nodes``,
written as one side of a network fault: ``{brokers}`` (a data centre's power cut), ``{rack-1}``,
``{controllers}``, ``{3000,3001}``, ``{replicas}`` of ``partition``. The cluster must keep its data
on disk layers (a scenario's ``cluster.volatile_disks = true``, failsafe up --volatile-disks).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

from failsafe.errors import DiskLayerError, UserError
from failsafe.faults.base import AppliedFault, FaultContext, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.nodes import SIGNAL_TIMEOUT_S, NodeChoice, check_node_choice, chosen, target_of
from failsafe.faults.registry import register
from failsafe.faults.sides import CLIENTS, node_label, parse_sides, resolve_sides
from failsafe.history.ops import Family
from failsafe.supervisor import DOWN

POWER_LOSS = "power-loss"
NEEDS_LAYERS = "its data directories are on plain disks, and a power loss needs disk layers (failsafe up --volatile-disks)"


@dataclass(frozen=True)
class PowerChoice(NodeChoice):
    """Which nodes lose power (one as kill chooses it, or ``nodes`` at once), and whether the last unsynced writes tear."""

    nodes: str | None = None
    torn: bool = False
    seed: int = 0


def check_power_choice(params: PowerChoice, ctx: FaultContext) -> None:
    if not ctx.volatile_disks:
        raise ctx.fail("fault", "power-loss needs its cluster's data on disk layers: set cluster.volatile_disks = true")
    if params.nodes is None:
        check_node_choice(params, ctx)
        return
    try:
        sides = parse_sides(params.nodes)
    except FaultError as e:
        raise ctx.fail("nodes", str(e)) from e
    tokens = sides.sides[0]
    if len(sides.sides) != 1 or CLIENTS in tokens or "others" in tokens:
        raise ctx.fail("nodes", f"{params.nodes!r}: one set of nodes, e.g. '{{brokers}}', '{{rack-1}}', '{{controllers}}' or '{{0,1}}'")
    if {"leader", "follower", "followers", "replicas"} & set(tokens):
        ctx.require_partition("partition", params.partition)


def _fits(spec: Any) -> str | None:
    return None if getattr(spec, "volatile_disks", False) else NEEDS_LAYERS


def _nodes(params: PowerChoice, targets: FaultTargets) -> tuple[Any, list, str]:
    if params.nodes is None:
        return chosen(params, targets)
    cluster: Any = targets.cluster
    sides = parse_sides(params.nodes)
    partition = targets.partition(params.partition) if params.partition else None
    active = cluster.active_controller_node() if "controller" in sides.sides[0] else None
    side = resolve_sides(sides, cluster.spec, partition, active)[0]
    return cluster, list(side.nodes), side.label


def power_loss(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    params: PowerChoice = spec.params
    cluster, nodes, role = _nodes(params, targets)
    bare = [n.name for n in nodes if cluster.disk_status(n) is None]
    if bare:
        raise FaultError(f"power-loss: {', '.join(bare)} has no disk layer mounted ({NEEDS_LAYERS})")
    # All die first: a node still running after another lost power could write what a real cut would have stopped.
    cluster.stop_nodes([n for n in nodes if cluster.node_state(n) != DOWN], signal.SIGKILL, SIGNAL_TIMEOUT_S)
    lost = {}
    try:
        for i, node in enumerate(nodes):
            lost[node_label(node)] = cluster.power_off(node, torn=params.torn, seed=params.seed + i)
    except (UserError, DiskLayerError, OSError) as e:
        cluster.restart(nodes)  # no fault was applied as asked: leave the nodes as they were, running
        raise FaultError(f"power-loss: {e}") from e
    return AppliedFault(POWER_LOSS, target_of(nodes), [n.node_id for n in nodes], role, lambda: cluster.restart(nodes),
                        details={"lost": lost})


register(FaultType(POWER_LOSS, Family.DISK, "kill -9, then every write not fsynced is gone from the nodes' disks (a power cut)",
                   frozenset({Need.NODES}), power_loss, "disks mounted again, nodes started, the cluster waited on until ready",
                   PowerChoice, check_power_choice, fits=_fits))
