"""failsafe kafka TOOL ARGS...: Kafka's own tools from the cached jars."""

from __future__ import annotations

import click

from failsafe.cli.options import check_kafka_version, resolve_dir
from failsafe.cluster.state import ClusterDir
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, kafka_dist
from failsafe.supervisor import UP
from failsafe.tools.kafka_tools import run_tool, tool_names


@click.command(
    "kafka",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog="Tools: " + ", ".join(tool_names()),
)
@click.argument("tool")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--kafka-version",
    default=None,
    callback=check_kafka_version,
    help="Kafka release whose tools to run [default: the cluster's, else the default].",
)
def kafka_command(tool: str, args: tuple[str, ...], kafka_version: str | None) -> None:
    """Run Kafka's TOOL (e.g. topics, console-producer, consumer-groups) with ARGS, verbatim.

    Without --bootstrap-server, the tool is pointed at the failsafe cluster in $FAILSAFE_DIR
    (or ./failsafe-cluster) when one is there; zookeeper-shell, at its ZooKeeper.
    """
    root = resolve_dir(None)
    cluster = Cluster.open(root) if ClusterDir(root).has_state() else None
    version = kafka_version or (cluster.spec.kafka_version if cluster else DEFAULT_KAFKA_VERSION)
    zookeeper_connect = None
    if cluster and cluster.spec.zookeepers:
        # Only the nodes that are up: ZooKeeper's shell runs a one-shot command on whichever server it
        # picks first and fails with ConnectionLoss if that one is down.
        up = [n for n in cluster.spec.zookeeper_nodes() if cluster.node_state(n) == UP]
        zookeeper_connect = ",".join(f"127.0.0.1:{n.port}" for n in up) or cluster.spec.zookeeper_connect()
    code = run_tool(
        kafka_dist(version), tool, list(args), cluster.bootstrap_servers if cluster else None, zookeeper_connect
    )
    raise click.exceptions.Exit(code)
