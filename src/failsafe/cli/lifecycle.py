"""The cluster's life beyond up and down: a rolling upgrade of its Kafka release (docs/lifecycle.md)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from failsafe.cli.options import check_kafka_version, dir_option, resolve_dir, stderr, timeout_option


@click.command("upgrade")
@dir_option
@click.option(
    "--to",
    "to",
    required=True,
    callback=check_kafka_version,
    help="The Kafka release to roll every node onto (resolved first: failsafe setup --kafka-version).",
)
@click.option(
    "--finalize/--no-finalize",
    default=True,
    show_default=True,
    help="After the last roll, finalize the features at the release (kafka-features upgrade --release-version): no "
    "way back after it. Without: the nodes run the new release on the old metadata.version, and 'failsafe upgrade "
    "--to OLD' rolls them back.",
)
@timeout_option(180.0, "How long each node may take to be ready again.")
def upgrade_command(cluster_dir: Path | None, to: str, finalize: bool, timeout_s: float) -> None:
    """Roll a running KRaft cluster onto another Kafka release, one node at a time, controllers first.

    Controllers first (the active one last), then brokers: each a controlled shutdown, started again on TO's jars,
    and waited on until it is ready and no partition is under-replicated; then the features finalized at TO's
    release. A failed step stops with one line saying what each node runs, and leaves the cluster running.
    """
    from failsafe.cluster.topology.lifecycle import Cluster
    from failsafe.cluster.topology.upgrade import Upgrade

    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    started = time.monotonic()
    with cluster.dir.lock(), stderr.status(f"upgrading to Kafka {to}") as status:

        def step_done(step, ok: bool, error: str | None) -> None:
            if ok:
                stderr.print(f"[dim]{time.monotonic() - started:6.1f}s[/] {step.description}: done")

        upgrade = Upgrade(
            cluster,
            to,
            finalize,
            lambda message: status.update(f"upgrading to Kafka {to}: {message}"),
            step_timeout_s=timeout_s,
        )
        upgrade.run(done=step_done)
    for feature, (before, after) in sorted(upgrade.changed.items()):
        note = " (a static quorum made dynamic for good: KAFKA-21426)" if feature == "kraft.version" else ""
        stderr.print(f"finalized {feature}: {before} -> {after}{note}")
    finalized = f"finalized at {cluster.spec.kafka_version}" if finalize else "not finalized"
    stderr.print(
        f"every node of the cluster at {root} runs Kafka {to} ({finalized}) after {time.monotonic() - started:.0f}s"
    )


@click.command("add")
@dir_option
@click.option(
    "--id",
    "node_id",
    type=click.IntRange(min=0),
    default=None,
    help="The controller's id: a removed controller's again, or the next one [default: the first free].",
)
@timeout_option(120.0, "How long the new controller may take to start and become a voter.")
def controller_add_command(cluster_dir: Path | None, node_id: int | None, timeout_s: float) -> None:
    """Add a controller to a running dynamic quorum (failsafe up --dynamic-quorum): a new node, formatted with
    --no-initial-controllers, started as an observer and made a voter with kafka-metadata-quorum add-controller."""
    from failsafe.cluster.topology.lifecycle import Cluster
    from failsafe.cluster.topology.quorum import add_controller, voters

    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    started = time.monotonic()
    with cluster.dir.lock(), stderr.status("adding a controller") as status:
        node = add_controller(cluster, node_id, lambda m: status.update(f"adding a controller: {m}"), timeout_s)
        now = sorted(voters(cluster))
    took = time.monotonic() - started
    stderr.print(f"controller {node.node_id} is a voter after {took:.1f}s; the voters: {', '.join(map(str, now))}")


@click.command("remove")
@dir_option
@click.argument("node_id", type=int, required=False)
@timeout_option(120.0, "How long the quorum may take to drop the controller from its voters.")
def controller_remove_command(cluster_dir: Path | None, node_id: int | None, timeout_s: float) -> None:
    """Remove a controller (NODE_ID, or the active one) from a running dynamic quorum with kafka-metadata-quorum
    remove-controller, then stop it; its id can be added again (with a new disk)."""
    from failsafe.cluster.topology.lifecycle import Cluster
    from failsafe.cluster.topology.quorum import remove_controller, voters

    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    started = time.monotonic()
    with cluster.dir.lock(), stderr.status("removing a controller") as status:
        node = remove_controller(cluster, node_id, lambda m: status.update(f"removing a controller: {m}"), timeout_s)
        now = sorted(voters(cluster))
    took = time.monotonic() - started
    stderr.print(
        f"controller {node.node_id} removed and stopped after {took:.1f}s; the voters: {', '.join(map(str, now))}"
    )


@click.command("add")
@dir_option
@timeout_option(120.0, "How long the new broker may take to start and be registered.")
def broker_add_command(cluster_dir: Path | None, timeout_s: float) -> None:
    """Add a broker (the next id) to a running KRaft cluster: its storage formatted with the cluster's id, started,
    waited on until every broker sees it registered. It holds no partition until some are moved to it
    ('failsafe reassign')."""
    from failsafe.cluster.topology.brokers import add_broker
    from failsafe.cluster.topology.lifecycle import Cluster

    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    started = time.monotonic()
    with cluster.dir.lock(), stderr.status("adding a broker") as status:
        node = add_broker(cluster, lambda m: status.update(f"adding a broker: {m}"), timeout_s)
    stderr.print(
        f"broker {node.node_id} ({node.client_address}:{node.port}) is registered after "
        f"{time.monotonic() - started:.1f}s; the cluster has {cluster.spec.brokers} brokers"
    )


@click.command("reassign")
@dir_option
@click.option("--from", "source", type=click.IntRange(min=0), required=True, help="The broker whose replicas move.")
@click.option(
    "--to",
    "destination",
    type=click.IntRange(min=0),
    default=None,
    help="The broker they move to [default: the newest].",
)
@click.option("--topic", "topics", multiple=True, required=True, help="A topic whose replicas move (repeatable).")
@click.option(
    "--throttle",
    type=click.IntRange(min=1),
    default=None,
    help="Replication throttle in bytes per second per broker (kafka-reassign-partitions --throttle) [default: none].",
)
@timeout_option(300.0, "How long the move may take.")
def reassign_command(
    cluster_dir: Path | None,
    source: int,
    destination: int | None,
    topics: tuple[str, ...],
    throttle: int | None,
    timeout_s: float,
) -> None:
    """Move every replica of the topics on one broker to another with kafka-reassign-partitions (throttled when asked),
    wait until the new replicas are in force and in sync, and let --verify confirm it and clear the throttles."""
    from failsafe.cluster.topology.lifecycle import Cluster
    from failsafe.cluster.topology.reassign import reassign

    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    brokers = [n.node_id for n in cluster.spec.brokers_nodes()]
    destination = max(brokers) if destination is None else destination
    for what, broker in (("--from", source), ("--to", destination)):
        if broker not in brokers:
            raise click.UsageError(f"{what} {broker}: the cluster's brokers are {', '.join(map(str, brokers))}")
    started = time.monotonic()
    plan_file = cluster.dir.root / f"reassignment-{int(time.time())}.json"
    with stderr.status("reassigning") as status:
        move = reassign(
            cluster.dist,
            cluster.bootstrap_servers,
            list(topics),
            source,
            destination,
            plan_file,
            throttle,
            lambda m: status.update(m),
            timeout_s,
        )
    stderr.print(
        f"{len(move.plan)} partition(s) moved from broker {source} to broker {destination} in "
        f"{time.monotonic() - started:.1f}s ({move.verified}); the plan: {plan_file}"
    )
