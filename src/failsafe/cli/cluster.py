"""setup, up, status, down, clean, and broker / controller actions."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import click
from rich.table import Table

from failsafe.cli.hosts import inventory_options, load_inventory
from failsafe.cli.options import (
    check_kafka_version,
    dir_option,
    parse_pairs,
    resolve_dir,
    stderr,
    stdout,
    timeout_option,
)
from failsafe.cli.spark import stop_spark_under
from failsafe.cluster.modes.mode import mode_named
from failsafe.cluster.nodes.actions import NODE_ACTIONS, act_on_node, default_timeout_s
from failsafe.cluster.observe.metrics import endpoint
from failsafe.cluster.observe.status import ClusterStatus, disk_words
from failsafe.cluster.profiles import DEFAULT_PROFILE, spec_fields
from failsafe.cluster.security.modes import MODES as SECURITY_MODES
from failsafe.cluster.spec import (
    BROKER,
    CONTROLLER,
    DEFAULT_BASE_PORT,
    DEFAULT_BROKERS,
    DEFAULT_CONTROLLERS,
    DEFAULT_ZOOKEEPER_PORT,
    KRAFT_MODE,
    MODES,
    ZOOKEEPER,
    ClusterSpec,
)
from failsafe.cluster.state import ClusterDir
from failsafe.cluster.topology import directory as topology
from failsafe.cluster.topology.lifecycle import DEFAULT_READY_TIMEOUT_S, DEFAULT_STOP_TIMEOUT_S, Cluster
from failsafe.errors import FailsafeError, ProvisionError, UserError
from failsafe.jvm.java import find_java
from failsafe.jvm.jmx_exporter import resolve_exporter
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, DEFAULT_ZOOKEEPER_KAFKA_VERSION, resolve_kafka
from failsafe.jvm.spark import installed_pyspark, resolve_spark_kafka

# Click parameter name -> ClusterSpec field, for telling apart what the user set on purpose.
_SPEC_PARAMS = {
    "brokers": "brokers",
    "controllers": "controllers",
    "combined": "combined",
    "base_port": "base_port",
    "controller_base_port": "controller_base_port",
    "kafka_version": "kafka_version",
    "heap": "heap",
    "override": "overrides",
    "mode": "mode",
    "zookeepers": "zookeepers",
    "zookeeper_port": "zookeeper_base_port",
    "racks": "racks",
    "volatile_disks": "volatile_disks",
    "feature": "features",
    "profile": "profile",
    "metrics": "metrics",
    "metrics_base_port": "metrics_base_port",
    "dynamic_quorum": "dynamic_quorum",
    "protocol_proxy": "protocol_proxy",
    "clock_faults": "clock_faults",
    "tiered_storage": "tiered_storage",
    "security": "security",
}


@click.command("setup")
@click.option(
    "--kafka-version",
    "kafka_versions",
    multiple=True,
    default=[DEFAULT_KAFKA_VERSION],
    show_default=True,
    callback=check_kafka_version,
    help=f"Kafka release to resolve from Maven Central (repeatable; {DEFAULT_ZOOKEEPER_KAFKA_VERSION} for ZooKeeper "
    f"mode).",
)
@click.option(
    "--cds/--no-cds",
    default=True,
    show_default=True,
    help="Make a class-data sharing archive of Kafka's classes so nodes start faster (one node started once).",
)
def setup_command(kafka_versions: tuple[str, ...], cds: bool) -> None:
    """Check Java and resolve Kafka's jars into the cache (idempotent)."""
    java = find_java()
    stdout.print(f"Java {java.major} at {java.executable}")
    with stderr.status("resolving Prometheus's JMX exporter from Maven Central"):
        agent = resolve_exporter()
    stdout.print(f"JMX exporter agent {agent}")
    for kafka_version in kafka_versions:
        with stderr.status(f"resolving Kafka {kafka_version} from Maven Central"):
            dist = resolve_kafka(kafka_version)
        stdout.print(f"Kafka {dist.version} jars in {dist.libs_dir}")
        if dist.major >= 4:
            from failsafe.jvm.mirror import resolve_mirror

            with stderr.status(f"resolving MirrorMaker 2 of Kafka {kafka_version} from Maven Central"):
                mirror = resolve_mirror(kafka_version)
            served = (
                "" if mirror.version == kafka_version else f" (connect-mirror {kafka_version} is not on Maven Central)"
            )
            stdout.print(f"MirrorMaker 2 {mirror.version} jars in {mirror.libs_dir}{served}")
        if cds:
            from failsafe.cluster.nodes.cds import ensure_archive

            with stderr.status("class-data sharing archive") as status:
                try:
                    archive = ensure_archive(
                        java, dist, lambda message: status.update(f"class-data sharing archive: {message}")
                    )
                    stdout.print(f"class-data sharing archive {archive}")
                except FailsafeError as e:
                    # Only start-up speed depends on it: say why and carry on.
                    stdout.print(f"class-data sharing archive not made ({e}); nodes start without it")
    try:
        installed_pyspark()
    except ProvisionError as e:
        stdout.print(f"Spark: {e} (only 'failsafe pipeline' needs it)")
        return
    with stderr.status("resolving Spark's Kafka source from Maven Central"):
        spark = resolve_spark_kafka()
    stdout.print(f"Spark {spark.spark_version}: Kafka source jars {', '.join(j.name for j in spark.jars)}")


