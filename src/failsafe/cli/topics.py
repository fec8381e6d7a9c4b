"""failsafe topics create | list | describe | alter | delete."""

from __future__ import annotations

from pathlib import Path

import click

from failsafe.cli.options import (
    bootstrap_option,
    dir_option,
    parse_pairs,
    resolve_bootstrap,
    resolve_dir,
    stderr,
    timeout_option,
)
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.tools.admin import DEFAULT_TIMEOUT_S
from failsafe.tools.kafka_tools import eligible_leader_replicas
from failsafe.tools.topics import Topics, format_describe


def _topics(bootstrap_server: str | None, cluster_dir: Path | None, timeout_s: float) -> Topics:
    return Topics(resolve_bootstrap(bootstrap_server, cluster_dir), timeout_s)


def _client_options(f):
    return dir_option(bootstrap_option(timeout_option(DEFAULT_TIMEOUT_S, "How long to wait for Kafka to answer.")(f)))


@click.group("topics")
def topics() -> None:
    """Create, list, describe, alter and delete topics (like kafka-topics.sh)."""


@topics.command("create")
@click.argument("name")
@click.option("--partitions", type=int, required=True)
@click.option("--replication-factor", type=int, required=True)
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", help="A topic config (repeatable).")
@_client_options
def create(
    name: str,
    partitions: int,
    replication_factor: int,
    configs: tuple[str, ...],
    cluster_dir,
    bootstrap_server,
    timeout_s,
) -> None:
    """Create topic NAME."""
    _topics(bootstrap_server, cluster_dir, timeout_s).create(
        name, partitions, replication_factor, parse_pairs(configs, "--config")
    )
    click.echo(f"Created topic {name}.")


@topics.command("list")
@_client_options
def list_(cluster_dir, bootstrap_server, timeout_s) -> None:
    """Every topic, one per line."""
    for name in _topics(bootstrap_server, cluster_dir, timeout_s).list():
        click.echo(name)


@topics.command("describe")
@click.argument("name", required=False)
@_client_options
def describe(name: str | None, cluster_dir, bootstrap_server, timeout_s) -> None:
    """Leader, replicas and ISR of each partition, exactly as kafka-topics.sh --describe prints them.

    Elr and LastKnownElr (KIP-966) come from Kafka's own describe, for topics with a partition that lost a replica
    from its ISR (elsewhere they are empty): librdkafka cannot ask for them.
    """
    infos = _topics(bootstrap_server, cluster_dir, timeout_s).describe([name] if name else None)
    elr_known, elr = True, None
    if not bootstrap_server:
        # A ZooKeeper-mode broker cannot describe eligible leader replicas; with --bootstrap-server the mode is not
        # known.
        cluster = Cluster.open(resolve_dir(cluster_dir))
        elr_known = cluster.mode.describes_elr
        shrunk = [i.name for i in infos if i.may_have_elr]
        if elr_known and shrunk:
            elr = eligible_leader_replicas(cluster.dist, cluster.bootstrap_servers, shrunk)
    for info in infos:
        click.echo(format_describe(info, elr_known, elr))


@topics.command("alter")
@click.argument("name")
@click.option(
    "--config", "configs", multiple=True, required=True, metavar="KEY=VALUE", help="A topic config to set (repeatable)."
)
@_client_options
def alter(name: str, configs: tuple[str, ...], cluster_dir, bootstrap_server, timeout_s) -> None:
    """Set configs of topic NAME (e.g. min.insync.replicas=2)."""
    pairs = parse_pairs(configs, "--config")
    _topics(bootstrap_server, cluster_dir, timeout_s).alter(name, pairs)
    stderr.print(f"Updated {', '.join(f'{k}={v}' for k, v in pairs.items())} on topic {name}.")


@topics.command("delete")
@click.argument("name")
@_client_options
def delete(name: str, cluster_dir, bootstrap_server, timeout_s) -> None:
    """Delete topic NAME."""
    _topics(bootstrap_server, cluster_dir, timeout_s).delete(name)
    click.echo(f"Deleted topic {name}.")
