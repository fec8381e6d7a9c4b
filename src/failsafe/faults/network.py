"""Network faults: a partition into named sides, one way or both, a node cut off from its clients, a lossy link.

A fault is one chain of DROP rules in the cluster's own nftables table (cluster/net/netfilter.py);
its undo deletes that chain. A node's packets are matched by the group id it runs under, where
they go by the listener's address and port (docs/cluster.md, "Listeners and links"):

    replication   a broker's REPLICATION listener, 127.0.0.(10+i):base+200+i (KRaft)
    controller    a controller's CONTROLLER listener, 127.0.0.(100+j):controller port
    clients       a broker's client listener, 127.0.0.1:909x, where the seeds put it

Sides (``{0} | {1,2,controllers}``, faults/sides.py) say who is apart from whom. Clients are cut
off only from a side that is apart from a side naming ``clients``.

A scenario's network faults are leashed: a watchdog deletes their chains if failsafe dies before
the heal, so a SIGKILL of failsafe leaves no rule behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from failsafe.cluster.net import netfilter
from failsafe.cluster.site import Leash, RunSite
from failsafe.cluster.spec import NodeSpec
from failsafe.faults.base import (
    AppliedFault,
    FaultContext,
    FaultError,
    FaultSpec,
    FaultTargets,
    FaultType,
    Need,
    Target,
)
from failsafe.faults.draw import Arena, Draw, node_by_role
from failsafe.faults.nodes import NodeChoice, check_node_choice, chosen
from failsafe.faults.registry import register
from failsafe.faults.sides import CLIENTS, ROLE_WORDS, Side, node_label, parse_sides, resolve_sides
from failsafe.history.ops import Family

LOOPBACK = "127.0.0.1"
# Where a rule goes: this machine's nftables (the clients, and every node of a cluster on this machine), or a host's
# address.
LOCAL = netfilter.LOCAL
# Drop probabilities are written as parts of 10,000 (numgen's modulus): 0.01 % steps.
LOSS_MODULUS = 10_000


# -- the rules ---------------------------------------------------------------------------------------
def peer_endpoints(node: NodeSpec) -> list[tuple[str, int]]:
    """Where other nodes connect to ``node``: its replication and controller listeners (ZooKeeper: every port)."""
    if node.is_zookeeper:
        return [(LOOPBACK, p) for p in (node.port, node.peer_port, node.election_port) if p is not None]
    out = []
    if node.is_broker:
        out.append((node.address, node.replication_port) if node.replication_port else (LOOPBACK, node.port))
    if node.is_controller:
        out.append((node.address, node.controller_port))
    return [(a, p) for a, p in out if p is not None]


def _set(items: Iterable[object], always: bool = False) -> str:
    """An nft value or anonymous set; a concatenation (``a . p``) must always be a set."""
    items = list(dict.fromkeys(items))
    return str(items[0]) if len(items) == 1 and not always else "{ " + ", ".join(map(str, items)) + " }"


def partition_rules(
    sides: Sequence[Side],
    one_way: bool,
    gid: Callable[[NodeSpec], int],
    all_gids: Sequence[int],
    loss: float | None = None,
) -> list[str]:
    """nft rules (without ``add rule``) dropping what crosses between sides on this machine; ``loss`` < 1 drops that
    share at random."""
    return [rule for rules in placed_rules(sides, one_way, gid, all_gids, loss).values() for rule in rules]


def placed_rules(
    sides: Sequence[Side],
    one_way: bool,
    gid: Callable[[NodeSpec], int],
    all_gids: Sequence[int],
    loss: float | None = None,
    place: Callable[[NodeSpec], str] = lambda node: LOCAL,
    control: Callable[[str], str] = lambda where: LOOPBACK,
    listener_port: Callable[[NodeSpec], int | None] = lambda node: node.port,
) -> dict[str, list[str]]:
    """The rules of :func:`partition_rules`, by where each must go: a node's packets are dropped where the node runs
    (``place``: LOCAL, or its host), the clients' where the clients run (LOCAL); ``control(where)`` is the clients'
    address as seen from there; ``listener_port(broker)`` the port its client listener answers from (behind a protocol
    proxy, not the port clients connect to: ClusterSpec.listener_port)."""
    chance = ""
    if loss is not None and loss < 1:
        chance = f"numgen random mod {LOSS_MODULUS} < {round(loss * LOSS_MODULUS)} "
    pairs = [(0, 1)] if one_way else [(i, j) for i in range(len(sides)) for j in range(len(sides)) if i != j]
    rules: dict[str, list[str]] = {}

    def by_place(nodes: Iterable[NodeSpec]) -> dict[str, list[NodeSpec]]:
        grouped: dict[str, list[NodeSpec]] = {}
        for n in nodes:
            grouped.setdefault(place(n), []).append(n)
        return grouped

    for i, j in pairs:
        src, dst = sides[i], sides[j]
        endpoints = [f"{a} . {p}" for n in dst.nodes for a, p in peer_endpoints(n)]
        if src.nodes and endpoints:
            for where, nodes in by_place(src.nodes).items():
                rules.setdefault(where, []).append(
                    f"meta skgid {_set(gid(n) for n in nodes)} ip daddr . tcp dport {_set(endpoints, True)} "
                    f"{chance}counter drop"
                )
        client_ports = [f"{n.client_address} . {n.port}" for n in dst.nodes if n.is_broker]
        if src.clients and client_ports:
            # Anything that is not a node of this cluster connecting to the brokers' client listeners.
            rules.setdefault(LOCAL, []).append(
                f"meta skgid != {_set(all_gids)} ip daddr . tcp dport {_set(client_ports, True)} {chance}counter drop"
            )
        if dst.clients and one_way:
            for where, nodes in by_place(n for n in src.nodes if n.is_broker).items():
                rules.setdefault(where, []).append(
                    f"meta skgid {_set(gid(n) for n in nodes)} ip daddr {control(where)} "
                    f"tcp sport {_set(listener_port(n) for n in nodes)} {chance}counter drop"
                )
    if not rules:
        raise FaultError(
            "these sides share no link failsafe can cut (no node-to-node listener and no clients between them)"
        )
    return rules


def describe(sides: Sequence[Side], one_way: bool, loss: float | None) -> str:
    joined = (" -> " if one_way else " | ").join(s.label for s in sides)
    return f"{'lossy link' if loss is not None and loss < 1 else 'partition'} {joined}" + (
        f" loss {loss:g}" if loss is not None and loss < 1 else ""
    )


# -- applying ----------------------------------------------------------------------------------------
@dataclass
class NetworkFault:
    """One chain in force: its name, what it does, the sides."""

    chain: str
    comment: str
    sides: list[Side]
    one_way: bool
    loss: float | None
    details: dict = field(default_factory=dict)


def check_ready(cluster: RunSite) -> None:
    """Root, nft, and every running node under its own group id (here, or on its host); else one clear reason."""
    cluster.net_ready()


def gid_of(cluster: RunSite) -> Callable[[NodeSpec], int]:
    slots = {n: i for i, n in enumerate(cluster.spec.nodes())}
    return lambda node: netfilter.node_gid(cluster.dir.root, slots[node])


def apply(
    cluster: RunSite, sides: list[Side], one_way: bool = False, loss: float | None = None, leash: Leash | None = None
) -> NetworkFault:
    """Install the rules of one fault as a new chain (on this machine, and on each host whose nodes it cuts); returns it
    (its undo is :func:`heal`).

    ``leash`` holds the chain's name before the chain exists: a SIGKILL of failsafe at any point after
    the rules are in force finds them held."""
    if loss is not None and not 0 < loss <= 1:
        raise FaultError(f"loss {loss:g} must be a probability in (0, 1]")
    check_ready(cluster)
    gid = gid_of(cluster)
    all_gids = [gid(n) for n in cluster.spec.nodes()]
    nodes = cluster.nodes
    rules = placed_rules(
        sides, one_way, gid, all_gids, loss, nodes.net_place, nodes.net_control_address, cluster.spec.listener_port
    )
    taken = {c.name for c in nodes.net_chains()}
    number = next(i for i in range(1, 10_000) if f"fault_{i}" not in taken)
    comment = describe(sides, one_way, loss)
    chain = f"fault_{number}"
    if leash is not None:
        leash.hold(chain)
    try:
        nodes.net_add(chain, comment, rules)
    except netfilter.NftError as e:
        if leash is not None:
            leash.release(chain)
        raise FaultError(f"nft refused the rules of '{comment}': {e}") from e
    return NetworkFault(
        chain,
        comment,
        sides,
        one_way,
        loss,
        {"sides": side_lists(sides), "one_way": one_way, "loss": loss, "chain": chain},
    )


def side_lists(sides: Sequence[Side]) -> list[list[str]]:
    """The sides as data: each side's node labels, and ``clients`` when the clients are on it (what the history
    records)."""
    return [[node_label(n) for n in side.nodes] + ([CLIENTS] if side.clients else []) for side in sides]


def sides_label(sides: Sequence[Sequence[str]], one_way: bool, loss: float | None) -> str:
    """How reports name a network fault: ``{0} | {1000,1,2}``, ``{0} -> {1}``, with its loss when it drops only some
    packets."""
    joined = (" -> " if one_way else " | ").join("{" + ",".join(side) + "}" for side in sides)
    return joined + (f" loss {loss:g}" if loss is not None and loss < 1 else "")


def heal(cluster: RunSite, chain: str | None = None) -> list[str]:
    """Remove one fault's chain, or every network fault of the cluster; returns what was removed."""
    found = cluster.nodes.net_chains()
    if chain is None:
        cluster.nodes.net_delete_all()
        return [f"{c.name}: {c.comment}" for c in found]
    names = {c.name: c for c in found}
    if chain not in names:
        raise FaultError(f"no network fault {chain} on this cluster: 'failsafe net status' lists them")
    cluster.nodes.net_delete(chain)
    return [f"{chain}: {names[chain].comment}"]