@click.command("up")
@dir_option
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=KRAFT_MODE,
    show_default=True,
    help="KRaft controllers, or ZooKeeper as in seeds 000, 001 and 004 (Kafka 3.9.x).",
)
@click.option("--brokers", type=click.IntRange(min=1), default=DEFAULT_BROKERS, show_default=True)
@click.option(
    "--racks",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Split the brokers into this many racks (broker.rack rack-0, rack-1, ...; consecutive ids share one).",
)
@click.option(
    "--controllers",
    type=click.IntRange(min=1),
    default=None,
    help=f"KRaft controllers [default: {DEFAULT_CONTROLLERS}; with --combined, one per broker].",
)
@click.option("--combined", is_flag=True, help="Run controllers inside brokers (process.roles=broker,controller).")
@click.option(
    "--dynamic-quorum",
    is_flag=True,
    help="A dynamic controller quorum (KIP-853, kraft.version 1): nodes find it through "
    "controller.quorum.bootstrap.servers, and 'failsafe controller add|remove' change its voters while it runs.",
)
@click.option(
    "--zookeepers",
    type=click.IntRange(min=1),
    default=None,
    help="ZooKeeper nodes in ZooKeeper mode [default: 1, as in the seeds; 3 for a quorum].",
)
@click.option(
    "--zookeeper-port",
    type=click.IntRange(1, 65535),
    default=None,
    help=f"ZooKeeper node N's client port is this + N - 1 [default: {DEFAULT_ZOOKEEPER_PORT}].",
)
@click.option(
    "--kafka-version",
    default=None,
    callback=check_kafka_version,
    help=f"[default: {DEFAULT_KAFKA_VERSION}; {DEFAULT_ZOOKEEPER_KAFKA_VERSION} in ZooKeeper mode]",
)
@click.option(
    "--base-port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_BASE_PORT,
    show_default=True,
    help="Broker N listens on base-port + N.",
)
@click.option(
    "--controller-base-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Controller listeners [default: base-port + 100].",
)
@click.option("--heap", default="1G", show_default=True, help="JVM heap of each node (-Xmx/-Xms).")
@click.option(
    "--profile",
    default=DEFAULT_PROFILE,
    show_default=True,
    metavar="NAME",
    help="Broker, topic and client settings for the cluster and the scenarios run on it: defaults (Kafka's own), "
    "fast-failover or durable ('failsafe profiles' lists them, 'failsafe profiles show NAME' shows one). "
    "An --override of the same server property wins over the profile's.",
)
@click.option(
    "--override",
    multiple=True,
    metavar="KEY=VALUE",
    help="A server property for every node (repeatable); wins over the profile's setting of the same name.",
)
@click.option(
    "--feature",
    multiple=True,
    metavar="FEATURE=LEVEL",
    help="Format the storage with this feature level (KRaft; repeatable), e.g. eligible.leader.replicas.version=0.",
)
@click.option(
    "--volatile-disks",
    is_flag=True,
    help="Put every node's data directory on a disk layer that forgets, on a power cut, what was not fsynced "
    "(what power-loss faults need; /dev/fuse and libfuse 3; docs/disk-faults.md).",
)
@click.option(
    "--protocol-proxy",
    is_flag=True,
    help="Put a Kafka-aware proxy in front of each broker's client listener, at the port the broker advertises (what "
    "protocol faults need: delay-request, hold, drop-response, ...; docs/protocol-faults.md).",
)
@click.option(
    "--clock-faults",
    is_flag=True,
    help="Run every broker and controller with libfaketime preloaded, so that each one's clock can be set apart (what "
    "clock faults need: clock-jump, clock-skew, clock-drift; docs/clock-faults.md).",
)
@click.option(
    "--tiered-storage",
    is_flag=True,
    help="Give the brokers a remote tier (KIP-405): Kafka's LocalTieredStorage on DIR/remote-store, a disk layer of "
    "its own; topics with remote.storage.enable=true move closed segments there (docs/tiered-storage.md).",
)
@click.option(
    "--security",
    type=click.Choice(list(SECURITY_MODES)),
    default="plaintext",
    show_default=True,
    help="Every listener's security: TLS from failsafe's own CA, SASL/SCRAM users made at format time, ACLs through "
    "the StandardAuthorizer; secrets in DIR/secrets, owner-only (docs/security.md). KRaft on this machine.",
)
@click.option(
    "--metrics/--no-metrics",
    default=True,
    show_default=True,
    help="Run every node with Prometheus's JMX exporter (a Java agent) serving its metrics on 127.0.0.1 "
    "(failsafe status lists the endpoints; docs/metrics.md).",
)
@click.option(
    "--metrics-base-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Broker N serves its metrics on this + N, controllers from this + 50, ZooKeeper from this + 90 "
    "[default: base-port + 300].",
)
@click.option(
    "--dr",
    is_flag=True,
    help="Two clusters for disaster recovery: DIR/primary and DIR/backup (every port 1000 higher), "
    "the aliases MirrorMaker uses (docs/failover.md).",
)
@inventory_options
@timeout_option(DEFAULT_READY_TIMEOUT_S, "How long to wait for the cluster to be ready.")
@click.pass_context
def up_command(
    ctx: click.Context,
    cluster_dir: Path | None,
    mode: str,
    brokers: int,
    racks: int,
    controllers: int | None,
    combined: bool,
    dynamic_quorum: bool,
    zookeepers: int | None,
    zookeeper_port: int | None,
    kafka_version: str | None,
    base_port: int,
    controller_base_port: int | None,
    heap: str,
    profile: str,
    override: tuple[str, ...],
    feature: tuple[str, ...],
    volatile_disks: bool,
    protocol_proxy: bool,
    clock_faults: bool,
    tiered_storage: bool,
    security: str,
    metrics: bool,
    metrics_base_port: int | None,
    dr: bool,
    inventory_file: Path | None,
    hosts_list: str | None,
    user: str | None,
    key: Path | None,
    timeout_s: float,
) -> None:
    """Start a cluster (brokers 0,1,2 on 9092-9094 by default) and wait until it is ready.

    KRaft by default (one controller on 9192); with --mode zookeeper, Kafka 3.9 with ZooKeeper on 2181.
    With --dr, a pair of them: primary and backup. With --profile, the profile's broker settings in every node's
    properties (under --override), and its topic and client settings in every scenario run on the cluster.
    With --inventory or --hosts, the nodes run on those hosts, reached over SSH (docs/hosts.md).
    """
    root = resolve_dir(cluster_dir)
    spec = cluster_spec(
        mode,
        brokers=brokers,
        racks=racks,
        controllers=controllers,
        combined=combined,
        zookeepers=zookeepers,
        zookeeper_port=zookeeper_port,
        kafka_version=kafka_version,
        base_port=base_port,
        controller_base_port=controller_base_port,
        heap=heap,
        overrides=parse_pairs(override, "--override"),
        volatile_disks=volatile_disks,
        **({"protocol_proxy": True} if protocol_proxy else {}),
        **({"clock_faults": True} if clock_faults else {}),
        **({"tiered_storage": True} if tiered_storage else {}),
        **({"security": security} if security != "plaintext" else {}),
        features=parse_pairs(feature, "--feature"),
        metrics=metrics,
        metrics_base_port=metrics_base_port,
        **({"dynamic_quorum": True} if dynamic_quorum else {}),
        **spec_fields(profile),
    )
    explicit = {
        field
        for param, field in _SPEC_PARAMS.items()
        if ctx.get_parameter_source(param) not in (click.core.ParameterSource.DEFAULT, None)
    }
    if "profile" in explicit:
        # A stopped cluster made with another version of the profile runs that version's broker settings.
        explicit.add("profile_version")
    if inventory_file is not None or hosts_list is not None:
        if dr:
            raise UserError("--dr makes two clusters on this machine: not yet on hosts")
        from failsafe.cluster.nodes.hosts import place, save_inventory

        inv = load_inventory(inventory_file, hosts_list, user, key)
        spec = replace(spec, placement=place(spec, inv))
        explicit.add("placement")
        if not ClusterDir(root).has_state():
            save_inventory(ClusterDir(root), inv)
    kind = topology.topology_kind(root, dr)
    with stderr.status(f"starting the {kind.noun} in {root}") as status:
        started = kind.up(root, spec, explicit, timeout_s, progress=lambda msg: status.update(msg))
    stderr.print(f"{kind.noun} ready in {root}: {started.describe()}")
    for line in started.bootstrap_lines():
        click.echo(line)


