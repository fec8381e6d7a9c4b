"""The inventory: hosts.toml and --hosts, read without connecting anywhere."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from failsafe.hosts import inventory
from failsafe.hosts.inventory import InventoryError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def test_defaults_apply_to_every_host_and_a_host_overrides_them(tmp_path: Path) -> None:
    inv = inventory.load(
        write(
            tmp_path,
            """
[defaults]
user = "kafka"
key = "keys/id"
dir = "/srv/failsafe"
[[host]]
name = "k1"
address = "10.0.0.1"
rack = "a"
[[host]]
address = "10.0.0.2"
user = "root"
port = 2222
roles = ["broker"]
[host.commands]
kill = "systemctl kill -s KILL kafka"
""",
        )
    )
    k1, k2 = inv.hosts
    assert (k1.name, k1.user, k1.port, k1.key, k1.dir, k1.roles, k1.rack) == (
        "k1",
        "kafka",
        22,
        tmp_path / "keys/id",
        PurePosixPath("/srv/failsafe"),
        ("broker", "controller"),
        "a",
    )
    assert (k2.name, k2.user, k2.port, k2.roles, k2.commands) == (
        "10.0.0.2",
        "root",
        2222,
        ("broker",),
        {"kill": "systemctl kill -s KILL kafka"},
    )
    assert [h.name for h in inv.with_role("controller")] == ["k1"]
    assert inv.host("k1") is k1
    with pytest.raises(InventoryError, match="no host named 'k3'"):
        inv.host("k3")
    assert inv.to_json()["hosts"][1]["commands"] == {"kill": "systemctl kill -s KILL kafka"}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[host]]\nname = 'a'\n", "needs an address"),
        ("[[host]]\naddress = 'x'\nport = 70000\n", "is not a TCP port"),
        ("[[host]]\naddress = 'x'\nroles = ['kafka']\n", "roles"),
        ("[[host]]\naddress = 'x'\ndir = 'relative'\n", "must be an absolute path"),
        ("[[host]]\naddress = 'x'\ncolour = 'red'\n", "unknown key(s) colour"),
        ("[[host]]\naddress = 'x'\n[[host]]\naddress = 'x'\n", "two hosts with name 'x'"),
        ("[[host]]\nname = 'a'\naddress = 'x'\n[[host]]\nname = 'b'\naddress = 'x'\n", "two hosts with address 'x'"),
        ("[defaults]\naddress = 'x'\n[[host]]\naddress = 'y'\n", "[defaults] cannot set address"),
        ("[hosts]\n", "unknown section(s) hosts"),
        ("", "no [[host]] entries"),
        ("[[host]]\naddress = 'x'\nnew_host_keys = 'yes'\n", "new_host_keys must be one of"),
        ("[[host]]\nname = 'a b'\naddress = 'x'\n", "name 'a b' must be"),
        ("[[host]\n", "not TOML"),
    ],
)
def test_each_mistake_is_one_line_naming_file_and_host(tmp_path: Path, text: str, says: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert says in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_missing_file_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="no such inventory file"):
        inventory.load(tmp_path / "nope.toml")


def test_hosts_option() -> None:
    inv = inventory.from_option("10.0.0.1, kafka@10.0.0.2:2200,[fe80::1]:22", user="ops", key=Path("/k"))
    a, b, c = inv.hosts
    assert (a.address, a.user, a.port, a.key) == ("10.0.0.1", "ops", 22, Path("/k"))
    assert (b.address, b.user, b.port) == ("10.0.0.2", "kafka", 2200)
    assert (c.name, c.address, c.port) == ("fe80--1", "fe80::1", 22)
    assert inv.source == "--hosts"
    with pytest.raises(InventoryError, match="empty entry"):
        inventory.from_option("a,,b")
    with pytest.raises(InventoryError, match="port must be a number"):
        inventory.from_option("a:b")
    with pytest.raises(InventoryError, match="two hosts with name"):
        inventory.from_option("a,a")
    assert inventory.with_dir(inv, "/x").hosts[0].dir == PurePosixPath("/x")
