"""Options shared by several commands, and the one place that finds the bootstrap servers."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from failsafe.cluster.lifecycle import Cluster
from failsafe.cluster.state import default_cluster_dir
from failsafe.errors import ClusterNotRunning, UserError
from failsafe.supervisor import UP

# The shell's convention for a command ended by Ctrl-C (128 + SIGINT).
INTERRUPTED_EXIT = 130

stderr = Console(stderr=True, highlight=False)
stdout = Console(highlight=False)


def dir_option(f):
    return click.option(
        "--dir", "cluster_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="The cluster directory [default: $FAILSAFE_DIR, else ./failsafe-cluster].",
    )(f)


def bootstrap_option(f):
    return click.option(
        "--bootstrap-server", "bootstrap_server", default=None, metavar="HOST:PORT[,...]",
        help="Any Kafka cluster [default: the failsafe cluster at --dir].",
    )(f)


def timeout_option(default: float, help_text: str):
    return click.option("--timeout-s", type=click.FloatRange(min=0.1), default=default, show_default=True, help=help_text)


def resolve_dir(cluster_dir: Path | None) -> Path:
    return cluster_dir if cluster_dir is not None else default_cluster_dir()


def resolve_bootstrap(bootstrap_server: str | None, cluster_dir: Path | None) -> str:
    if bootstrap_server:
        return bootstrap_server
    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    if not any(cluster.node_state(n) == UP for n in cluster.spec.brokers_nodes()):
        raise ClusterNotRunning(f"no broker of the cluster at {root} is running: start it with 'failsafe up --dir {root}'")
    return cluster.bootstrap_servers


def parse_pairs(pairs: tuple[str, ...], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{option} {pair!r} is not of the form key=value: e.g. {option} min.insync.replicas=2")
        out[key.strip()] = value.strip()
    return out
