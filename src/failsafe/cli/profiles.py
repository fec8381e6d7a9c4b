"""failsafe profiles [list] | show NAME: the profiles a cluster can be made with (failsafe up --profile,
cluster/profiles.py)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from failsafe.cli.options import stdout
from failsafe.cluster.profiles import load_profile, profile_names


@click.group("profiles", invoke_without_command=True)
@click.pass_context
def profiles(ctx: click.Context) -> None:
    """List the profiles a cluster is made with, or show one (failsafe up --profile).

    A profile is a named, versioned set of broker, topic and client settings; a scenario asks for one with
    [cluster] profile. Without a command: list them.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@profiles.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(as_json: bool = False) -> None:
    """Each profile: its name, version and what it is for."""
    shipped = [load_profile(name) for name in profile_names()]
    if as_json:
        click.echo(
            json.dumps(
                [{"name": p.name, "version": p.version, "description": p.description} for p in shipped], indent=2
            )
        )
        return
    table = Table()
    for col in ("profile", "version", "what it is for"):
        table.add_column(col, no_wrap=col != "what it is for")
    for p in shipped:
        table.add_row(p.name, str(p.version), p.description)
    stdout.print(table)


@profiles.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def show_command(name: str, as_json: bool) -> None:
    """Every setting of profile NAME, by where it goes.

    broker: every Kafka node's properties; topic: the topics scenarios create; producer and consumer: every client a
    scenario starts (.librdkafka and .kafka-java: what only that library takes).
    """
    p = load_profile(name)
    settings = {where: values for where, values in p.settings().items() if values}
    if as_json:
        click.echo(
            json.dumps(
                {"name": p.name, "version": p.version, "description": p.description, "settings": settings}, indent=2
            )
        )
        return
    stdout.print(f"[bold]{p.label}[/]: {p.description}")
    if not settings:
        stdout.print("no settings: every broker, topic and client keeps Kafka's default")
    for where, values in settings.items():
        click.echo(f"\n[{where}]")
        for key, value in values.items():
            click.echo(f"{key}={value}")
