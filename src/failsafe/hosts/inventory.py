"""The hosts a cluster runs on: ``hosts.toml`` or ``--hosts a,b,c`` (docs/hosts.md).

    [defaults]                      # every key of a host may be set here for all of them
    user = "root"
    key = "~/.ssh/id_ed25519"
    port = 22
    dir = "/var/lib/failsafe"       # failsafe's directory on the host: Kafka, node dirs, logs
    known_hosts = "~/.ssh/known_hosts"
    new_host_keys = "refuse"        # or "accept": remember a host's key the first time (ssh's accept-new)

    [[host]]
    name = "kafka-1"
    address = "10.0.0.11"           # what failsafe connects to, and what the nodes listen on
    roles = ["broker", "controller"]
    rack = "a"
    [host.commands]                 # a cluster failsafe did not start: how to break it (docs/hosts.md)
    kill = "systemctl kill -s KILL kafka"

Pure: no connection is made here. A host's problems are said in one line naming the host.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from failsafe.errors import UserError

ROLES = ("broker", "controller", "zookeeper", "client")
NEW_HOST_KEYS = ("refuse", "accept")
DEFAULT_DIR = "/var/lib/failsafe"
DEFAULT_PORT = 22
DEFAULT_USER = "root"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_HOST_KEYS = {
    "name",
    "address",
    "user",
    "key",
    "port",
    "dir",
    "roles",
    "rack",
    "known_hosts",
    "new_host_keys",
    "commands",
}
_DEFAULT_KEYS = _HOST_KEYS - {"name", "address", "roles", "rack", "commands"}


class InventoryError(UserError):
    """hosts.toml or --hosts says something failsafe cannot use."""


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    user: str = DEFAULT_USER
    port: int = DEFAULT_PORT
    key: Path | None = None  # None: the SSH agent and ~/.ssh's default keys
    dir: PurePosixPath = PurePosixPath(DEFAULT_DIR)
    roles: tuple[str, ...] = ("broker", "controller")
    rack: str | None = None
    known_hosts: Path | None = None  # None: ~/.ssh/known_hosts
    new_host_keys: str = "refuse"
    commands: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.name} ({self.user}@{self.address}:{self.port})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "address": self.address,
            "user": self.user,
            "port": self.port,
            "key": str(self.key) if self.key else None,
            "dir": str(self.dir),
            "roles": list(self.roles),
            "rack": self.rack,
            "known_hosts": str(self.known_hosts) if self.known_hosts else None,
            "new_host_keys": self.new_host_keys,
            "commands": dict(self.commands),
        }


@dataclass(frozen=True)
class Inventory:
    hosts: tuple[Host, ...]
    source: str  # the file, or "--hosts"

    def with_role(self, role: str) -> list[Host]:
        return [h for h in self.hosts if role in h.roles]

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise InventoryError(f"{self.source}: no host named {name!r} (hosts: {', '.join(h.name for h in self.hosts)})")

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "hosts": [h.to_json() for h in self.hosts]}


def load(path: Path) -> Inventory:
    """Read ``hosts.toml``; every mistake is one InventoryError naming the file and the host."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as e:
        raise InventoryError(f"{path}: no such inventory file") from e
    except (OSError, UnicodeDecodeError) as e:
        raise InventoryError(f"{path}: cannot read it ({e})") from e
    except tomllib.TOMLDecodeError as e:
        raise InventoryError(f"{path}: not TOML ({e})") from e
    return from_mapping(data, str(path), base=path.parent)


def from_mapping(data: dict[str, Any], source: str, base: Path | None = None) -> Inventory:
    unknown = set(data) - {"defaults", "host"}
    if unknown:
        raise InventoryError(
            f"{source}: unknown section(s) {', '.join(sorted(unknown))} (expected [defaults] and [[host]])"
        )
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise InventoryError(f"{source}: [defaults] must be a table")
    stray = set(defaults) - _DEFAULT_KEYS
    if stray:
        raise InventoryError(
            f"{source}: [defaults] cannot set {', '.join(sorted(stray))} (it can set "
            f"{', '.join(sorted(_DEFAULT_KEYS))})"
        )
    entries = data.get("host", [])
    if not isinstance(entries, list) or not entries:
        raise InventoryError(f"{source}: no [[host]] entries")
    hosts = [
        _host({**defaults, **entry} if isinstance(entry, dict) else entry, source, i, base)
        for i, entry in enumerate(entries)
    ]
    return _checked(hosts, source)


