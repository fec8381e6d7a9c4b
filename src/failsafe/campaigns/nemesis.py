"""The nemesis: random fault schedules over the fault registry, held to an envelope, the same for the same seed.

Run ``run`` of a campaign with seed ``seed`` draws from ``random.Random("failsafe-campaign:SEED:RUN")``
alone, so the seed regenerates every schedule (Python's string seeding is stable across versions
and machines). The distributions, as docs/campaigns.md states them:

    faults per run   uniform 1 .. max(1, round(chaos_s / FAULT_EVERY_S))
    fault type       uniform over the campaign's --faults
    its aim          the type's own draw (faults/draw.py): a role (leader or follower of a random
                     partition, the active controller, the replicas of a partition), a broker by id, sides
    start            uniform over [0, chaos_s - MIN_DURATION_S], to 0.1 s
    duration         uniform over [MIN_DURATION_S, min(MAX_DURATION_S, chaos_s - start)], to 0.1 s

Faults may overlap. The envelope bounds what is away at once: ``safe`` never lets the faults in force
take more brokers than replication.factor - min.insync.replicas, nor more controllers than a quorum
can lose (so every partition stays writable with acks=all and the quorum keeps a leader); a draw
that does not fit is drawn again (up to DRAW_ATTEMPTS times, then the run has fewer faults).
``anything-goes`` bounds nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

from failsafe.campaigns.schedule import Planned, Schedule
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES
from failsafe.faults.draw import Arena, Draw

FAULT_EVERY_S = 6.0
MIN_DURATION_S = 2.0
MAX_DURATION_S = 15.0
DRAW_ATTEMPTS = 50


class Envelope(StrEnum):
    SAFE = "safe"
    ANYTHING = "anything-goes"


@dataclass(frozen=True)
class Limits:
    """At most this many brokers and controllers away at once (None: no bound)."""

    brokers: int | None
    controllers: int | None

    @classmethod
    def of(cls, envelope: Envelope, arena: Arena, replication_factor: int, min_insync: int) -> Limits:
        if envelope is Envelope.ANYTHING:
            return cls(None, None)
        return cls(max(0, replication_factor - min_insync), (arena.controllers - 1) // 2)


@dataclass(frozen=True)
class _Held:
    start_s: float
    end_s: float
    draw: Draw


@dataclass(frozen=True)
class Nemesis:
    faults: tuple[str, ...]
    chaos_s: float
    arena: Arena
    limits: Limits

    def __post_init__(self) -> None:
        if not self.faults:
            raise UserError("a campaign needs at least one fault type (--faults)")
        for name in self.faults:
            if name not in FAULT_TYPES:
                raise UserError(f"--faults: no fault type {name!r}; campaigns draw {', '.join(drawable())}")
            if FAULT_TYPES[name].draw is None:
                raise UserError(
                    f"--faults: {name} is not drawn by campaigns (no draw); they draw {', '.join(drawable())}"
                )
        if self.chaos_s < MIN_DURATION_S + 1:
            raise UserError(
                f"--duration-s {self.chaos_s:g} is too short: a campaign's chaos phase lasts at least "
                f"{MIN_DURATION_S + 1:g}s"
            )

    def schedule(self, seed: int, run: int) -> Schedule:
        rng = random.Random(f"failsafe-campaign:{seed}:{run}")
        count = rng.randint(1, max(1, round(self.chaos_s / FAULT_EVERY_S)))
        held: list[_Held] = []
        planned: list[Planned] = []
        for _ in range(count):
            for _attempt in range(DRAW_ATTEMPTS):
                name = rng.choice(self.faults)
                draw = FAULT_TYPES[name].draw(rng, self.arena)  # type: ignore[misc]
                at_s = round(rng.uniform(0, self.chaos_s - MIN_DURATION_S), 1)
                longest = max(MIN_DURATION_S, min(MAX_DURATION_S, self.chaos_s - at_s))
                duration = None if draw.occupies_s is not None else round(rng.uniform(MIN_DURATION_S, longest), 1)
                candidate = _Held(at_s, at_s + (draw.occupies_s if duration is None else duration), draw)
                if self.fits(held, candidate):
                    held.append(candidate)
                    planned.append(Planned(name, at_s, duration, dict(draw.fields)))
                    break
        return Schedule(self.chaos_s, tuple(sorted(planned, key=lambda f: f.at_s)))

    def fits(self, held: list[_Held], candidate: _Held) -> bool:
        """Whether the faults in force never take more than the limits, with ``candidate`` added."""
        spans = [*held, candidate]
        # The most in force at once is reached at some fault's start.
        for t in sorted({s.start_s for s in spans}):
            live = [s.draw for s in spans if s.start_s <= t < s.end_s]
            if self.limits.brokers is not None and sum(d.brokers for d in live) > self.limits.brokers:
                return False
            if self.limits.controllers is not None and sum(d.controllers for d in live) > self.limits.controllers:
                return False
        return True


def drawable() -> list[str]:
    """The fault types campaigns can draw."""
    return sorted(name for name, t in FAULT_TYPES.items() if t.draw is not None)


def drawn_by_default() -> list[str]:
    """The fault types a campaign draws when --faults does not name them: those that need nothing of the cluster beyond
    what every cluster has (protocol faults need proxies: a campaign draws them when asked, and its cluster gets
    them)."""
    return [name for name in drawable() if not FAULT_TYPES[name].cluster_needs]
