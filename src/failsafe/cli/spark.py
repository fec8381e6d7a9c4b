"""``failsafe spark up|down|status``: a Spark standalone cluster beside the Kafka cluster, in DIR/spark."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from failsafe.cli.options import dir_option, resolve_dir, stderr, stdout, timeout_option
from failsafe.pipeline.standalone import (
    DEFAULT_PORT,
    DEFAULT_WORKERS,
    READY_TIMEOUT_S,
    STOP_TIMEOUT_S,
    StandaloneCluster,
    StandaloneSpec,
)

SPARK_SUBDIR = "spark"


def spark_root(cluster_dir: Path | None) -> Path:
    return resolve_dir(cluster_dir) / SPARK_SUBDIR


def stop_spark_under(cluster_dir: Path | None, timeout_s: float = STOP_TIMEOUT_S) -> list[str]:
    """What 'down' and 'clean' do first: stop a Spark standalone cluster living under the cluster directory."""
    root = spark_root(cluster_dir)
    if not StandaloneCluster.exists(root):
        return []
    return StandaloneCluster.open(root).stop(timeout_s)


@click.group("spark")
def spark() -> None:
    """A Spark standalone cluster (a master and workers from the installed pyspark) on 127.0.0.1, for 'pipeline run
    --master'."""


@spark.command("up")
@dir_option
@click.option("--workers", type=click.IntRange(min=1), default=DEFAULT_WORKERS, show_default=True)
@click.option(
    "--cores",
    "cores_per_worker",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Cores each worker offers.",
)
@click.option(
    "--memory", "worker_memory", default="1g", show_default=True, help="Memory each worker offers to executors."
)
@click.option(
    "--port",
    type=click.IntRange(1, 64000),
    default=DEFAULT_PORT,
    show_default=True,
    help="The master's port; its web UI is at PORT+1000, worker N at PORT+1+N.",
)
@timeout_option(READY_TIMEOUT_S, "How long to wait for the master and each worker.")
def up_command(
    cluster_dir: Path | None, workers: int, cores_per_worker: int, worker_memory: str, port: int, timeout_s: float
) -> None:
    """Start the master and the workers, wait until the master counts every worker; print the master URL."""
    root = spark_root(cluster_dir)
    cluster = StandaloneCluster(root, StandaloneSpec(workers, cores_per_worker, worker_memory, port))
    with stderr.status(f"starting Spark in {root}") as status:
        cluster.start(timeout_s, lambda msg: status.update(msg))
    stderr.print(
        f"Spark standalone cluster ready in {root}: {workers} worker(s) of {cores_per_worker} core(s); "
        f"web UI http://127.0.0.1:{cluster.spec.ui_port}"
    )
    click.echo(cluster.spec.master_url)


@spark.command("status")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def status_command(cluster_dir: Path | None, as_json: bool) -> None:
    """The master and each worker: pid, state, port, whether the master counts it; running applications."""
    status = StandaloneCluster.open(spark_root(cluster_dir)).status()
    if as_json:
        click.echo(json.dumps(status, indent=2))
        return
    table = Table(title=f"Spark standalone at {status['master_url']} (web UI {status['ui']})")
    for column in ("process", "pid", "port", "state", "registered"):
        table.add_column(column)
    master = status["master"]
    table.add_row(
        "master", str(master["pid"] or "-"), str(status["spec"]["port"]), master["state"], master["status"] or "-"
    )
    for w in status["workers"]:
        table.add_row(
            f"worker-{w['worker']}",
            str(w["pid"] or "-"),
            str(w["port"]),
            w["state"],
            "yes" if w["registered"] else "no",
        )
    stdout.print(table)
    for app in status["applications"]:
        stdout.print(f"application {app['id']} ({app['name']}): {app['state']}, {app['cores']} core(s)")


@spark.command("down")
@dir_option
@timeout_option(STOP_TIMEOUT_S, "Time per process to stop before SIGKILL.")
def down_command(cluster_dir: Path | None, timeout_s: float) -> None:
    """Stop every worker (and its executors), then the master."""
    root = spark_root(cluster_dir)
    with stderr.status(f"stopping Spark in {root}"):
        stopped = StandaloneCluster.open(root).stop(timeout_s)
    stderr.print(f"stopped {', '.join(stopped)}" if stopped else "nothing of Spark was running")