def cluster_spec(
    mode: str,
    *,
    controllers: int | None,
    combined: bool,
    zookeepers: int | None,
    zookeeper_port: int | None,
    kafka_version: str | None,
    **fields,
) -> ClusterSpec:
    """The spec 'up' asks for; options of the other mode are one clear line, not ignored."""
    return mode_named(mode).spec_from_options(
        controllers=controllers,
        combined=combined,
        zookeepers=zookeepers,
        zookeeper_port=zookeeper_port,
        kafka_version=kafka_version,
        **fields,
    )


@click.command("status")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def status_command(cluster_dir: Path | None, as_json: bool) -> None:
    """Each node: id, role, pid, port, state (up/paused/down), and the active controller.

    In ZooKeeper mode: each ZooKeeper node with its role (leader, follower, standalone), and the broker that is
    controller. Of a DR pair: both clusters, and each MirrorMaker."""
    status = topology.open_topology(resolve_dir(cluster_dir)).status()
    if as_json:
        click.echo(json.dumps(status.to_json(), indent=2))
        return
    for cluster in status.clusters.values():
        _print_status(cluster)
    for m in status.mirrors:
        stdout.print(f"MirrorMaker {m.flow.arrow}: {m.state}" + (f" (pid {m.pid})" if m.pid else ""))


