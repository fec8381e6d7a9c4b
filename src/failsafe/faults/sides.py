"""The sides of a network fault: how they are written, and which nodes they are when the fault starts.

Sides are written ``{0} | {1,2,controllers}``; ``->`` instead of ``|`` drops one way only (the
left side's packets to the right side). A side names node ids and the words:

    brokers, controllers, zookeeper     every node of that kind
    rack-N                              the brokers of one rack (failsafe up --racks)
    clients                             the producers and consumers (anything not a node)
    others                              every node no other side names
    leader, followers, replicas         of the fault's partition, when it starts (scenarios)
    follower                            its first in-sync follower
    controller                          the active controller, when the fault starts

One side alone means it against every other node (``{0}`` is ``{0} | {others}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.faults.base import FaultError

NODE_WORDS = ("brokers", "controllers", "zookeeper", "others")
ROLE_WORDS = ("leader", "follower", "followers", "replicas", "controller")
CLIENTS = "clients"


@dataclass(frozen=True)
class Sides:
    """A partition as written: the sides' tokens, and whether only the first side's packets to the second are
    dropped."""

    sides: tuple[tuple[str, ...], ...]
    one_way: bool = False

    def __str__(self) -> str:
        joiner = " -> " if self.one_way else " | "
        return joiner.join("{" + ",".join(side) + "}" for side in self.sides)


def parse_sides(text: str) -> Sides:
    """``{0} | {1,2,controllers}`` or ``{0} -> {1}`` into tokens; raises FaultError naming what is wrong."""
    one_way = "->" in text
    if one_way and "|" in text:
        raise FaultError(f"sides {text!r}: use '|' (both ways) or '->' (one way), not both")
    parts = text.split("->" if one_way else "|")
    sides = []
    for part in parts:
        inner = part.strip()
        if inner.startswith("{") and inner.endswith("}"):
            inner = inner[1:-1]
        tokens = tuple(t for t in re.split(r"[\s,]+", inner.strip()) if t)
        if not tokens:
            raise FaultError(
                f"sides {text!r}: a side is empty; write node ids or words inside braces, e.g. '{{0}} | "
                f"{{1,2,controllers}}'"
            )
        for token in tokens:
            if not (
                token.isdigit()
                or token in (*NODE_WORDS, *ROLE_WORDS, CLIENTS)
                or re.fullmatch(r"(zookeeper|rack)-\d+", token)
            ):
                raise FaultError(
                    f"sides {text!r}: {token!r} is not a node id nor one of "
                    f"{', '.join((*NODE_WORDS, *ROLE_WORDS, CLIENTS))}, zookeeper-N, rack-N"
                )
        sides.append(tokens)
    if one_way and len(sides) != 2:
        raise FaultError(f"sides {text!r}: a one-way partition has exactly two sides, 'A -> B'")
    return Sides(tuple(sides), one_way)


@dataclass(frozen=True)
class Side:
    """A side as resolved when the fault starts: its nodes, and whether the clients are on it."""

    nodes: tuple[NodeSpec, ...]
    clients: bool = False

    @property
    def label(self) -> str:
        names = [node_label(n) for n in self.nodes] + ([CLIENTS] if self.clients else [])
        return "{" + ",".join(names) + "}"


def node_label(node: NodeSpec) -> str:
    return f"zookeeper-{node.node_id}" if node.is_zookeeper else str(node.node_id)


def resolve_sides(
    sides: Sides, spec: ClusterSpec, partition: dict | None = None, active_controller: NodeSpec | None = None
) -> list[Side]:
    """The nodes on each side. ``partition`` (its latest topology sample) resolves leader/followers/replicas."""
    nodes = spec.nodes()
    by_id = {n.node_id: n for n in nodes if not n.is_zookeeper}

    def words(token: str) -> list[NodeSpec]:
        if token.isdigit():
            if int(token) not in by_id:
                raise FaultError(f"no broker or controller with id {token}: the nodes are {', '.join(map(str, by_id))}")
            return [by_id[int(token)]]
        if token.startswith("zookeeper-"):
            found = [n for n in nodes if n.is_zookeeper and n.node_id == int(token.split("-")[1])]
            if not found:
                raise FaultError(f"no ZooKeeper node {token}")
            return found
        if token.startswith("rack-"):
            found = spec.rack_brokers(token)
            if not found:
                raise FaultError(
                    f"no broker in {token}: "
                    + (
                        f"the racks are rack-0 to rack-{spec.racks - 1}"
                        if spec.racks
                        else "the cluster has no racks (failsafe up --racks N)"
                    )
                )
            return found
        if token == "brokers":
            return [n for n in nodes if n.is_broker]
        if token == "controllers":
            return [n for n in nodes if n.is_controller]
        if token == "zookeeper":
            return [n for n in nodes if n.is_zookeeper]
        if token == "controller":
            if active_controller is None:
                raise FaultError("'controller' names the active controller, and there is none now")
            return [active_controller]
        if partition is None:
            raise FaultError(f"{token!r} names replicas of a partition: give the fault a partition (TOPIC-N)")
        name = f"{partition['topic']}-{partition['partition']}"
        leader, replicas = partition["leader"], partition["replicas"]
        if token == "leader":
            if leader < 0:
                raise FaultError(f"{name} has no leader")
            return [by_id[leader]]
        if token == "followers":
            return [by_id[r] for r in replicas if r != leader]
        if token == "follower":
            in_sync = [r for r in replicas if r != leader and r in partition["isr"]]
            if not in_sync:
                raise FaultError(f"{name} has no in-sync follower (replicas {replicas}, ISR {partition['isr']})")
            return [by_id[in_sync[0]]]
        return [by_id[r] for r in replicas]  # replicas

    resolved: list[tuple[list[NodeSpec], bool, bool]] = []  # nodes, clients, takes the others
    for side in sides.sides:
        members: list[NodeSpec] = []
        for token in side:
            if token in (CLIENTS, "others"):
                continue
            members += [n for n in words(token) if n not in members]
        resolved.append((members, CLIENTS in side, "others" in side))
    if len(resolved) == 1 and not sides.one_way:
        resolved.append(([], False, True))
    named = [n for members, _, _ in resolved for n in members]
    twice = sorted({node_label(n) for n in named if named.count(n) > 1})
    if twice:
        raise FaultError(f"sides {sides}: node {', '.join(twice)} is on two sides")
    out = []
    for members, clients, others in resolved:
        if others:
            members = members + [n for n in nodes if n not in named]
        if not members and not clients:
            raise FaultError(f"sides {sides}: a side has no node (the others are all named elsewhere)")
        out.append(Side(tuple(members), clients))
    return out
