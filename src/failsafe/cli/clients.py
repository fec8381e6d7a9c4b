"""produce, consume, groups, leader-election: the tutorials' client commands."""

from __future__ import annotations

import json
import sys
import time

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
from failsafe.errors import UserError
from failsafe.tools.admin import DEFAULT_TIMEOUT_S
from failsafe.tools.consume import DEFAULT_FORMAT, ConsumeOptions, consume
from failsafe.tools.groups import describe_group, elect_preferred_leaders, format_group, list_groups
from failsafe.tools.produce import ACKS, produce_lines
from failsafe.tools.produce import key_separator as key_separator_for

_connect_timeout = timeout_option(DEFAULT_TIMEOUT_S, "How long to wait for Kafka to answer.")


@click.command("produce")
@click.argument("topic")
@click.option("--key-separator", default=None, help="Split each line into key SEP value.")
@click.option("--acks", type=click.Choice(sorted(ACKS)), default="all", show_default=True)
@click.option(
    "--property",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A librdkafka producer property, or the console producer's parse.key / key.separator (repeatable).",
)
@click.option(
    "--print-acks", is_flag=True, help="Print 'Successfully produced ...' with partition and offset for each ack."
)
@dir_option
@bootstrap_option
@_connect_timeout
def produce_command(
    topic: str,
    key_separator: str | None,
    acks: str,
    properties: tuple[str, ...],
    print_acks: bool,
    cluster_dir,
    bootstrap_server,
    timeout_s,
) -> None:
    """Send lines from stdin to TOPIC; each is acknowledged or reported on stderr as failed."""
    props = parse_pairs(properties, "--property")
    report = produce_lines(
        resolve_bootstrap(bootstrap_server, cluster_dir),
        topic,
        sys.stdin,
        separator=key_separator_for(key_separator, props),
        acks=acks,
        properties=props,
        print_acks=print_acks,
        timeout_s=timeout_s,
    )
    failed = report.failed + len(report.skipped_lines)
    if failed:
        stderr.print(f"{failed} of {report.sent + len(report.skipped_lines)} messages were not delivered")
        raise click.exceptions.Exit(1)


@click.command("consume")
@click.argument("topic")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset instead of the end.")
@click.option("--group", default=None, help="Join consumer group G (rebalances printed to stderr as kcat does).")
@click.option(
    "--share-group",
    default=None,
    help="Join share group S (KIP-932): records are acquired, printed and accepted one by one, "
    "shared with the group's other members whatever the partitions.",
)
@click.option(
    "--format", "fmt", default=DEFAULT_FORMAT, show_default=True, help="kcat's format: %t %p %o %k %s %T %K %S, \\n."
)
@click.option("--max-messages", type=click.IntRange(min=1), default=None, help="Exit after N records.")
@click.option(
    "--timeout-s",
    "idle_timeout_s",
    type=click.FloatRange(min=0.1),
    default=None,
    help="Exit after S seconds without a record.",
)
@click.option("--exit-at-end", is_flag=True, help="Exit when every assigned partition is read to its end (kcat -e).")
@click.option(
    "--property", "properties", multiple=True, metavar="KEY=VALUE", help="A librdkafka consumer property (repeatable)."
)
@dir_option
@bootstrap_option
@click.option(
    "--connect-timeout-s",
    type=click.FloatRange(min=0.1),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="How long to wait for Kafka to answer at start.",
)
def consume_command(
    topic: str,
    from_beginning: bool,
    group: str | None,
    share_group: str | None,
    fmt: str,
    max_messages: int | None,
    idle_timeout_s: float | None,
    exit_at_end: bool,
    properties: tuple[str, ...],
    cluster_dir,
    bootstrap_server,
    connect_timeout_s: float,
) -> None:
    """Print records of TOPIC to stdout."""
    if group and share_group:
        raise UserError("--group and --share-group: a member joins a consumer group or a share group, not both")
    opts = ConsumeOptions(
        topic=topic,
        from_beginning=from_beginning,
        group=group,
        fmt=fmt,
        max_messages=max_messages,
        timeout_s=idle_timeout_s,
        exit_at_end=exit_at_end,
        properties=parse_pairs(properties, "--property"),
    )
    try:
        if share_group:
            from failsafe.tools.share_consume import consume_share

            consume_share(resolve_bootstrap(bootstrap_server, cluster_dir), share_group, opts, connect_timeout_s)
        else:
            consume(resolve_bootstrap(bootstrap_server, cluster_dir), opts, connect_timeout_s)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how an open-ended consumer is meant to stop; it left its group cleanly


