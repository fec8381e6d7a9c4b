"""The ``failsafe`` command: one line on stderr for every error, never a traceback."""

from __future__ import annotations

import signal
import sys

import click

from failsafe import __version__
from failsafe.cli.atlas import atlas_command
from failsafe.cli.boundary import report
from failsafe.cli.campaign import campaign_command, shrink_command
from failsafe.cli.clients import consume_command, groups, leader_election_command, produce_command
from failsafe.cli.cluster import (
    broker,
    clean_command,
    controller,
    down_command,
    migrate_command,
    setup_command,
    status_command,
    up_command,
    zookeeper,
)
from failsafe.cli.compare import compare_command
from failsafe.cli.console import console_command
from failsafe.cli.explain import explain_command
from failsafe.cli.hosts import hosts
from failsafe.cli.kafka import kafka_command
from failsafe.cli.lab import check_command, report_command, run_command, scenarios_command
from failsafe.cli.lifecycle import (
    broker_add_command,
    controller_add_command,
    controller_remove_command,
    reassign_command,
    upgrade_command,
)
from failsafe.cli.mirror import mirror
from failsafe.cli.net import net
from failsafe.cli.options import INTERRUPTED_EXIT
from failsafe.cli.pipeline import pipeline
from failsafe.cli.profiles import profiles
from failsafe.cli.simulate import simulate
from failsafe.cli.spark import spark
from failsafe.cli.topics import topics
from failsafe.errors import EXIT_USAGE

EXIT_CODES = """\b
Exit codes (the same for run, check, run seed-lab, --repeat, campaign and atlas):
  0  VALID: every run's checkers and expectations held
  1  INVALID: a run violated what it checks (e.g. an acknowledged write lost)
  2  usage: bad input or a wrong state, said in one line
  3  UNKNOWN: a checker could not decide
  4  KNOWN: only anomalies the scenario declares known (never VALID)
  5  failsafe could not carry the run out (a node would not start, a port in use, a crash of its own)
"""


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="failsafe")
def cli() -> None:
    """A real Apache Kafka cluster on one machine: bring it up, break it, see what happened."""


for command in (
    setup_command,
    up_command,
    profiles,
    status_command,
    down_command,
    clean_command,
    broker,
    controller,
    zookeeper,
    migrate_command,
    upgrade_command,
    reassign_command,
    topics,
    produce_command,
    consume_command,
    groups,
    leader_election_command,
    kafka_command,
    run_command,
    check_command,
    report_command,
    explain_command,
    scenarios_command,
    campaign_command,
    shrink_command,
    atlas_command,
    compare_command,
    pipeline,
    spark,
    simulate,
    console_command,
    net,
    mirror,
    hosts,
):
    cli.add_command(command)
# A dynamic quorum's membership (cli/lifecycle.py), beside the node actions of 'failsafe controller'.
controller.add_command(controller_add_command)
controller.add_command(controller_remove_command)
# A broker joining a running cluster, beside the node actions of 'failsafe broker'.
broker.add_command(broker_add_command)


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C, so every 'finally' that stops what we started runs.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = cli.main(args=argv, prog_name="failsafe", standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.Abort:
        # click turns Ctrl-C (and our SIGTERM) inside a command into Abort.
        print("failsafe: interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT
    except click.UsageError as e:
        where = e.ctx.command_path if e.ctx is not None else "failsafe"
        print(f"{where}: {e.format_message()} (see '{where} --help')", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("failsafe: interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT
    except BrokenPipeError:
        # The reader went away (| head); nothing to report.
        return 0
    except Exception as e:  # noqa: BLE001 - the boundary: one line and an exit code, never a traceback (cli/boundary.py)
        return report(e)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