def from_option(
    text: str, *, user: str | None = None, key: Path | None = None, port: int | None = None, dir: str | None = None
) -> Inventory:
    """``--hosts a,b,c`` (addresses or names, each optionally ``user@``, ``:port``): every host a broker and
    controller."""
    hosts = []
    for i, item in enumerate(t.strip() for t in text.split(",")):
        if not item:
            raise InventoryError(f"--hosts: empty entry in {text!r}")
        who, _, address = item.rpartition("@")
        address, port_text = _split_port(address, item)
        entry: dict[str, Any] = {"name": address.replace(":", "-"), "address": address}
        if who or user:
            entry["user"] = who or user
        if port_text or port:
            entry["port"] = int(port_text) if port_text else port
        if key:
            entry["key"] = str(key)
        if dir:
            entry["dir"] = dir
        hosts.append(_host(entry, "--hosts", i, None))
    return _checked(hosts, "--hosts")


def _split_port(address: str, item: str) -> tuple[str, str]:
    if address.startswith("["):  # [v6]:port
        inside, _, rest = address[1:].partition("]")
        return inside, rest.removeprefix(":")
    if address.count(":") == 1:
        host, _, port = address.partition(":")
        if not port.isdigit():
            raise InventoryError(f"--hosts: {item!r}: the port must be a number")
        return host, port
    return address, ""


def _host(entry: Any, source: str, index: int, base: Path | None) -> Host:
    where = f"{source}: host #{index + 1}"
    if not isinstance(entry, dict):
        raise InventoryError(f"{where}: must be a table")
    if "name" in entry and isinstance(entry["name"], str):
        where = f"{source}: host {entry['name']!r}"
    stray = set(entry) - _HOST_KEYS
    if stray:
        raise InventoryError(f"{where}: unknown key(s) {', '.join(sorted(stray))}")
    address = entry.get("address")
    if not isinstance(address, str) or not address.strip():
        raise InventoryError(f"{where}: needs an address (a name or an IP failsafe and the other hosts reach it on)")
    name = entry.get("name", address)
    if not isinstance(name, str) or not _NAME.match(name):
        raise InventoryError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-' (at most 63)")
    port = entry.get("port", DEFAULT_PORT)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise InventoryError(f"{where}: port {port!r} is not a TCP port")
    roles = entry.get("roles", ["broker", "controller"])
    if isinstance(roles, str):
        roles = [roles]
    if not isinstance(roles, list) or not roles or any(r not in ROLES for r in roles):
        raise InventoryError(f"{where}: roles {roles!r} must be a non-empty list of {', '.join(ROLES)}")
    new_keys = entry.get("new_host_keys", "refuse")
    if new_keys not in NEW_HOST_KEYS:
        raise InventoryError(f"{where}: new_host_keys must be one of {', '.join(NEW_HOST_KEYS)}, not {new_keys!r}")
    commands = entry.get("commands", {})
    if not isinstance(commands, dict) or any(not isinstance(v, str) or not v.strip() for v in commands.values()):
        raise InventoryError(f"{where}: [host.commands] must map a fault name to a shell command")
    remote_dir = PurePosixPath(str(entry.get("dir", DEFAULT_DIR)))
    if not remote_dir.is_absolute():
        raise InventoryError(f"{where}: dir {str(remote_dir)!r} must be an absolute path on the host")
    rack = entry.get("rack")
    user = entry.get("user", DEFAULT_USER)
    if not isinstance(user, str) or not user:
        raise InventoryError(f"{where}: user must be a name")
    return Host(
        name=name,
        address=address.strip(),
        user=user,
        port=port,
        key=_local_path(entry.get("key"), base),
        dir=remote_dir,
        roles=tuple(dict.fromkeys(roles)),
        rack=str(rack) if rack is not None else None,
        known_hosts=_local_path(entry.get("known_hosts"), base),
        new_host_keys=new_keys,
        commands=dict(commands),
    )


def _local_path(value: Any, base: Path | None) -> Path | None:
    if value is None:
        return None
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() or base is None else base / path


def _checked(hosts: list[Host], source: str) -> Inventory:
    for attr in ("name", "address"):
        seen: set[str] = set()
        for h in hosts:
            value = getattr(h, attr)
            if value in seen:
                raise InventoryError(f"{source}: two hosts with {attr} {value!r}")
            seen.add(value)
    return Inventory(tuple(hosts), source)


def with_dir(inventory: Inventory, remote_dir: str) -> Inventory:
    """The same hosts with failsafe's directory on each set to ``remote_dir``."""
    return replace(inventory, hosts=tuple(replace(h, dir=PurePosixPath(remote_dir)) for h in inventory.hosts))
