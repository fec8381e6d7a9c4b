"""setup, up, status, down, clean, and broker / controller actions."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from failsafe.cli.options import dir_option, parse_pairs, resolve_dir, stderr, stdout, timeout_option
from failsafe.cluster import lifecycle
from failsafe.cluster.lifecycle import DEFAULT_READY_TIMEOUT_S, DEFAULT_STOP_TIMEOUT_S, Cluster
from failsafe.cluster.spec import BROKER, CONTROLLER, DEFAULT_BASE_PORT, DEFAULT_BROKERS, DEFAULT_CONTROLLERS, ClusterSpec
from failsafe.dist.java import find_java
from failsafe.dist.kafka import DEFAULT_KAFKA_VERSION, resolve_kafka
from failsafe.dist.spark import installed_pyspark, resolve_spark_kafka
from failsafe.errors import FailsafeError, ProvisionError

# Click parameter name -> ClusterSpec field, for telling apart what the user set on purpose.
_SPEC_PARAMS = {
    "brokers": "brokers", "controllers": "controllers", "combined": "combined", "base_port": "base_port",
    "controller_base_port": "controller_base_port", "kafka_version": "kafka_version", "heap": "heap", "override": "overrides",
}


@click.command("setup")
@click.option("--kafka-version", default=DEFAULT_KAFKA_VERSION, show_default=True, help="Kafka release to resolve from Maven Central.")
@click.option("--cds/--no-cds", default=True, show_default=True,
              help="Make a class-data sharing archive of Kafka's classes so nodes start faster (one node started once).")
def setup_command(kafka_version: str, cds: bool) -> None:
    """Check Java and resolve Kafka's jars into the cache (idempotent)."""
    java = find_java()
    with stderr.status(f"resolving Kafka {kafka_version} from Maven Central"):
        dist = resolve_kafka(kafka_version)
    stdout.print(f"Java {java.major} at {java.executable}")
    stdout.print(f"Kafka {dist.version} jars in {dist.libs_dir}")
    if cds:
        from failsafe.cluster.cds import ensure_archive

        with stderr.status("class-data sharing archive") as status:
            try:
                archive = ensure_archive(java, dist, lambda message: status.update(f"class-data sharing archive: {message}"))
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
@click.option("--brokers", type=click.IntRange(min=1), default=DEFAULT_BROKERS, show_default=True)
@click.option("--controllers", type=click.IntRange(min=1), default=None,
              help=f"KRaft controllers [default: {DEFAULT_CONTROLLERS}; with --combined, one per broker].")
@click.option("--combined", is_flag=True, help="Run controllers inside brokers (process.roles=broker,controller).")
@click.option("--kafka-version", default=DEFAULT_KAFKA_VERSION, show_default=True)
@click.option("--base-port", type=click.IntRange(1, 65535), default=DEFAULT_BASE_PORT, show_default=True,
              help="Broker N listens on base-port + N.")
@click.option("--controller-base-port", type=click.IntRange(1, 65535), default=None,
              help="Controller listeners [default: base-port + 100].")
@click.option("--heap", default="1G", show_default=True, help="JVM heap of each node (-Xmx/-Xms).")
@click.option("--override", multiple=True, metavar="KEY=VALUE", help="A server property for every node (repeatable).")
@timeout_option(DEFAULT_READY_TIMEOUT_S, "How long to wait for the cluster to be ready.")
@click.pass_context
def up_command(ctx: click.Context, cluster_dir: Path | None, brokers: int, controllers: int | None, combined: bool,
               kafka_version: str, base_port: int, controller_base_port: int | None, heap: str, override: tuple[str, ...],
               timeout_s: float) -> None:
    """Start a KRaft cluster (brokers 0,1,2 on 9092-9094 by default) and wait until it is ready."""
    root = resolve_dir(cluster_dir)
    if controllers is None:
        controllers = brokers if combined else DEFAULT_CONTROLLERS
    spec = ClusterSpec(
        brokers=brokers, controllers=controllers, combined=combined, base_port=base_port,
        controller_base_port=controller_base_port, kafka_version=kafka_version, heap=heap,
        overrides=parse_pairs(override, "--override"),
    )
    explicit = {field for param, field in _SPEC_PARAMS.items()
                if ctx.get_parameter_source(param) not in (click.core.ParameterSource.DEFAULT, None)}
    with stderr.status(f"starting the cluster in {root}") as status:
        cluster = lifecycle.up(root, spec, explicit, timeout_s, progress=lambda msg: status.update(msg))
    s = cluster.spec
    stderr.print(f"cluster ready in {root}: {s.brokers} brokers, {s.controllers} controllers"
                 f"{' (combined)' if s.combined else ''}, Kafka {s.kafka_version}")
    click.echo(cluster.bootstrap_servers)


