"""Kafka's own command-line tools, run from the cached jars: ``failsafe kafka TOOL ARGS...``.

Each tool maps to the main classes it has had across Kafka versions; the first class present
in the jars wins, so the same name works for Kafka 4.x and 3.9.x.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from failsafe.errors import UserError
from failsafe.jvm.java import find_java
from failsafe.jvm.jvm import tool_command
from failsafe.jvm.kafka import KafkaDist
from failsafe.supervisor import run_to_end, spawn
from failsafe.tools.connections import bootstrap_args, command_config

TOOLS: dict[str, tuple[str, ...]] = {
    "topics": ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"),
    "console-producer": ("org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"),
    "console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"),
    "consumer-groups": (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "kafka.admin.ConsumerGroupCommand",
    ),
    "leader-election": ("org.apache.kafka.tools.LeaderElectionCommand", "kafka.admin.LeaderElectionCommand"),
    "producer-perf-test": ("org.apache.kafka.tools.ProducerPerformance",),
    "consumer-perf-test": ("org.apache.kafka.tools.ConsumerPerformance", "kafka.tools.ConsumerPerformance"),
    "verifiable-producer": ("org.apache.kafka.tools.VerifiableProducer",),
    "verifiable-consumer": ("org.apache.kafka.tools.VerifiableConsumer",),
    "metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",),
    "configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "get-offsets": ("org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"),
    "reassign-partitions": (
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "kafka.admin.ReassignPartitionsCommand",
    ),
    "log-dirs": ("org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand"),
    "dump-log": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "features": ("org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand"),
    "broker-api-versions": ("org.apache.kafka.tools.BrokerApiVersionsCommand", "kafka.admin.BrokerApiVersionsCommand"),
    "delete-records": ("org.apache.kafka.tools.DeleteRecordsCommand", "kafka.admin.DeleteRecordsCommand"),
    "e2e-latency": ("org.apache.kafka.tools.EndToEndLatency", "kafka.tools.EndToEndLatency"),
    "transactions": ("org.apache.kafka.tools.TransactionsCommand",),
    "acls": ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"),
    "cluster": ("org.apache.kafka.tools.ClusterTool",),
    "storage": ("kafka.tools.StorageTool",),
    "replica-verification": ("org.apache.kafka.tools.ReplicaVerificationTool",),
    "groups": ("org.apache.kafka.tools.GroupsCommand",),
    "share-groups": ("org.apache.kafka.tools.consumer.group.ShareGroupCommand",),
    "console-share-consumer": ("org.apache.kafka.tools.consumer.ConsoleShareConsumer",),
    "share-consumer-perf-test": ("org.apache.kafka.tools.ShareConsumerPerformance",),
    "verifiable-share-consumer": ("org.apache.kafka.tools.VerifiableShareConsumer",),
    # Kafka 3.9's zookeeper-shell.sh (ZooKeeper's own shell, with Kafka's TLS options).
    "zookeeper-shell": ("org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka",),
}
# Scripts of Kafka's bin/ that start a server: failsafe starts, tracks and stops those itself.
SERVER_SCRIPTS = {
    "zookeeper-server-start": "failsafe zookeeper start ID (or failsafe up --mode zookeeper)",
    "zookeeper-server-stop": "failsafe zookeeper stop ID (or failsafe down)",
    "server-start": "failsafe broker start ID (or failsafe up)",
    "server-stop": "failsafe broker stop ID (or failsafe down)",
}

# Options through which a tool is told where the cluster is; failsafe adds the local cluster's
# bootstrap servers only when none of them is given.
_CONNECT_OPTIONS = ("--bootstrap-server", "--broker-list", "--bootstrap-controller", "--zookeeper", "--command-config")
# The option through which a tool takes a client properties file, where it is not --command-config.
_CONFIG_OPTIONS = {
    "console-producer": "--producer.config",
    "console-consumer": "--consumer.config",
    "producer-perf-test": "--producer.config",
    "consumer-perf-test": "--consumer.config",
}
_TOOLS_TAKING_BOOTSTRAP = {
    "topics",
    "console-producer",
    "console-consumer",
    "consumer-groups",
    "leader-election",
    "configs",
    "get-offsets",
    "reassign-partitions",
    "log-dirs",
    "features",
    "broker-api-versions",
    "delete-records",
    "transactions",
    "acls",
    "groups",
    "share-groups",
    "verifiable-producer",
    "verifiable-consumer",
    "producer-perf-test",
    "consumer-perf-test",
    "console-share-consumer",
    "share-consumer-perf-test",
    "verifiable-share-consumer",
}
# --version and --help print and exit without any cluster.
_STANDALONE_OPTIONS = ("--version", "--help", "-h")


def tool_names() -> list[str]:
    return sorted(TOOLS)


def main_class(dist: KafkaDist, tool: str) -> str:
    name = tool.removeprefix("kafka-").removesuffix(".sh")
    if name in SERVER_SCRIPTS:
        raise UserError(f"{tool} would start or stop a node failsafe does not track: use {SERVER_SCRIPTS[name]}")
    candidates = TOOLS.get(name)
    if candidates is None:
        raise UserError(f"unknown Kafka tool {tool!r}: choose one of {', '.join(tool_names())}")
    for cls in candidates:
        if dist.has_class(cls):
            return cls
    raise UserError(f"Kafka {dist.version} has no {tool} tool (looked for {', '.join(candidates)})")


def needs_bootstrap(tool: str, args: list[str]) -> bool:
    tool = tool.removeprefix("kafka-").removesuffix(".sh")
    if tool not in _TOOLS_TAKING_BOOTSTRAP:
        return False
    given = {a.split("=", 1)[0] for a in args}
    return not (given & set(_CONNECT_OPTIONS) or given & set(_STANDALONE_OPTIONS))


TOOL_STOP_TIMEOUT_S = 10.0


def zookeeper_shell_args(args: list[str], zookeeper_connect: str | None) -> list[str]:
    """As zookeeper-shell.sh runs it: ``-server HOST:PORT[,...] [command]``, the cluster's ensemble unless one is
    given."""
    args = args[1:] if args[:1] == ["-server"] else args
    if args and ":" in args[0]:
        return ["-server", *args]
    if not zookeeper_connect:
        raise UserError(
            "zookeeper-shell needs a ZooKeeper (host:port as its first argument): this cluster has none "
            "(start one with 'failsafe up --mode zookeeper')"
        )
    return ["-server", zookeeper_connect, *args]


def run_tool(
    dist: KafkaDist,
    tool: str,
    args: list[str],
    bootstrap_servers: str | None = None,
    zookeeper_connect: str | None = None,
) -> int:
    """Run a Kafka tool with our terminal's stdin and stdout; it dies with us.

    It runs in a session of its own, so the terminal's Ctrl-C reaches only us: we then stop it
    with SIGTERM (its shutdown hook prints what a console consumer had processed).
    """
    cls = main_class(dist, tool)
    if bootstrap_servers and needs_bootstrap(tool, args):
        # On a secured cluster of failsafe's, as its admin user (the console tools take their client's file).
        option = _CONFIG_OPTIONS.get(tool.removeprefix("kafka-").removesuffix(".sh"), "--command-config")
        args = ["--bootstrap-server", bootstrap_servers, *command_config(bootstrap_servers, option=option), *args]
    if tool.removeprefix("kafka-").removesuffix(".sh") == "zookeeper-shell":
        args = zookeeper_shell_args(args, zookeeper_connect)
    child = spawn(tool_command(find_java(), dist, cls, args), name=f"kafka {tool}", stdin=None, env=os.environ.copy())
    try:
        return child.wait(timeout_s=None)
    except KeyboardInterrupt:
        child.stop(TOOL_STOP_TIMEOUT_S)
        raise


ELR_TIMEOUT_S = 60.0
_ELR_LINE = re.compile(r"Topic: (\S+)\tPartition: (\d+)\t.*\tElr: ([\d,]*)\tLastKnownElr: ([\d,]*)")


def eligible_leader_replicas(
    dist: KafkaDist, bootstrap_servers: str, topics: list[str]
) -> dict[tuple[str, int], tuple[str, str]]:
    """``Elr`` and ``LastKnownElr`` of every partition of ``topics``, as Kafka's own describe prints them (KIP-966).

    librdkafka has no DescribeTopicPartitions (the only request that returns them), so Kafka's TopicCommand asks.
    """
    out: dict[tuple[str, int], tuple[str, str]] = {}
    for topic in topics:
        done = run_to_end(
            tool_command(
                find_java(),
                dist,
                main_class(dist, "topics"),
                [*bootstrap_args(bootstrap_servers), "--describe", "--topic", topic],
            ),
            name="kafka-topics --describe",
            timeout_s=ELR_TIMEOUT_S,
        )
        if done.returncode != 0:
            last = done.output.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            raise UserError(f"Kafka's kafka-topics --describe of {topic} failed: {last[0]}")
        for m in _ELR_LINE.finditer(done.output):
            out[(m.group(1), int(m.group(2)))] = (m.group(3), m.group(4))
    return out


FEATURES_TIMEOUT_S = 60.0
# The KRaft features failsafe sets by number (metadata.version is not a number and moves with a rolling upgrade's
# finalize): the set-feature action's and the feature-downgrade fault's.
SETTABLE_FEATURES = (
    "transaction.version",
    "eligible.leader.replicas.version",
    "group.version",
    "share.version",
    "streams.version",
    "kraft.version",
)
_FEATURE_LINE = re.compile(
    r"Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+FinalizedVersionLevel: (\S+)"
)


def tool_output(
    dist: KafkaDist,
    tool: str,
    args: list[str],
    timeout_s: float,
    error: Callable[[str], Exception] = UserError,
    what: str | None = None,
) -> str:
    """Run Kafka's ``tool`` (``features``, ``metadata-quorum``, ...) with ``args`` to its end and return what it
    printed; if it failed, raise ``error`` with ``kafka-TOOL WHAT failed: `` and its last line."""
    done = run_to_end(
        tool_command(find_java(), dist, main_class(dist, tool), args),
        name=f"kafka-{tool} {what or args[-1]}",
        timeout_s=timeout_s,
    )
    if done.returncode != 0:
        lines = [line for line in done.output.strip().splitlines() if line.strip()]
        raise error(
            f"kafka-{tool} {what or ' '.join(args)} failed: {lines[-1] if lines else f'exit {done.returncode}'}"
        )
    return done.output


def _features(dist: KafkaDist, bootstrap_servers: str, args: list[str]) -> str:
    return tool_output(
        dist, "features", [*bootstrap_args(bootstrap_servers), *args], FEATURES_TIMEOUT_S, what=" ".join(args)
    )


def finalized_features(dist: KafkaDist, bootstrap_servers: str) -> dict[str, tuple[str, str, str]]:
    """Each feature's supported minimum and maximum and its finalized level, as ``kafka-features describe`` prints
    them."""
    return {
        m.group(1): (m.group(2), m.group(3), m.group(4))
        for m in _FEATURE_LINE.finditer(_features(dist, bootstrap_servers, ["describe"]))
    }


def upgrade_release(dist: KafkaDist, bootstrap_servers: str, release: str) -> None:
    """``kafka-features upgrade --release-version RELEASE``: metadata.version and every feature to the release's
    defaults (the last step of a rolling upgrade: Kafka's upgrade notes)."""
    _features(dist, bootstrap_servers, ["upgrade", "--release-version", release])


def set_feature_level(
    dist: KafkaDist,
    bootstrap_servers: str,
    feature: str,
    level: int,
    known: dict[str, tuple[str, str, str]] | None = None,
) -> int:
    """Finalize ``feature`` at ``level`` (an upgrade or a downgrade, as needed); returns the level the cluster then
    reports. ``known``: the caller's fresh finalized_features, saving one kafka-features JVM."""
    known = known if known is not None else finalized_features(dist, bootstrap_servers)
    if feature not in known:
        raise UserError(
            f"this cluster has no feature {feature} (Kafka {dist.version}): its features are {', '.join(sorted(known))}"
        )
    low, high, current = known[feature]
    if not int(low) <= level <= int(high):
        raise UserError(f"{feature}={level} is outside what this cluster supports ({low}-{high})")
    if int(current) != level:
        _features(
            dist,
            bootstrap_servers,
            ["upgrade" if level > int(current) else "downgrade", "--feature", f"{feature}={level}"],
        )
    return int(finalized_features(dist, bootstrap_servers)[feature][2])