@click.group("groups")
def groups() -> None:
    """Consumer groups (like kafka-consumer-groups.sh)."""


_share_option = click.option(
    "--share", is_flag=True, help="Share groups (KIP-932), as Kafka's kafka-share-groups describes them."
)


def _share_tools(cluster_dir):
    """Kafka's distribution whose tools describe share groups: the cluster's release, else the default."""
    from failsafe.cluster.state import ClusterDir
    from failsafe.cluster.topology.lifecycle import Cluster
    from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, kafka_dist

    root = resolve_dir(cluster_dir)
    version = Cluster.open(root).spec.kafka_version if ClusterDir(root).has_state() else DEFAULT_KAFKA_VERSION
    return kafka_dist(version)


@groups.command("list")
@_share_option
@dir_option
@bootstrap_option
@_connect_timeout
def groups_list(share: bool, cluster_dir, bootstrap_server, timeout_s) -> None:
    """Every consumer group with its state (with --share: every share group)."""
    bootstrap = resolve_bootstrap(bootstrap_server, cluster_dir)
    if share:
        from failsafe.tools.share_groups import list_share_groups

        for group_id in list_share_groups(_share_tools(cluster_dir), bootstrap):
            click.echo(group_id)
        return
    for group_id, state in list_groups(bootstrap, timeout_s):
        click.echo(f"{group_id}\t{state}")


@groups.command("describe")
@click.argument("group")
@click.option("--json", "as_json", is_flag=True)
@_share_option
@dir_option
@bootstrap_option
@_connect_timeout
def groups_describe(group: str, as_json: bool, share: bool, cluster_dir, bootstrap_server, timeout_s) -> None:
    """Members, assigned partitions, committed offset, log end offset and lag of GROUP (with --share: a share group's
    state, members and their assignments, and each partition's start offset and lag)."""
    if share:
        from failsafe.tools.share_groups import describe_share_group, format_share_group

        found = describe_share_group(_share_tools(cluster_dir), resolve_bootstrap(bootstrap_server, cluster_dir), group)
        click.echo(json.dumps(found.to_json(), indent=2) if as_json else format_share_group(found))
        return
    desc = describe_group(resolve_bootstrap(bootstrap_server, cluster_dir), group, timeout_s)
    if desc.members == 0 and not as_json:
        click.echo(f"\nConsumer group '{group}' has no active members.\n", err=True)
    click.echo(json.dumps(desc.to_json(), indent=2) if as_json else format_group(desc))


@click.command("leader-election")
@click.option("--topic", default=None, help="Only this topic's partitions (all topics when omitted).")
@click.option("--partition", type=click.IntRange(min=0), default=None, help="Only this partition (needs --topic).")
@dir_option
@bootstrap_option
@_connect_timeout
def leader_election_command(topic: str | None, partition: int | None, cluster_dir, bootstrap_server, timeout_s) -> None:
    """Preferred leader election: make each partition's first replica its leader again."""
    if partition is not None and topic is None:
        raise UserError("--partition needs --topic: say which topic's partition to elect a leader for")
    bootstrap = resolve_bootstrap(bootstrap_server, cluster_dir)
    partitions = None
    if topic is not None:
        from failsafe.tools.topics import Topics

        infos = Topics(bootstrap, timeout_s).describe([topic])
        count = len(infos[0].partitions)
        if partition is not None and partition >= count:
            raise UserError(f"topic {topic} has partitions 0-{count - 1}, not {partition}")
        partitions = [(topic, partition)] if partition is not None else [(topic, p) for p in range(count)]
    start_ns = time.time_ns()
    elected, already, failed = elect_preferred_leaders(bootstrap, partitions, timeout_s)
    if bootstrap_server is None:
        from failsafe.cluster.nodes.actions import record_leader_election
        from failsafe.cluster.topology.lifecycle import Cluster

        record_leader_election(Cluster.open(resolve_dir(cluster_dir)), start_ns, "cli", elected, failed)
    if elected:
        click.echo(f"Successfully completed leader election (PREFERRED) for partitions {', '.join(elected)}")
    if already:
        click.echo(f"Valid replica already elected for partitions {', '.join(already)}")
    if failed:
        for line in failed:
            click.echo(f"Error completing leader election (PREFERRED) for partition {line}", err=True)
        raise click.exceptions.Exit(1)