def _print_status(status: ClusterStatus) -> None:
    spec = status.spec
    table = Table(
        title=f"{status.root} ({spec.mode}, Kafka {spec.kafka_version}, profile {spec.profile} version "
        f"{spec.profile_version}, {'' if spec.security == 'plaintext' else f'security {spec.security}, '}cluster id "
        f"{status.cluster_id or 'not known yet'})"
    )
    for col in (
        "id",
        "role",
        "pid",
        "port",
        "controller port",
        *(("rack",) if spec.racks else ()),
        "state",
        *(("disk",) if spec.volatile_disks else ()),
        *(("metrics",) if spec.metrics else ()),
    ):
        table.add_column(col)
    colour = {"up": "green", "paused": "yellow", "down": "red"}
    for r in status.nodes:
        state = f"[{colour[r.state]}]{r.state}[/]" + (" [bold](active controller)[/]" if r.active_controller else "")
        if r.node.is_zookeeper and r.state == "up":
            state += f" ({r.zookeeper_mode or 'not serving'})"
        rack = (spec.rack_of(r.node) or "-",) if spec.racks else ()
        disk = (disk_words(r.disk),) if spec.volatile_disks else ()
        served = (endpoint(spec, r.node),) if spec.metrics else ()
        table.add_row(
            str(r.node.node_id),
            r.node.role,
            str(r.pid or "-"),
            str(r.node.port or "-"),
            str(r.node.controller_port or "-"),
            *rack,
            state,
            *disk,
            *served,
        )
    stdout.print(table)
    for a in status.operator_actions:
        at = time.strftime("%H:%M:%S", time.localtime(a.start_ns / 1e9))
        what = (
            f"{a.action} {a.role} {a.node}"
            if a.node is not None
            else " ".join(filter(None, (a.action, a.detail.get("fault"))))
        )
        stdout.print(f"[dim]{at}[/] {what} from the {a.source}" + ("" if a.ok else f" [red]failed[/]: {a.error}"))
    if spec.tiered_storage:
        store = status.remote_store()
        held = store["partitions"].values()
        stdout.print(
            f"remote store {store['dir']} ({'mounted' if store['mounted'] else 'not mounted'}): "
            f"{sum(h['segments'] for h in held)} segments of {len(held)} partitions, {sum(h['bytes'] for h in held):,} "
            "bytes"
        )
    if status.note:
        stdout.print(status.note)


