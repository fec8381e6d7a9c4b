"""failsafe console: the cluster live in a browser, with fault buttons (docs/console.md)."""

from __future__ import annotations

from pathlib import Path

import click

from failsafe.cli.options import dir_option, resolve_dir, stderr
from failsafe.cluster.topology.lifecycle import Cluster


@click.command("console")
@dir_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port). The console never listens on another interface.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in the default browser.")
def console_command(cluster_dir: Path | None, port: int, open_browser: bool) -> None:
    """Serve a live web console of the cluster on 127.0.0.1, until Ctrl-C.

    Prints one URL with a random token; every page, API call and fault action needs it.
    Views: cluster, topics, consumer groups, timeline, runs; buttons kill/stop/start/pause/resume
    each node and run a preferred leader election.
    """
    from failsafe.console.server import serve

    root = resolve_dir(cluster_dir)
    cluster = Cluster.open(root)

    def announce(url: str) -> None:
        stderr.print(
            f"failsafe console for the cluster at {root} ({cluster.spec.mode}, Kafka "
            f"{cluster.spec.kafka_version}); Ctrl-C stops it",
            soft_wrap=True,
        )
        click.echo(url)

    try:
        serve(cluster, port, open_browser, announce)
    except KeyboardInterrupt:
        pass
    stderr.print("console stopped")
