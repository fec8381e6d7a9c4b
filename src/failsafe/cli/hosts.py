"""``failsafe hosts check|testbed``: the hosts of an inventory, and test hosts on this machine (docs/hosts.md)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from failsafe.cli.options import stderr, stdout
from failsafe.errors import EXIT_USAGE, UserError
from failsafe.hosts import inventory, testbed

if TYPE_CHECKING:
    from failsafe.hosts import probe

DEFAULT_TESTBED_DIR = Path("failsafe-testbed")


@click.group("hosts")
def hosts() -> None:
    """Hosts reached over SSH: check what they have; make test hosts on this machine."""


def inventory_options(f):
    f = click.option(
        "--hosts",
        "hosts_list",
        default=None,
        metavar="[USER@]ADDR[:PORT],...",
        help="The hosts, instead of an inventory file (each a broker and controller).",
    )(f)
    f = click.option(
        "--inventory",
        "inventory_file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="hosts.toml: addresses, SSH user and key, roles, racks (docs/hosts.md).",
    )(f)
    f = click.option("--user", default=None, help="SSH user for --hosts [default: root].")(f)
    f = click.option(
        "--key",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="SSH private key for --hosts [default: the SSH agent's and ~/.ssh's].",
    )(f)
    return f


def load_inventory(
    inventory_file: Path | None, hosts_list: str | None, user: str | None, key: Path | None
) -> inventory.Inventory:
    if (inventory_file is None) == (hosts_list is None):
        raise UserError("say which hosts: --inventory hosts.toml or --hosts a,b,c (one of them)")
    if inventory_file is not None:
        if user or key:
            raise UserError("--user and --key go with --hosts; in an inventory file set them under [defaults]")
        return inventory.load(inventory_file)
    return inventory.from_option(hosts_list or "", user=user, key=key)


@hosts.command("check")
@inventory_options
@click.option("--network-faults", is_flag=True, help="Also require what network faults need there (root, nftables).")
@click.option(
    "--disk-layers",
    is_flag=True,
    help="Also require what disk layers need there (--volatile-disks, power loss: root, "
    "/dev/fuse, libfuse 3, fusermount3, python3).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def check_command(
    inventory_file: Path | None,
    hosts_list: str | None,
    user: str | None,
    key: Path | None,
    network_faults: bool,
    disk_layers: bool,
    as_json: bool,
) -> None:
    """Connect to every host and say what it has: kernel, Java, root, nftables, disk, clock offset. Exits 2 when a host
    cannot be reached or lacks what failsafe needs there, naming the host and what is missing."""
    from failsafe.hosts import probe  # SSH's library: loaded by the commands that connect only
    from failsafe.hosts.ssh import HostUnreachable, RemoteCommandFailed, SshHost

    inv = load_inventory(inventory_file, hosts_list, user, key)

    def one(host: inventory.Host) -> tuple[inventory.Host, probe.HostFacts | None, list[str]]:
        ssh = SshHost(host)
        try:
            facts = probe.probe(ssh)
        except (HostUnreachable, RemoteCommandFailed) as e:
            return host, None, [str(e)]
        finally:
            ssh.close()
        return host, facts, probe.problems(facts, needs_network_faults=network_faults, needs_disk_layers=disk_layers)

    with ThreadPoolExecutor(max_workers=min(16, len(inv.hosts))) as pool:
        results = list(pool.map(one, inv.hosts))
    found = [line for _, _, lines in results for line in lines]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "inventory": inv.source,
                    "hosts": [
                        {"name": h.name, "facts": f.to_json() if f else None, "problems": lines}
                        for h, f, lines in results
                    ],
                },
                indent=2,
            )
        )
    else:
        stdout.print(_facts_table(results))
        for line in found:
            stderr.print(f"failsafe: {line}", soft_wrap=True)
    if found:
        raise click.exceptions.Exit(EXIT_USAGE)


def _facts_table(results: list[tuple[inventory.Host, probe.HostFacts | None, list[str]]]) -> Table:
    table = Table(title="hosts", title_justify="left")
    for column in ("host", "address", "kernel", "java", "user", "nft", "disk free", "clock offset", "state"):
        table.add_column(column)
    for host, f, lines in results:
        if f is None:
            table.add_row(host.name, host.address, "", "", host.user, "", "", "", "[red]unreachable[/]")
            continue
        free = f"{f.disk_free_kib / 1024 / 1024:.1f} GiB {f.fs_type}" if f.disk_free_kib is not None else "?"
        java = f"{f.java_major}" if f.java_major else "[red]none[/]"
        nft = "yes" if f.nft_usable else ("not as this user" if f.nft else "no")
        clock = f"{f.clock_offset_s * 1000:+.1f} ms ± {f.clock_error_s * 1000:.1f}"
        state = "[red]" + str(len(lines)) + " problem(s)[/]" if lines else "[green]ok[/]"
        table.add_row(host.name, host.address, f.kernel, java, f"{host.user} (uid {f.uid})", nft, free, clock, state)
    return table


@hosts.group("testbed")
def testbed_group() -> None:
    """Test hosts on this machine: network namespaces with an sshd each (root; Debian's openssh-server)."""


def testbed_dir_option(f):
    return click.option(
        "--dir",
        "bed_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=DEFAULT_TESTBED_DIR,
        show_default=True,
        help="The testbed's directory: keys, sshd configs, hosts.toml.",
    )(f)


@testbed_group.command("up")
@testbed_dir_option
@click.option("--count", type=click.IntRange(1, 200), default=3, show_default=True, help="How many hosts (h1..hN).")
@click.option("--no-java", "no_java", multiple=True, metavar="HOST", help="A host without Java (repeatable).")
@click.option(
    "--login", "logins", multiple=True, metavar="HOST=USER", help="A host that logs in USER, not root (repeatable)."
)
def testbed_up(bed_dir: Path, count: int, no_java: tuple[str, ...], logins: tuple[str, ...]) -> None:
    """Make COUNT test hosts and write their hosts.toml."""
    users = {}
    for item in logins:
        host, sep, name = item.partition("=")
        if not sep or not host or not name:
            raise UserError(f"--login {item!r}: expected HOST=USER, e.g. --login h2=failsafe-test")
        users[host] = name
    bed = testbed.create(bed_dir, count, no_java=no_java, users=users)
    for host in bed.hosts:
        stderr.print(f"{host.name}  {host.user}@{host.address}  netns {host.netns}")
    stdout.print(str(bed.inventory_file))


@testbed_group.command("down")
@testbed_dir_option
def testbed_down(bed_dir: Path) -> None:
    """Remove the test hosts: their sshd, everything still running in them, their namespaces and links."""
    bed = testbed.Testbed.open(bed_dir.resolve())
    for line in testbed.destroy(bed):
        stderr.print(f"killed, still running: {line}")
    stderr.print(f"removed {len(bed.hosts)} test host(s) of {bed.root}")
