"""mirror start|stop|status between the clusters of a DR pair (docs/failover.md, "Disaster recovery").

up, status, down and clean of a pair are those of any topology (cli/cluster.py, cluster/topology/directory.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from failsafe.cli.options import dir_option, parse_pairs, resolve_dir, stderr, stdout, timeout_option
from failsafe.cluster.topology.mirror import MirrorFlow, parse_flow, settings_not_applied
from failsafe.cluster.topology.pair import ALIASES, BACKUP, MIRROR_READY_TIMEOUT_S, MIRROR_STOP_TIMEOUT_S, PRIMARY, Pair
from failsafe.errors import UserError

DEFAULT_FLOW = f"{PRIMARY}->{BACKUP}"


def _flow(text: str) -> MirrorFlow:
    return parse_flow(text, ALIASES)


@click.group("mirror", help="MirrorMaker 2 between the clusters of a DR pair (failsafe up --dr): start, stop, status.")
def mirror() -> None:
    pass


@mirror.command("start")
@dir_option
@click.option("--flow", "flow_text", default=DEFAULT_FLOW, show_default=True, help="SOURCE->TARGET.")
@click.option(
    "--topics", default=".*", show_default=True, help="The source topics to mirror (a regex, MirrorMaker's 'topics')."
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="An mm2.properties entry, e.g. emit.checkpoints.interval.ms=1000 (repeatable).",
)
@timeout_option(MIRROR_READY_TIMEOUT_S, "How long to wait until the topics are mirrored.")
def start_command(
    cluster_dir: Path | None, flow_text: str, topics: str, settings: tuple[str, ...], timeout_s: float
) -> None:
    """Start MirrorMaker (dedicated mode, Kafka's own jars) and wait until every matching topic is mirrored."""
    pair = Pair.open(resolve_dir(cluster_dir))
    flow = _flow(flow_text)
    wanted = _matching_topics(pair, flow, topics)
    with stderr.status(f"starting MirrorMaker {flow.arrow}") as status:
        tracked = pair.start_mirror(
            flow, wanted, parse_pairs(settings, "--set"), timeout_s, progress=lambda m: status.update(m)
        )
    ignored = settings_not_applied(pair.mirror_dir(flow) / "mirrormaker.log", parse_pairs(settings, "--set"))
    if ignored:
        stderr.print(
            f"[yellow]MirrorMaker is not running with {', '.join(ignored)}: unknown keys are ignored (its intervals "
            "end in .seconds); see the config it logged[/]"
        )
    stderr.print(
        f"MirrorMaker {flow.arrow} mirroring {', '.join(wanted)} (pid {tracked.pid}); "
        f"config {pair.mirror_dir(flow) / 'mm2.properties'}, log {pair.mirror_dir(flow) / 'mirrormaker.log'}"
    )


def _matching_topics(pair: Pair, flow: MirrorFlow, pattern: str) -> list[str]:
    """The source's own topics that ``pattern`` matches (not internal ones, not topics mirrored from elsewhere)."""
    import re

    from failsafe.cluster.topology.mirror import partitions_of
    from failsafe.tools.admin import fetch_metadata, new_admin

    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise UserError(f"--topics {pattern!r} is not a regular expression: {e}") from e
    source = pair.bootstraps()[flow.source]
    names = list(fetch_metadata(new_admin(source), source, 10.0).topics)
    own = sorted(
        t
        for t in names
        if regex.fullmatch(t)
        and not t.startswith(("__", "mm2-", "heartbeats"))
        and not any(t.startswith(f"{alias}.") for alias in ALIASES)
        and not t.endswith(".internal")
    )
    if not own or not partitions_of(source, own):
        raise UserError(
            f"no topic on the {flow.source} matches {pattern!r}: create one first (failsafe topics create --dir "
            f"{pair.cluster_dir(flow.source)} NAME)"
        )
    return own


@mirror.command("stop")
@dir_option
@click.option("--flow", "flow_text", default=None, help="SOURCE->TARGET [default: every flow].")
@timeout_option(MIRROR_STOP_TIMEOUT_S, "How long MirrorMaker may take to stop before SIGKILL.")
def stop_command(cluster_dir: Path | None, flow_text: str | None, timeout_s: float) -> None:
    """Stop MirrorMaker (SIGTERM, then SIGKILL after the timeout)."""
    pair = Pair.open(resolve_dir(cluster_dir))
    flows = [_flow(flow_text)] if flow_text else [s.flow for s in pair.mirror_status()]
    stopped = [f for f in flows if pair.stop_mirror(f, timeout_s)]
    stderr.print(
        f"stopped MirrorMaker {', '.join(f.arrow for f in stopped)}" if stopped else "no MirrorMaker was running"
    )


@mirror.command("status")
@dir_option
@click.option("--topics", default=".*", show_default=True, help="The source topics whose lag to show (a regex).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def status_command(cluster_dir: Path | None, topics: str, as_json: bool) -> None:
    """Each MirrorMaker: pid and state; per mirrored partition: the source's log end, the target's, the lag."""
    pair = Pair.open(resolve_dir(cluster_dir))
    out = []
    for s in pair.mirror_status():
        try:
            lags = pair.lag(s.flow, _matching_topics(pair, s.flow, topics))
        except UserError:
            lags = []
        out.append(
            {
                "flow": s.flow.arrow,
                "pid": s.pid,
                "state": str(s.state),
                "partitions": [
                    {
                        "topic": lag.topic,
                        "mirrored_as": s.flow.remote_topic(lag.topic),
                        "partition": lag.partition,
                        "source_end": lag.source_end,
                        "target_end": lag.target_end,
                        "lag": lag.lag,
                    }
                    for lag in lags
                ],
            }
        )
    if as_json:
        click.echo(json.dumps({"dir": str(pair.root), "mirrors": out}, indent=2))
        return
    if not out:
        stdout.print(f"no MirrorMaker has run in {pair.root}: start one with 'failsafe mirror start --dir {pair.root}'")
    for m in out:
        table = Table(title=f"MirrorMaker {m['flow']}: {m['state']}" + (f" (pid {m['pid']})" if m["pid"] else ""))
        for col in ("topic", "mirrored as", "partition", "source end", "target end", "lag"):
            table.add_column(col)
        for p in m["partitions"]:
            table.add_row(
                p["topic"],
                p["mirrored_as"],
                str(p["partition"]),
                *(str(p[k]) if p[k] is not None else "-" for k in ("source_end", "target_end", "lag")),
            )
        stdout.print(table)
