"""Faults of a tiered cluster's remote store (docs/tiered-storage.md): the object store failing, full or slow.

A cluster made with --tiered-storage keeps its remote tier in ``DIR/remote-store``, one disk layer that every broker's
LocalTieredStorage reads and writes (cluster/tiered.py). ``remote-store`` acts on that layer while the brokers' own
disks stay healthy: ``mode = "error"`` fails the store's reads, writes or both (``ops``) with EIO, of every file or of
those matching ``glob`` (``*.log``: the segments); ``"full"`` refuses new space with ENOSPC; ``"slow"`` makes each
matching operation wait ``delay_ms`` (and its bytes a ``rate_mb_s`` cap), one at a time. What Kafka owes then: a copy
that fails is retried by the remote log manager's next task and the segment stays on the broker's disk until it is
copied (local retention deletes only what is in the tier), and a read of what is only in the tier fails or waits
until the store is back; nothing acknowledged may be lost. The stop records the store's refused and slowed
operations while the fault was in force. A scenario with it runs on a cluster with tiered storage without saying so
(its ``cluster_needs``); a running cluster without one does not fit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from failsafe.cluster import tiered
from failsafe.disk.injection import SLOW_OPS
from failsafe.errors import DiskLayerError
from failsafe.faults.base import AppliedFault, FaultContext, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.disk import DISK_OPS
from failsafe.faults.draw import Arena, Draw
from failsafe.faults.registry import register
from failsafe.faults.slow_disk import check_slowness
from failsafe.history.ops import Family, Target

REMOTE_STORE_FAULT = "remote-store"
MODES = ("error", "full", "slow")
LABEL = "remote store"
NO_STORE = "it has no remote store (failsafe up --tiered-storage)"


@dataclass(frozen=True)
class StoreChoice:
    """How the remote store fails: ``mode`` error (EIO for ``ops`` of ``glob``), full (ENOSPC) or slow (``delay_ms``
    per operation, a ``rate_mb_s`` cap)."""

    mode: str = "error"
    ops: str = "both"
    glob: str | None = None
    delay_ms: float = 0.0
    rate_mb_s: float | None = None


def check(params: StoreChoice, ctx: FaultContext) -> None:
    if params.mode not in MODES:
        raise ctx.fail("mode", f"{params.mode!r} is not one of {', '.join(MODES)}")
    allowed_ops = SLOW_OPS if params.mode == "slow" else DISK_OPS
    if params.ops not in allowed_ops:
        raise ctx.fail("ops", f"{params.ops!r} is not one of {', '.join(allowed_ops)} (for mode {params.mode})")
    if params.glob is not None and not params.glob.strip():
        raise ctx.fail("glob", "an empty pattern: leave glob out for every file, or write one such as '*.log'")
    if params.mode == "slow":
        check_slowness(params.delay_ms, params.rate_mb_s, ctx, "store")
    elif params.delay_ms or params.rate_mb_s is not None:
        raise ctx.fail("delay_ms", f"delay_ms and rate_mb_s are for mode 'slow', not {params.mode!r}")
    if params.mode == "full" and params.glob is not None:
        raise ctx.fail("glob", "a full store refuses every new file: leave glob out")


def fits(spec: object) -> str | None:
    return None if getattr(spec, "tiered_storage", False) else NO_STORE


def _counts(status: dict) -> dict:
    slowed = status.get("slowed") or {}
    return {
        "refused": {k: sum(v.values()) for k, v in (status.get("failed") or {}).items()},
        "slowed_ops": slowed.get("ops", 0),
        "waited_s": slowed.get("waited_s", 0.0),
    }


def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    params: StoreChoice = spec.params
    root = targets.cluster.dir.root
    layer = tiered.store_layer(root)
    if layer is None:
        raise FaultError(f"{REMOTE_STORE_FAULT}: the cluster at {root} has no remote store: {NO_STORE}")
    fields = {"delay_ms": params.delay_ms, "rate_mb_s": params.rate_mb_s} if params.mode == "slow" else {}
    try:
        before = _counts(layer.status())
        in_force = layer.inject(params.mode, ops=params.ops, glob=params.glob, **fields)
    except (DiskLayerError, ValueError) as e:
        raise FaultError(f"{REMOTE_STORE_FAULT}: {e}") from e
    details = {"mode": params.mode, **in_force, "held": tiered.remote_segments(root)}
    applied = AppliedFault(REMOTE_STORE_FAULT, Target.CLUSTER, [], LABEL, details=details, label=LABEL)

    def undo() -> None:
        after = _counts(layer.status())
        layer.clear_injection(params.mode)
        refused = {k: n - before["refused"].get(k, 0) for k, n in after["refused"].items()}
        applied.stop_details = {
            "refused": {k: n for k, n in refused.items() if n},
            "slowed_ops": after["slowed_ops"] - before["slowed_ops"],
            "waited_s": round(after["waited_s"] - before["waited_s"], 3),
            "held": tiered.remote_segments(root),
        }

    applied.undo_action = undo
    return applied


def draw(rng: random.Random, arena: Arena) -> Draw:
    """The store failing its writes or reads, full, or slow: no broker is taken away (the brokers and their disks are
    healthy; what the tier holds cannot be read meanwhile)."""
    mode = rng.choice(MODES)
    fields: dict = {"mode": mode}
    if mode == "error":
        fields["ops"] = rng.choice(("write", "read", "both"))
    elif mode == "slow":
        fields.update(ops="both", delay_ms=float(rng.choice((20, 100, 500))))
    return Draw(fields, 0, 0)


register(
    FaultType(
        REMOTE_STORE_FAULT,
        Family.DISK,
        "a tiered cluster's remote store failing (EIO), full (ENOSPC) or slow, while the brokers' disks are healthy",
        frozenset({Need.NODES}),
        start,
        "the store back (its injection cleared)",
        StoreChoice,
        check,
        fits=fits,
        draw=draw,
        cluster_needs=("tiered_storage",),
        topic_settings=tiered.TIERED_TOPIC,
    )
)