@click.command("down")
@dir_option
@timeout_option(DEFAULT_STOP_TIMEOUT_S, "Controlled-shutdown time per node before SIGKILL.")
def down_command(cluster_dir: Path | None, timeout_s: float) -> None:
    """Stop every node (controlled shutdown), keeping the data; of a DR pair, its MirrorMakers first."""
    root = resolve_dir(cluster_dir)
    with stderr.status(f"stopping the {topology.topology_kind(root).noun} in {root}"):
        spark = stop_spark_under(root, timeout_s)
        stopped = topology.open_topology(root).down(timeout_s)
    if spark:
        stderr.print(f"stopped Spark's {', '.join(spark)}")
    for flow in stopped.mirrors:
        stderr.print(f"stopped MirrorMaker {flow.arrow}")
    stderr.print(stopped.summary())


@click.command("clean")
@dir_option
@timeout_option(DEFAULT_STOP_TIMEOUT_S, "Controlled-shutdown time per node before SIGKILL.")
def clean_command(cluster_dir: Path | None, timeout_s: float) -> None:
    """Stop everything and delete the cluster directory (also when its state file is unreadable)."""
    root = resolve_dir(cluster_dir)
    with stderr.status(f"stopping and deleting {root}"):
        stop_spark_under(root, timeout_s)
        topology.clean(root, timeout_s)
    stderr.print(f"deleted {root}")


def _node_group(role: str) -> click.Group:
    @click.group(
        role, help=f"Act on one {role} by id: " + "; ".join(f"{a} ({d})" for a, d in NODE_ACTIONS.items()) + "."
    )
    def group() -> None:
        pass

    def make(action: str) -> click.Command:
        @click.command(action, help=f"{action.capitalize()} a {role}: {NODE_ACTIONS[action]}.")
        @click.argument("node_id", type=int, metavar="ID")
        @dir_option
        @timeout_option(default_timeout_s(action), "How long to wait for the effect.")
        def command(node_id: int, cluster_dir: Path | None, timeout_s: float) -> None:
            cluster = Cluster.open(resolve_dir(cluster_dir))
            with stderr.status(f"{action} {role} {node_id}") as status:
                node = act_on_node(
                    cluster, role, node_id, action, timeout_s, source="cli", progress=lambda m: status.update(m)
                )
            stderr.print(f"{role} {node_id}: {cluster.node_state(node)}")

        return command

    for action in NODE_ACTIONS:
        group.add_command(make(action))
    return group


broker = _node_group(BROKER)
controller = _node_group(CONTROLLER)
zookeeper = _node_group(ZOOKEEPER)


@click.command("migrate")
@dir_option
@timeout_option(180.0, "How long each step may take to reach its condition.")
def migrate_command(cluster_dir: Path | None, timeout_s: float) -> None:
    """Migrate a running ZooKeeper-mode cluster to KRaft, live, as Kafka 3.9 documents it.

    A KRaft controller in migration mode, the brokers rolled into migration mode, the metadata
    copied, the brokers rolled into KRaft, the controller finalized, ZooKeeper stopped; each step
    waits on what Kafka shows (see docs/zookeeper.md). A failed step stops with one line naming it
    and how to roll back, and leaves the cluster running.
    """
    import time

    from failsafe.cluster.modes.migration import Migration

    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    started = time.monotonic()
    with cluster.dir.lock(), stderr.status("migrating to KRaft") as status:

        def step_done(step, ok: bool, error: str | None) -> None:
            if ok:
                stderr.print(f"[dim]{time.monotonic() - started:6.1f}s[/] {step.description}: done")

        Migration(
            cluster, lambda message: status.update(f"migrating to KRaft: {message}"), step_timeout_s=timeout_s
        ).run(done=step_done)
    stderr.print(
        f"the cluster at {root} runs in KRaft mode (controller {cluster.spec.controller_nodes()[0].node_id}, "
        f"ZooKeeper stopped) after {time.monotonic() - started:.0f}s"
    )
    click.echo(cluster.bootstrap_servers)