# -- the scenario fault types ------------------------------------------------------------------------
PARTITION = "partition"
LOSSY_LINK = "lossy-link"
ISOLATE = "isolate"
CUT_CLIENTS = "cut-clients"


def _loss(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError("must be a drop probability in (0, 1]")
    return float(value)


def _sides_text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError('expected sides as text, e.g. "{leader} | {followers,controllers}"')
    try:
        parse_sides(value)
    except FaultError as e:
        raise ValueError(str(e)) from e
    return value


@dataclass(frozen=True)
class SidesChoice:
    """``sides`` apart (``{leader} | {followers,controllers}``); ``loss`` < 1 drops that share only; ``partition`` names
    the partition whose leader, followers or replicas the sides name."""

    sides: str = field(metadata={"convert": _sides_text})
    loss: float | None = field(default=None, metadata={"convert": _loss})
    partition: str | None = None


@dataclass(frozen=True)
class LinkChoice(NodeChoice):
    """One node by role, id or partition (as kill takes it); ``loss`` < 1 drops that share of its packets only."""

    loss: float | None = field(default=None, metadata={"convert": _loss})


@dataclass(frozen=True)
class IsolateChoice(LinkChoice):
    """``clients``: the isolated node's clients lose it too (by default they keep reaching it)."""

    clients: bool = False


def cuts_clients(spec: FaultSpec) -> bool:
    """Whether the fault cuts the clients' links: its rules for them go where failsafe runs (placed_rules), so a client
    that runs on a host would not be cut."""
    params = spec.params
    if spec.fault == CUT_CLIENTS or getattr(params, "clients", False):
        return True
    sides = getattr(params, "sides", None)
    return isinstance(sides, str) and any(CLIENTS in side for side in parse_sides(sides).sides)


def _check_sides(params: SidesChoice, ctx: FaultContext) -> None:
    if any(t in ROLE_WORDS and t != "controller" for side in parse_sides(params.sides).sides for t in side):
        ctx.require_partition("partition", params.partition)


def _check_lossy(params: SidesChoice, ctx: FaultContext) -> None:
    if params.loss is None or params.loss >= 1:
        raise ctx.fail("loss", "a lossy-link needs a drop probability below 1 (e.g. loss = 0.2); for 1 use partition")
    _check_sides(params, ctx)


def _applied(
    kind: str, cluster: RunSite, fault: NetworkFault, leash: Leash | None, chosen_as: str = ""
) -> AppliedFault:
    def undo() -> None:
        try:
            cluster.nodes.net_delete(fault.chain)
        except netfilter.NftError as e:
            # An undo that failed is recorded and tried again by the heal: it must not abort it.
            raise FaultError(f"nft could not delete {fault.chain}: {e}") from e
        if leash is not None:
            leash.release(fault.chain)

    nodes: list[int | str] = [node_label(n) if n.is_zookeeper else n.node_id for n in fault.sides[0].nodes]
    sides = side_lists(fault.sides)
    return AppliedFault(
        kind,
        Target.NETWORK,
        nodes,
        f"{chosen_as}: {fault.comment}" if chosen_as else fault.comment,
        undo,
        details={"chain": fault.chain},
        label=sides_label(sides, fault.one_way, fault.loss),
        sides=sides,
        one_way=fault.one_way,
        loss=fault.loss,
    )


def _context(spec: FaultSpec, targets: FaultTargets) -> tuple[RunSite, dict | None, NodeSpec | None]:
    cluster: RunSite = targets.cluster
    name = spec.params.partition
    partition = targets.partition(name) if name else None
    if name and partition is None:
        raise FaultError(f"no topology sample shows {name}")
    return cluster, partition, cluster.active_controller_node()


def _leash(targets: FaultTargets) -> Leash | None:
    """The run's network leash (cluster/net/leash.py here, cluster/net/hosts.py's on hosts), if the run keeps one."""
    return targets.network_leash()


def partition(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """``sides`` apart (``loss`` < 1: a lossy link between them instead)."""
    cluster, sample, active = _context(spec, targets)
    parsed = parse_sides(spec.params.sides)
    sides = resolve_sides(parsed, cluster.spec, sample, active)
    leash = _leash(targets)
    fault = apply(cluster, sides, parsed.one_way, spec.params.loss, leash)
    return _applied(spec.fault, cluster, fault, leash)


def _one_node(spec: FaultSpec, targets: FaultTargets) -> tuple[RunSite, NodeSpec, str]:
    cluster, nodes, chosen_as = chosen(spec.params, targets)
    return cluster, nodes[0], chosen_as


def isolate(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """One node apart from every other node; its clients keep it unless ``clients = true``."""
    cluster, node, chosen_as = _one_node(spec, targets)
    others = tuple(n for n in cluster.spec.nodes() if n != node)
    sides = [Side((node,)), Side(others, bool(spec.params.clients))]
    leash = _leash(targets)
    return _applied(ISOLATE, cluster, apply(cluster, sides, False, spec.params.loss, leash), leash, chosen_as)


def cut_clients(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """The clients lose one broker; the brokers and controllers do not."""
    cluster, node, chosen_as = _one_node(spec, targets)
    leash = _leash(targets)
    fault = apply(cluster, [Side((node,)), Side((), True)], False, spec.params.loss, leash)
    return _applied(CUT_CLIENTS, cluster, fault, leash, chosen_as)


# The sides a campaign cuts apart, with how many brokers and controllers the smaller side takes away (per Arena).
# One node against the rest, one way or both; a partition's leader and follower against the rest; every
# broker cut from the controllers (all fenced once broker.session.timeout.ms passes).
CAMPAIGN_SIDES: tuple[tuple[str, Callable[[Arena], tuple[int, int]]], ...] = (
    ("{leader} | {others}", lambda a: (1, int(a.combined))),
    ("{follower} | {others}", lambda a: (1, int(a.combined))),
    ("{controller} | {others}", lambda a: (int(a.combined), 1)),
    ("{leader} -> {followers}", lambda a: (1, int(a.combined))),
    ("{followers} -> {leader}", lambda a: (1, int(a.combined))),
    ("{leader,follower} | {others}", lambda a: (2, 2 * int(a.combined))),
    ("{brokers} | {controllers}", lambda a: (a.brokers, 0)),
)
CAMPAIGN_LOSS = (0.1, 0.3, 0.5)
ONE_NODE_ROLES = ("leader", "follower", "any", "controller")


def _draw_sides(rng, arena: Arena, loss: float | None) -> Draw:
    sides, footprint = rng.choice([c for c in CAMPAIGN_SIDES if not arena.combined or "controllers" not in c[0]])
    fields: dict[str, Any] = {"sides": sides}
    if any(word in sides for word in ("leader", "follower")):
        fields["partition"] = rng.choice(arena.partitions)
    if loss is not None:
        fields["loss"] = loss
    return Draw(fields, *footprint(arena))


def draw_partition(rng, arena: Arena) -> Draw:
    return _draw_sides(rng, arena, None)


def draw_lossy_link(rng, arena: Arena) -> Draw:
    return _draw_sides(rng, arena, rng.choice(CAMPAIGN_LOSS))


def draw_isolate(rng, arena: Arena) -> Draw:
    fields, brokers, controllers = node_by_role(rng, arena, ONE_NODE_ROLES)
    return Draw(fields, brokers, controllers)


def draw_cut_clients(rng, arena: Arena) -> Draw:
    fields, brokers, controllers = node_by_role(rng, arena, ("leader", "follower", "any"))
    return Draw(fields, brokers, 0)


_NEEDS = frozenset({Need.NETWORK})
_UNDO = "its nftables chain deleted"
register(
    FaultType(
        PARTITION,
        Family.NETWORK,
        "the cluster split into sides, both ways or one way ('A -> B')",
        _NEEDS,
        partition,
        _UNDO,
        SidesChoice,
        _check_sides,
        draw=draw_partition,
    )
)
register(
    FaultType(
        LOSSY_LINK,
        Family.NETWORK,
        "packets between sides dropped with probability loss",
        _NEEDS,
        partition,
        _UNDO,
        SidesChoice,
        _check_lossy,
        draw=draw_lossy_link,
    )
)
register(
    FaultType(
        ISOLATE,
        Family.NETWORK,
        "one node cut from every other node; its clients keep it unless clients = true",
        _NEEDS,
        isolate,
        _UNDO,
        IsolateChoice,
        check_node_choice,
        draw=draw_isolate,
    )
)
register(
    FaultType(
        CUT_CLIENTS,
        Family.NETWORK,
        "one broker cut from the clients only",
        _NEEDS,
        cut_clients,
        _UNDO,
        LinkChoice,
        check_node_choice,
        draw=draw_cut_clients,
    )
)
