"""Clock faults: a broker's or controller's clock set apart from real time while the fault is in force.

A cluster made with clock faults (failsafe up --clock-faults; a scenario with such a fault gets one) runs every
broker and controller with libfaketime reading its offset from a file (cluster/clocks.py says how, and what a JVM
sees of it). A fault's offsets are held by a keeper process, which puts every clock back to real time when the fault
ends or when failsafe dies:

    clock-jump    the clocks step ``offset_s`` (forward or back) at the fault's start, and back at its end
    clock-skew    each node's clock steps to its own offset, drawn uniformly from [-``max_s``, +``max_s``] (``seed``)
    clock-drift   the clocks run ``rate_ppm`` parts per million fast (or slow, when negative), from real time on:
                  stepped every half second by the keeper

Aim: every broker and controller (``role = "all"``, the default), or nodes as node faults choose them (``node``,
``role`` of ``partition``, ``controller``, ``txn-coordinator`` of ``transactional_id``, ``group-coordinator`` of
``group``, ``share-coordinator``). A node sees a new offset within clocks.SEEN_WITHIN_S (the library caches its file
for a second); the fault's start records each node's offset, its stop the offsets it held last.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from failsafe.cluster import clocks
from failsafe.errors import UserError
from failsafe.faults.base import AppliedFault, FaultContext, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.draw import Arena, Draw
from failsafe.faults.nodes import NodeChoice, check_every_or_chosen, chosen
from failsafe.faults.registry import register
from failsafe.history.ops import Family, Target
from failsafe.supervisor import ChildStartError

EVERY_NODE = "all"
NEEDS_CLOCKS = "its nodes' clocks cannot be set apart, and clock faults do (failsafe up --clock-faults)"
MAX_OFFSET_S = 10 * 365 * 86400.0  # ten years either way
MAX_RATE_PPM = 1_000_000.0  # twice as fast, or stopped
CLOCK_JUMP, CLOCK_SKEW, CLOCK_DRIFT = "clock-jump", "clock-skew", "clock-drift"
_keeper_ids = itertools.count()


@dataclass(frozen=True)
class ClockAim(NodeChoice):
    """Whose clocks: every broker and controller (``role = "all"``), or nodes as node faults choose them."""

    role: str = EVERY_NODE


@dataclass(frozen=True)
class JumpAim(ClockAim):
    offset_s: float = 0.0


@dataclass(frozen=True)
class SkewAim(ClockAim):
    max_s: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class DriftAim(ClockAim):
    rate_ppm: float = 0.0


def check_aim(params: ClockAim, ctx: FaultContext) -> None:
    check_every_or_chosen(params, ctx, EVERY_NODE)
    if isinstance(params, JumpAim) and not 0 < abs(params.offset_s) <= MAX_OFFSET_S:
        raise ctx.fail("offset_s", f"{params.offset_s:g}: a jump of seconds, not zero, within ten years either way")
    if isinstance(params, SkewAim) and not 0 < params.max_s <= MAX_OFFSET_S:
        raise ctx.fail("max_s", f"{params.max_s:g}: the largest offset in seconds, above zero, within ten years")
    if isinstance(params, DriftAim) and not 0 < abs(params.rate_ppm) <= MAX_RATE_PPM:
        raise ctx.fail(
            "rate_ppm", f"{params.rate_ppm:g}: parts per million, not zero, within {MAX_RATE_PPM:g} either way"
        )


def _fits(spec: Any) -> str | None:
    return None if getattr(spec, "clock_faults", False) else NEEDS_CLOCKS


def _settings(kind: str, params: ClockAim, paths: list[Path]) -> list[clocks.Setting]:
    if isinstance(params, JumpAim):
        return [clocks.Setting(p, params.offset_s) for p in paths]
    if isinstance(params, SkewAim):
        rng = random.Random(params.seed)
        return [clocks.Setting(p, round(rng.uniform(-params.max_s, params.max_s), 3)) for p in paths]
    assert isinstance(params, DriftAim), kind
    return [clocks.Setting(p, 0.0, params.rate_ppm) for p in paths]


def _start(kind: str):
    def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
        params: ClockAim = spec.params
        cluster = targets.cluster
        if params.role == EVERY_NODE and params.node is None:
            nodes, role = [n for n in cluster.spec.nodes() if not n.is_zookeeper], "every node"
        else:
            cluster, nodes, role = chosen(params, targets)
        paths = [cluster.clock_file(n) for n in nodes]
        bare = [n.name for n, p in zip(nodes, paths, strict=True) if p is None]
        if bare:
            raise FaultError(f"{kind}: {', '.join(bare)}: {NEEDS_CLOCKS}")
        settings = _settings(kind, params, [p for p in paths if p is not None])
        name = f"{kind}-{next(_keeper_ids)}-{spec.at_s:g}"
        log_file = settings[0].path.parent.parent / "logs" / "clock-keeper.log"
        try:
            keeper = clocks.Keeper(settings, name, log_file)
        except (UserError, ChildStartError) as e:
            raise FaultError(f"{kind}: {e}") from e
        started = time.monotonic()
        by_node = {str(n.node_id): s for n, s in zip(nodes, settings, strict=True)}
        details: dict[str, Any] = {
            "offsets_s": {k: s.offset_s for k, s in by_node.items()},
            "seen_within_s": clocks.SEEN_WITHIN_S,
        }
        if isinstance(params, DriftAim):
            details["rate_ppm"] = params.rate_ppm
        applied = AppliedFault(
            kind, Target.BROKER, [n.node_id for n in nodes], role, label=_label(kind, params), details=details
        )

        def undo() -> None:
            elapsed = time.monotonic() - started
            keeper.end()
            applied.stop_details = {"offsets_at_end_s": {k: round(s.at(elapsed), 3) for k, s in by_node.items()}}

        applied.undo_action = undo
        return applied

    return start


def _label(kind: str, params: ClockAim) -> str:
    if isinstance(params, JumpAim):
        return f"{kind} {params.offset_s:+g}s"
    if isinstance(params, SkewAim):
        return f"{kind} ±{params.max_s:g}s"
    assert isinstance(params, DriftAim)
    return f"{kind} {params.rate_ppm:+g}ppm"


def _drawer(kind: str):
    def draw(rng: random.Random, arena: Arena) -> Draw:
        fields: dict[str, Any] = {}
        if rng.random() < 0.5:
            fields["node"] = rng.randrange(arena.brokers)
        if kind == CLOCK_JUMP:
            fields["offset_s"] = rng.choice((-3600, -60, 60, 3600, 7 * 86400))
        elif kind == CLOCK_SKEW:
            fields["max_s"] = rng.choice((5, 60, 600))
            fields["seed"] = rng.randrange(2**31)
        else:
            fields["rate_ppm"] = rng.choice((-50000, 500, 50000, 500000))
        return Draw(fields)  # a clock apart takes no broker or controller away by itself

    return draw


_TYPES = {
    CLOCK_JUMP: ("the clocks of nodes step forward or back by offset_s", JumpAim),
    CLOCK_SKEW: ("each node's clock set apart by its own offset, up to max_s either way", SkewAim),
    CLOCK_DRIFT: ("the clocks of nodes run rate_ppm fast or slow", DriftAim),
}

for _kind, (_summary, _fields) in _TYPES.items():
    register(
        FaultType(
            _kind,
            Family.CLOCK,
            _summary,
            frozenset({Need.NODES}),
            _start(_kind),
            "every clock back to real time (a step back by what it was apart)",
            _fields,
            check_aim,
            fits=_fits,
            draw=_drawer(_kind),
            cluster_needs=("clock_faults",),
        )
    )

__all__ = ["CLOCK_DRIFT", "CLOCK_JUMP", "CLOCK_SKEW", "EVERY_NODE"]
