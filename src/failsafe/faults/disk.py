"""Disk faults on nodes whose data sits on disk layers (docs/disk-faults.md): power loss, a full disk, a failing disk.

A kill -9 keeps what a process wrote in the page cache; a power cut does not. ``power-loss`` kills
its nodes (kill -9, all first, so none writes after another lost power), then each node's disk layer
(cluster/nodes/disks.py) discards every write and directory change not made durable by an fsync, optionally
tearing the last unsynced write of each file at a seeded random byte. What each node lost (files
rolled back, bytes, directory changes undone, tears) is recorded in the fault's details. The undo
mounts the layers again and starts the nodes: Kafka recovers its logs as after any unclean shutdown.

``disk-full`` makes one node's disk refuse, with ENOSPC, every write that needs new space; ``disk-error``
makes its reads, writes (and fsyncs) or both fail with EIO, of every file or of those matching ``glob``
(``*.log``: the segments). Kafka takes a log directory that fails a write offline, and a broker whose
only log directory is offline stops: the undo ends the injection, then starts the node if it died.

The nodes: one by ``role``, ``node`` or ``partition`` as for kill, or a set at once in ``nodes``,
written as one side of a network fault: ``{brokers}`` (a data centre's power cut), ``{rack-1}``,
``{controllers}``, ``{3000,3001}``, ``{replicas}`` of ``partition``. The cluster must keep its data
on disk layers (a scenario's ``cluster.volatile_disks = true``, failsafe up --volatile-disks).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

from failsafe.cluster.site import RunSite
from failsafe.errors import DiskLayerError, UserError
from failsafe.faults.base import AppliedFault, FaultContext, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.nodes import SIGNAL_TIMEOUT_S, NodeChoice, check_node_choice, chosen, target_of
from failsafe.faults.registry import register
from failsafe.faults.sides import CLIENTS, node_label, parse_sides, resolve_sides
from failsafe.history.ops import Family
from failsafe.supervisor import DOWN

POWER_LOSS = "power-loss"
DISK_FULL = "disk-full"
DISK_ERROR = "disk-error"
DISK_OPS = ("read", "write", "both")
NEEDS_LAYERS = (
    "its data directories are on plain disks, and a power loss needs disk layers (failsafe up --volatile-disks)"
)


@dataclass(frozen=True)
class PowerChoice(NodeChoice):
    """Which nodes lose power (one as kill chooses it, or ``nodes`` at once), and whether the last unsynced writes
    tear."""

    nodes: str | None = None
    torn: bool = False
    seed: int = 0


@dataclass(frozen=True)
class FailingChoice(NodeChoice):
    """Which node's disk fails, which of its operations (``read``, ``write`` or ``both``), of which files (None:
    all)."""

    ops: str = "both"
    glob: str | None = None


def needs_layers(name: str, ctx: FaultContext) -> None:
    if not ctx.volatile_disks:
        raise ctx.fail("fault", f"{name} needs its cluster's data on disk layers: set cluster.volatile_disks = true")


def check_full(params: NodeChoice, ctx: FaultContext) -> None:
    needs_layers(DISK_FULL, ctx)
    check_node_choice(params, ctx)


def check_failing(params: FailingChoice, ctx: FaultContext) -> None:
    needs_layers(DISK_ERROR, ctx)
    check_node_choice(params, ctx)
    if params.ops not in DISK_OPS:
        raise ctx.fail("ops", f"{params.ops!r} is not one of {', '.join(DISK_OPS)}")
    if params.glob is not None and not params.glob.strip():
        raise ctx.fail("glob", "an empty pattern: leave glob out for every file, or write one such as '*.log'")


def check_power_choice(params: PowerChoice, ctx: FaultContext) -> None:
    needs_layers(POWER_LOSS, ctx)
    check_node_set(params, ctx)


def check_node_set(params: Any, ctx: FaultContext) -> None:
    """One node as kill chooses it, or a set of nodes at once in ``nodes`` (one side of a network fault)."""
    if params.nodes is None:
        check_node_choice(params, ctx)
        return
    try:
        sides = parse_sides(params.nodes)
    except FaultError as e:
        raise ctx.fail("nodes", str(e)) from e
    tokens = sides.sides[0]
    if len(sides.sides) != 1 or CLIENTS in tokens or "others" in tokens:
        raise ctx.fail(
            "nodes",
            f"{params.nodes!r}: one set of nodes, e.g. '{{brokers}}', '{{rack-1}}', '{{controllers}}' or '{{0,1}}'",
        )
    if {"leader", "follower", "followers", "replicas"} & set(tokens):
        ctx.require_partition("partition", params.partition)


def fits_layers(spec: Any) -> str | None:
    return None if getattr(spec, "volatile_disks", False) else NEEDS_LAYERS


def node_set(params: Any, targets: FaultTargets) -> tuple[Any, list, str]:
    """The nodes ``params`` names now (``nodes``, or one chosen as kill chooses it) and how they were chosen."""
    if params.nodes is None:
        return chosen(params, targets)
    cluster: RunSite = targets.cluster
    sides = parse_sides(params.nodes)
    partition = targets.partition(params.partition) if params.partition else None
    active = cluster.active_controller_node() if "controller" in sides.sides[0] else None
    side = resolve_sides(sides, cluster.spec, partition, active)[0]
    return cluster, list(side.nodes), f"chosen as {params.nodes.strip()}"


def power_loss(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    params: PowerChoice = spec.params
    cluster, nodes, role = node_set(params, targets)
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
        # The cut failed part way: start every node again (those already cut on what was durable) and say so.
        cluster.restart(nodes)
        raise FaultError(f"power-loss: {e}") from e
    return AppliedFault(
        POWER_LOSS,
        target_of(nodes),
        [n.node_id for n in nodes],
        role,
        lambda: cluster.restart(nodes),
        details={"lost": lost},
    )


def one_layered(spec: FaultSpec, targets: FaultTargets, name: str) -> tuple[Any, Any, str]:
    cluster, nodes, role = chosen(spec.params, targets)
    if len(nodes) != 1:
        raise FaultError(f"{name} acts on one node's disk, and {role} names {len(nodes)}: name one node or one role")
    if cluster.disk_status(nodes[0]) is None:
        raise FaultError(f"{name}: {nodes[0].name} has no disk layer mounted ({NEEDS_LAYERS})")
    return cluster, nodes[0], role


def _injecting(name: str, kind: str):
    def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
        cluster, node, role = one_layered(spec, targets, name)
        fields = {"ops": spec.params.ops, "glob": spec.params.glob} if kind == "error" else {}
        try:
            in_force = cluster.disk_inject(node, kind, **fields)
        except (UserError, DiskLayerError, ValueError) as e:
            raise FaultError(f"{name}: {e}") from e

        def undo() -> None:
            # The disk back first: a node that stopped on it (Kafka halts when its only log dir goes offline) starts on
            # a good one.
            cluster.disk_clear(node, kind)
            cluster.restart([node])

        return AppliedFault(name, target_of([node]), [node.node_id], role, undo, details=in_force)

    return start


register(
    FaultType(
        POWER_LOSS,
        Family.DISK,
        "kill -9, then every write not fsynced is gone from the nodes' disks (a power cut)",
        frozenset({Need.NODES}),
        power_loss,
        "disks mounted again, nodes started, the cluster waited on until ready",
        PowerChoice,
        check_power_choice,
        fits=fits_layers,
    )
)
register(
    FaultType(
        DISK_FULL,
        Family.DISK,
        "one node's disk full: writes that need new space fail with ENOSPC",
        frozenset({Need.NODES}),
        _injecting(DISK_FULL, "full"),
        "space freed, then the node started again if it stopped",
        NodeChoice,
        check_full,
        fits=fits_layers,
    )
)
register(
    FaultType(
        DISK_ERROR,
        Family.DISK,
        "one node's disk failing: reads, writes or both fail with EIO (of every file, or a glob)",
        frozenset({Need.NODES}),
        _injecting(DISK_ERROR, "error"),
        "the disk back, then the node started again if it stopped",
        FailingChoice,
        check_failing,
        fits=fits_layers,
    )
)
