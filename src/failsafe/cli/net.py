"""``failsafe net partition|isolate|cut-clients|heal|status``: network faults by hand (faults/network.py).

Each fault is one chain of rules in the cluster's own nftables table; it stays until ``net heal``,
``down`` or ``clean``, like a broker killed with ``failsafe broker kill``. Every one is written to
the operator's journal, so ``failsafe status`` shows it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.table import Table

from failsafe.cli.options import dir_option, resolve_dir, stderr, stdout
from failsafe.cluster.net import netfilter
from failsafe.cluster.observe import journal
from failsafe.cluster.observe.journal import NET_FAULT, NET_HEAL
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.errors import UserError
from failsafe.faults import network
from failsafe.faults.sides import Side, parse_sides, resolve_sides
from failsafe.tools.admin import fetch_metadata, new_admin

METADATA_TIMEOUT_S = 10.0


@click.group("net")
def net() -> None:
    """Network faults: cut links between nodes, or between brokers and their clients (root and nftables)."""


def _journal(cluster: Cluster, action: str, started_ns: int, detail: dict, error: str | None = None) -> None:
    journal.append(
        cluster.dir.journal,
        journal.OperatorAction(
            started_ns, time.time_ns(), action, "network", None, "cli", error is None, error, detail
        ),
    )


def _apply(cluster_dir: Path | None, kind: str, make: object) -> None:
    netfilter.require_available()
    cluster = Cluster.open(resolve_dir(cluster_dir))
    started = time.time_ns()
    try:
        fault = make(cluster)  # type: ignore[operator]
    except UserError as e:
        _journal(cluster, NET_FAULT, started, {"kind": kind}, str(e))
        raise
    first = [n.node_id for n in fault.sides[0].nodes]
    _journal(
        cluster,
        NET_FAULT,
        started,
        {"chain": fault.chain, "fault": fault.comment, "kind": kind, "nodes": first, **fault.details},
    )
    stderr.print(f"{fault.chain}: {fault.comment} (undo: failsafe net heal {fault.chain})")


def _partition_sample(cluster: Cluster, name: str | None) -> dict | None:
    if name is None:
        return None
    topic, _, number = name.rpartition("-")
    if not topic or not number.isdigit():
        raise UserError(f"--partition {name!r}: write TOPIC-N, e.g. events-0")
    metadata = fetch_metadata(
        new_admin(cluster.bootstrap_servers), cluster.bootstrap_servers, METADATA_TIMEOUT_S, topic
    )
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or int(number) not in found.partitions:
        raise UserError(f"--partition {name}: no such partition on the cluster ('failsafe topics list' shows them)")
    p = found.partitions[int(number)]
    return {
        "topic": topic,
        "partition": int(number),
        "leader": p.leader,
        "replicas": list(p.replicas),
        "isr": list(p.isrs),
    }


@net.command("partition")
@click.argument("sides")
@click.option(
    "--loss",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Drop this share of the packets between the sides (a lossy link) instead of all of them.",
)
@click.option(
    "--partition",
    "topic_partition",
    metavar="TOPIC-N",
    default=None,
    help="The partition whose leader, followers or replicas the sides name.",
)
@dir_option
def partition_command(sides: str, loss: float | None, topic_partition: str | None, cluster_dir: Path | None) -> None:
    """Split the cluster: SIDES like '{0} | {1,2,controllers}' (both ways) or '{0} -> {1}' (0's packets to 1 dropped).

    A side names node ids and brokers, controllers, zookeeper, clients, others, leader, followers, replicas
    (with --partition) and controller (the active one). One side alone is cut from every other node.
    """
    parsed = parse_sides(sides)

    def make(cluster: Cluster) -> network.NetworkFault:
        resolved = resolve_sides(
            parsed, cluster.spec, _partition_sample(cluster, topic_partition), cluster.active_controller_node()
        )
        return network.apply(cluster, resolved, parsed.one_way, loss)

    _apply(cluster_dir, "lossy-link" if loss is not None and loss < 1 else "partition", make)


@net.command("isolate")
@click.argument("node_id", type=int, metavar="ID")
@click.option("--clients", is_flag=True, help="Cut its clients off too (by default they keep reaching it).")
@dir_option
def isolate_command(node_id: int, clients: bool, cluster_dir: Path | None) -> None:
    """Cut broker or controller ID off from every other node; its clients keep reaching it unless --clients."""

    def make(cluster: Cluster) -> network.NetworkFault:
        node = cluster.node(node_id)
        others = tuple(n for n in cluster.spec.nodes() if n != node)
        return network.apply(cluster, [Side((node,)), Side(others, clients)])

    _apply(cluster_dir, "isolate", make)


@net.command("cut-clients")
@click.argument("node_id", type=int, metavar="ID")
@dir_option
def cut_clients_command(node_id: int, cluster_dir: Path | None) -> None:
    """Cut broker ID off from the clients only; it keeps replicating and talking to the controller."""

    def make(cluster: Cluster) -> network.NetworkFault:
        node = cluster.node(node_id, "broker")
        return network.apply(cluster, [Side((node,)), Side((), True)])

    _apply(cluster_dir, "cut-clients", make)


@net.command("heal")
@click.argument("chain", required=False)
@dir_option
def heal_command(chain: str | None, cluster_dir: Path | None) -> None:
    """Remove one network fault (CHAIN, as 'net status' lists it) or, without CHAIN, every one of this cluster."""
    netfilter.require_available()
    cluster = Cluster.open(resolve_dir(cluster_dir))
    started = time.time_ns()
    removed = network.heal(cluster, chain)
    _journal(cluster, NET_HEAL, started, {"removed": removed, "chains": [r.split(":")[0] for r in removed]})
    stderr.print("healed: " + "; ".join(removed) if removed else "no network fault was in force")


@net.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@dir_option
def status_command(as_json: bool, cluster_dir: Path | None) -> None:
    """The network faults in force: chain, what it cuts, packets dropped so far, and the nft rules."""
    cluster = Cluster.open(resolve_dir(cluster_dir))
    chains = cluster.nodes.net_chains()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "table": f"inet {netfilter.table_name(cluster.dir.root)}",
                    "unavailable": netfilter.unavailable_reason(),
                    "faults": [
                        {"chain": c.name, "fault": c.comment, "dropped_packets": c.dropped_packets, "rules": c.rules}
                        for c in chains
                    ],
                },
                indent=2,
            )
        )
        return
    reason = netfilter.unavailable_reason()
    if reason:
        stderr.print(reason)
    if not chains:
        stdout.print(f"no network fault in force (nftables table inet {netfilter.table_name(cluster.dir.root)})")
        return
    table = Table(
        title=f"network faults of {cluster.dir.root} (nftables table inet {netfilter.table_name(cluster.dir.root)})"
    )
    for col in ("chain", "fault", "dropped packets", "rules"):
        table.add_column(col)
    for c in chains:
        table.add_row(c.name, c.comment, str(c.dropped_packets), "\n".join(c.rules))
    stdout.print(table)
