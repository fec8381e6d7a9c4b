"""A slow disk on one node (docs/disk-faults.md, "A slow disk"): the gray failure, a broker alive and slow.

``disk-slow`` makes one node's disk layer take ``delay_ms`` longer over each matching operation, plus its bytes at
``rate_mb_s`` (a throughput cap), for ``ops``: ``write`` (write, truncate, fallocate), ``sync`` (fsync, fdatasync,
fsync of a directory), ``read``, or ``both`` (all of them); of every file, or of those matching ``glob``. Slowed
operations are served one at a time, as one disk serves them. Nothing fails: Kafka has no timeout on its own disk, so
a slow leader stays the leader (its followers still fetch from it, its requests just take longer); a slow follower
that falls more than replica.lag.time.max.ms behind leaves the ISR. The stop records how many operations were slowed
and how long they waited in all. The node: one, by ``role``, ``node`` or ``partition`` as for kill. A scenario with a
slow disk runs on a cluster on disk layers without saying so (its ``cluster_needs``); a running cluster without them
does not fit, in one line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from failsafe.disk.injection import MAX_DELAY_MS, SLOW_OPS
from failsafe.errors import DiskLayerError, UserError
from failsafe.faults.base import AppliedFault, FaultContext, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.disk import fits_layers, one_layered
from failsafe.faults.draw import Arena, Draw, node_by_role
from failsafe.faults.nodes import NodeChoice, check_node_choice, target_of
from failsafe.faults.registry import register
from failsafe.history.ops import Family
from failsafe.supervisor import DOWN

DISK_SLOW = "disk-slow"


@dataclass(frozen=True)
class SlowChoice(NodeChoice):
    """Which node's disk is slow, for which operations and files, by how much: a delay per operation and a cap on its
    bytes per second."""

    ops: str = "write"
    delay_ms: float = 0.0
    rate_mb_s: float | None = None
    glob: str | None = None


def check(params: SlowChoice, ctx: FaultContext) -> None:
    # No check of the scenario's volatile_disks: the fault's cluster_needs give its run a cluster on disk layers.
    check_node_choice(params, ctx)
    if params.ops not in SLOW_OPS:
        raise ctx.fail("ops", f"{params.ops!r} is not one of {', '.join(SLOW_OPS)}")
    check_slowness(params.delay_ms, params.rate_mb_s, ctx, "disk")
    if params.glob is not None and not params.glob.strip():
        raise ctx.fail("glob", "an empty pattern: leave glob out for every file, or write one such as '*.log'")


def check_slowness(delay_ms: float, rate_mb_s: float | None, ctx: FaultContext, what: str) -> None:
    """A delay per operation within the layer's bounds, a cap above 0, and at least one of them (a slow ``what``)."""
    if not 0 <= delay_ms <= MAX_DELAY_MS:
        raise ctx.fail("delay_ms", f"{delay_ms:g} is not from 0 to {MAX_DELAY_MS:g}")
    if rate_mb_s is not None and rate_mb_s <= 0:
        raise ctx.fail("rate_mb_s", f"{rate_mb_s:g}: a cap above 0 MB/s, or leave it out")
    if delay_ms == 0 and rate_mb_s is None:
        raise ctx.fail("delay_ms", f"a slow {what} needs delay_ms above 0 or a rate_mb_s cap")


def _slowed(status: dict | None) -> dict:
    return dict((status or {}).get("slowed") or {"ops": 0, "waited_s": 0.0})


def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    params: SlowChoice = spec.params
    cluster, node, role = one_layered(spec, targets, DISK_SLOW)
    before = _slowed(cluster.disk_status(node))
    try:
        in_force = cluster.disk_inject(
            node, "slow", ops=params.ops, glob=params.glob, delay_ms=params.delay_ms, rate_mb_s=params.rate_mb_s
        )
    except (UserError, DiskLayerError, ValueError) as e:
        raise FaultError(f"{DISK_SLOW}: {e}") from e
    applied = AppliedFault(DISK_SLOW, target_of([node]), [node.node_id], role, details=in_force)

    def undo() -> None:
        after = _slowed(cluster.disk_status(node))
        cluster.disk_clear(node, "slow")
        applied.stop_details = {
            "slowed_ops": after["ops"] - before["ops"],
            "waited_s": round(after["waited_s"] - before["waited_s"], 3),
            "was_down": cluster.node_state(node) == DOWN,
        }
        cluster.restart([node])  # a node that stopped meanwhile (nothing here stops it: recorded above) starts again

    applied.undo_action = undo
    return applied


def draw(rng: random.Random, arena: Arena) -> Draw:
    """A leader's or a follower's disk slow for its writes, syncs or both; counted as the node taken away (a slow
    leader holds its partitions' acks=all writes as a dead one would, only without failing over)."""
    fields, brokers, controllers = node_by_role(rng, arena, ("leader", "follower"))
    fields.update(ops=rng.choice(("write", "sync", "both")), delay_ms=float(rng.choice((5, 20, 100))))
    return Draw(fields, brokers, controllers)


register(
    FaultType(
        DISK_SLOW,
        Family.DISK,
        "one node's disk slow: each write, sync or read waits (delay_ms, a rate_mb_s cap), one at a time",
        frozenset({Need.NODES}),
        start,
        "the disk fast again (the node started again if it stopped)",
        SlowChoice,
        check,
        fits=fits_layers,
        draw=draw,
        cluster_needs=("volatile_disks",),
    )
)
