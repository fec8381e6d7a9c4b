"""How a randomized campaign draws a fault of a type: the type's own fields, and what it takes away.

A fault type that campaigns may use declares ``draw(rng, arena) -> Draw``: given the campaign's
random source and what the scenario has (its partitions, its brokers and controllers), it returns
the fields a scenario file would write for one such fault, aimed by role where the type can (leader
or follower of a partition, the active controller, a side of a partition), and its *footprint*: at
most how many brokers and controllers it takes down or cuts off while it is in force. The campaign's
generator (failsafe.campaigns.nemesis) holds every schedule to an envelope over those footprints;
it knows no fault type by name.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Arena:
    """What a campaign's faults may aim at: the scenario's partitions (TOPIC-N), its brokers, its separate controllers,
    and its transactional clients (by NAME-INDEX, which is also each one's transactional.id)."""

    partitions: tuple[str, ...]
    brokers: int = 3
    controllers: int = 1
    combined: bool = False
    txn_clients: tuple[str, ...] = ()


@dataclass(frozen=True)
class Draw:
    """One drawn fault: its own fields as a scenario file writes them, and its footprint while in force.

    ``occupies_s``: for a fault that heals itself at once (restart), how long the envelope counts it
    as in force, since its schedule has no duration.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    brokers: int = 0
    controllers: int = 0
    occupies_s: float | None = None


Drawer = Callable[[random.Random, Arena], Draw]


def node_by_role(rng: random.Random, arena: Arena, roles: tuple[str, ...]) -> tuple[dict[str, Any], int, int]:
    """A node chosen the way node faults take it: ``leader``/``follower``/``replicas`` of a random partition,
    ``controller`` (the active one), or for ``any`` a broker drawn by id. Returns the fields and the brokers and
    controllers it names."""
    role = str(rng.choice(roles))
    if role in ("leader", "follower"):
        return {"role": role, "partition": rng.choice(arena.partitions)}, 1, int(arena.combined)
    if role == "replicas":
        return (
            {"role": role, "partition": rng.choice(arena.partitions)},
            arena.brokers,
            int(arena.combined) * arena.brokers,
        )
    if role == "txn-coordinator":
        # The coordinator is a broker: combined nodes take a controller with it.
        return {"role": role, "transactional_id": rng.choice(arena.txn_clients)}, 1, int(arena.combined)
    if role == "controller":
        # Combined nodes are brokers too: the active controller then takes a broker with it.
        return {"role": role}, int(arena.combined), 1
    return {"node": rng.randrange(arena.brokers)}, 1, int(arena.combined)
