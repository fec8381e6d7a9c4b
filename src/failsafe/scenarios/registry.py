"""The catalog of scenarios shipped with failsafe, and loading a scenario from a TOML file."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from failsafe.scenarios.base import Scenario, ScenarioError
from failsafe.scenarios.kinds import ScenarioKind, default_kind, kind_named, parse_table
from failsafe.scenarios.overrides import MAX_DEPTH, apply_overrides

SEED_LAB = (
    "pubsub",
    "queue",
    "consumer-failover",
    "broker-failover",
    "broker-failover-sigterm",
    "broker-restart",
    "two-brokers-down",
    "controller-outage",
    "acks-matrix",
    "min-insync-replicas",
)


def catalog_names() -> list[str]:
    files = resources.files("failsafe.scenarios") / "catalog"
    return sorted(p.name.removesuffix(".toml") for p in files.iterdir() if p.name.endswith(".toml"))


# A scenario's [zookeeper] table: --set assignments that apply when it runs on a ZooKeeper-mode
# cluster (e.g. a longer chaos phase: ZooKeeper notices a dead broker after zookeeper.session.timeout.ms
# 18000, KRaft after broker.session.timeout.ms 9000).
MODE_TABLES = ("zookeeper",)


@dataclass(frozen=True)
class ScenarioFile:
    """A scenario file as read, before it is parsed: its table, its mode tables, and where it came from."""

    origin: str
    data: dict
    by_mode: dict[str, list[str]] = field(default_factory=dict)

    @property
    def kind(self) -> ScenarioKind:
        name = self.data.get("kind")
        return default_kind() if name is None else kind_named(str(name))

    def applies(self, mode: str | None) -> bool:
        """Whether the file has a table for ``mode`` (parsed for it, the scenario differs)."""
        return mode in self.by_mode

    def parse(self, overrides: tuple[str, ...] = (), mode: str | None = None) -> Scenario:
        """The scenario, validated, with the mode's table (if any) and then the --set overrides applied."""
        data = apply_overrides(self.data, self.by_mode[mode]) if mode in self.by_mode else self.data
        return parse_table(apply_overrides(data, overrides), self.origin)


def _read_toml(text: str, origin: str) -> ScenarioFile:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{origin} is not valid TOML: {e}") from e
    except RecursionError as e:
        raise ScenarioError(f"{origin}: its tables or arrays are nested too deep to be a scenario") from e
    if _depth(data) > MAX_DEPTH:
        raise ScenarioError(
            f"{origin}: its tables or arrays are nested deeper than {MAX_DEPTH} levels, deeper than any scenario's"
        )
    by_mode = {m: data.pop(m) for m in MODE_TABLES if m in data}
    for m, table in by_mode.items():
        assignments = table.get("set") if isinstance(table, dict) else None
        if not isinstance(assignments, list) or not all(isinstance(a, str) for a in assignments):
            raise ScenarioError(f'{origin}: [{m}] must hold set = ["PATH=VALUE", ...] (the --set syntax)')
    return ScenarioFile(origin, data, {m: table["set"] for m, table in by_mode.items()})


def _depth(data: object) -> int:
    """How deep tables and arrays nest in ``data``, counted without recursion (a deep file must not exhaust the
    stack)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def read_scenario(name_or_path: str) -> ScenarioFile:
    """A catalog scenario by name, or a scenario file (``*.toml``) by path, read but not parsed."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise ScenarioError(
                f"no scenario file at {path}: pass a catalog name ({', '.join(catalog_names())}) or a .toml file"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(f"{path} cannot be read as a UTF-8 TOML file: {e}") from e
        return _read_toml(text, str(path))
    if name_or_path not in catalog_names():
        raise ScenarioError(
            f"no scenario named {name_or_path!r}: choose one of {', '.join(catalog_names())}, or seed-lab"
        )
    text = (resources.files("failsafe.scenarios") / "catalog" / f"{name_or_path}.toml").read_text()
    return _read_toml(text, f"catalog scenario {name_or_path}")


def load_scenario(name_or_path: str, overrides: tuple[str, ...] = (), mode: str | None = None) -> Scenario:
    """A catalog scenario by name, or a scenario file (``*.toml``) by path, with ``--set PATH=VALUE`` overrides applied.

    ``mode``: the cluster's (kraft, zookeeper); the scenario's table of that name, if any, applies first.
    """
    return read_scenario(name_or_path).parse(overrides, mode)


def parse_scenario(data: dict, origin: str = "scenario") -> Scenario:
    """A scenario of any kind from its table as a TOML file holds it (``kind`` absent: the default kind)."""
    return parse_table(data, origin)