@click.command("status")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def status_command(cluster_dir: Path | None, as_json: bool) -> None:
    """Each node: id, role, pid, port, state (up/paused/down), and the active controller."""
    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    rows = cluster.status()
    active = next((r.node.node_id for r in rows if r.active_controller), None)
    if as_json:
        click.echo(json.dumps({
            "dir": str(root), "kafka_version": cluster.spec.kafka_version, "cluster_id": cluster.state.cluster_id,
            "bootstrap_servers": cluster.bootstrap_servers, "active_controller": active,
            "nodes": [{"id": r.node.node_id, "role": r.node.role, "pid": r.pid, "port": r.node.port,
                       "controller_port": r.node.controller_port, "state": r.state, "active_controller": r.active_controller}
                      for r in rows],
        }, indent=2))
        return
    table = Table(title=f"{root} (Kafka {cluster.spec.kafka_version}, cluster id {cluster.state.cluster_id})")
    for col in ("id", "role", "pid", "port", "controller port", "state"):
        table.add_column(col)
    colour = {"up": "green", "paused": "yellow", "down": "red"}
    for r in rows:
        state = f"[{colour[r.state]}]{r.state}[/]" + (" [bold](active controller)[/]" if r.active_controller else "")
        table.add_row(str(r.node.node_id), r.node.role, str(r.pid or "-"), str(r.node.port or "-"),
                      str(r.node.controller_port or "-"), state)
    stdout.print(table)
    if active is None and any(r.node.is_controller and r.state == "up" for r in rows):
        stdout.print("no active controller known yet (the quorum is electing or has not persisted a leader)")


@click.command("down")
@dir_option
@timeout_option(DEFAULT_STOP_TIMEOUT_S, "Controlled-shutdown time per node before SIGKILL.")
def down_command(cluster_dir: Path | None, timeout_s: float) -> None:
    """Stop every node (controlled shutdown), keeping the data."""
    root = resolve_dir(cluster_dir)
    with stderr.status(f"stopping the cluster in {root}"):
        stopped = lifecycle.down(root, timeout_s)
    stderr.print(f"stopped {len(stopped)} nodes" if stopped else "nothing was running")


@click.command("clean")
@dir_option
@timeout_option(DEFAULT_STOP_TIMEOUT_S, "Controlled-shutdown time per node before SIGKILL.")
def clean_command(cluster_dir: Path | None, timeout_s: float) -> None:
    """Stop everything and delete the cluster directory."""
    root = resolve_dir(cluster_dir)
    with stderr.status(f"stopping and deleting {root}"):
        lifecycle.clean(root, timeout_s)
    stderr.print(f"deleted {root}")


_ACTIONS = {
    "kill": "SIGKILL: the process dies at once, no controlled shutdown",
    "stop": "SIGTERM: controlled shutdown",
    "start": "start it again and wait until it has registered",
    "pause": "SIGSTOP: frozen, still holding its sockets",
    "resume": "SIGCONT: thaw a paused node",
}


def _node_group(role: str) -> click.Group:
    @click.group(role, help=f"Act on one {role} by id: " + "; ".join(f"{a} ({d})" for a, d in _ACTIONS.items()) + ".")
    def group() -> None:
        pass

    def make(action: str) -> click.Command:
        @click.command(action, help=f"{action.capitalize()} a {role}: {_ACTIONS[action]}.")
        @click.argument("node_id", type=int, metavar="ID")
        @dir_option
        @timeout_option(DEFAULT_READY_TIMEOUT_S if action == "start" else DEFAULT_STOP_TIMEOUT_S, "How long to wait for the effect.")
        def command(node_id: int, cluster_dir: Path | None, timeout_s: float) -> None:
            cluster = Cluster.open(resolve_dir(cluster_dir))
            node = cluster.node(node_id, role)
            if action == "start":
                with stderr.status(f"starting {role} {node_id}") as status:
                    lifecycle.start_node(cluster, node, timeout_s, progress=lambda m: status.update(m))
            else:
                cluster.signal_node(node, action, timeout_s)
            stderr.print(f"{role} {node_id}: {cluster.node_state(node)}")

        return command

    for action in _ACTIONS:
        group.add_command(make(action))
    return group


broker = _node_group(BROKER)
controller = _node_group(CONTROLLER)
