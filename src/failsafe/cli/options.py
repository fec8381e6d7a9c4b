"""Options shared by several commands, and the one place that finds the bootstrap servers."""

from __future__ import annotations

import functools
from pathlib import Path

import click
from rich.console import Console

from failsafe.cluster.site import SiteOptions
from failsafe.cluster.spec import MODES
from failsafe.cluster.state import default_cluster_dir
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.errors import ClusterNotRunning, UserError
from failsafe.supervisor import UP

# The shell's convention for a command ended by Ctrl-C (128 + SIGINT).
INTERRUPTED_EXIT = 130

stderr = Console(stderr=True, highlight=False)
stdout = Console(highlight=False)


def dir_option(f):
    return click.option(
        "--dir",
        "cluster_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="The cluster directory [default: $FAILSAFE_DIR, else ./failsafe-cluster].",
    )(f)


def bootstrap_option(f):
    return click.option(
        "--bootstrap-server",
        "bootstrap_server",
        default=None,
        metavar="HOST:PORT[,...]",
        help="Any Kafka cluster [default: the failsafe cluster at --dir].",
    )(f)


def site_options(who: str, *, modes: bool = False):
    """The options saying how ``who`` starts its own cluster when --dir holds none that fits (--base-port, --heap; with
    ``modes`` --mode and --zookeeper-port too), handed to the command as one ``site: SiteOptions``."""
    options = [
        click.option(
            "--base-port",
            type=click.IntRange(1, 65535),
            default=None,
            help=f"Broker ports when {who} starts its own cluster [default: 9092].",
        ),
        click.option(
            "--heap", default=None, help=f"JVM heap of each node when {who} starts its own cluster [default: 1G]."
        ),
    ]
    if modes:
        options += [
            click.option(
                "--mode",
                type=click.Choice(MODES),
                default=None,
                help="Run on a KRaft or a ZooKeeper-mode cluster (Kafka 3.9) [default: the scenario's, else kraft].",
            ),
            click.option(
                "--zookeeper-port",
                type=click.IntRange(1, 65535),
                default=None,
                help=f"ZooKeeper's client port when {who} starts a ZooKeeper-mode cluster [default: 2181].",
            ),
        ]

    def decorate(f):
        @functools.wraps(f)
        def command(
            *args,
            base_port: int | None,
            heap: str | None,
            mode: str | None = None,
            zookeeper_port: int | None = None,
            **kwargs,
        ):
            return f(*args, site=SiteOptions(base_port, heap, mode, zookeeper_port), **kwargs)

        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def timeout_option(default: float, help_text: str):
    return click.option(
        "--timeout-s", type=click.FloatRange(min=0.1), default=default, show_default=True, help=help_text
    )


def resolve_dir(cluster_dir: Path | None) -> Path:
    return cluster_dir if cluster_dir is not None else default_cluster_dir()


def resolve_bootstrap(bootstrap_server: str | None, cluster_dir: Path | None) -> str:
    if bootstrap_server:
        return bootstrap_server
    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)
    if not any(cluster.node_state(n) == UP for n in cluster.spec.brokers_nodes()):
        raise ClusterNotRunning(
            f"no broker of the cluster at {root} is running: start it with 'failsafe up --dir {root}'"
        )
    return cluster.bootstrap_servers


def parse_pairs(pairs: tuple[str, ...], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{option} {pair!r} is not of the form key=value: e.g. {option} min.insync.replicas=2")
        out[key.strip()] = value.strip()
    return out


KAFKA_RELEASE = r"\d+\.\d+\.\d+"


def check_kafka_version(ctx: click.Context, param: click.Parameter, value: object) -> object:
    """A --kafka-version callback: a Kafka release (4.3.1), each of them when repeatable, refused before anything is
    made."""
    import re

    for version in value if isinstance(value, tuple | list) else [value]:
        if version is not None and not re.fullmatch(KAFKA_RELEASE, str(version)):
            raise click.BadParameter(
                f"{version!r} is not a Kafka release: write it as Maven Central has it, e.g. 4.3.1 or 3.9.2"
            )
    return value


def writable(path: Path, option: str) -> Path:
    """``path`` when failsafe can make it or write in it (its nearest existing ancestor is a writable directory); else
    one UserError naming the option, before anything is made."""
    import shutil
    import tempfile

    existing = Path(path).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"{option} {path}: {existing} is not a directory: choose a directory failsafe can write in")
    try:
        # Asked of the file system itself (permissions alone do not say: root, read-only mounts, /proc): a directory
        # made and removed at once.
        shutil.rmtree(tempfile.mkdtemp(prefix=".failsafe-probe-", dir=existing))
    except OSError as e:
        raise UserError(
            f"{option} {path}: cannot write in {existing} ({e.strerror or e}): choose a directory failsafe can write in"
        ) from e
    return path
