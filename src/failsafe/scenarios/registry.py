"""The catalog of scenarios shipped with failsafe, and loading a scenario from a TOML file."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from failsafe.scenarios.dr_schema import DR_KIND, parse_dr_scenario
from failsafe.scenarios.overrides import apply_overrides
from failsafe.scenarios.pipeline_schema import PipelineScenario, parse_pipeline_scenario
from failsafe.scenarios.schema import Scenario, ScenarioError, parse_scenario

SEED_LAB = ("pubsub", "queue", "consumer-failover", "broker-failover", "broker-failover-sigterm", "broker-restart",
            "two-brokers-down", "controller-outage", "acks-matrix", "min-insync-replicas")


def catalog_names() -> list[str]:
    files = resources.files("failsafe.scenarios") / "catalog"
    return sorted(p.name.removesuffix(".toml") for p in files.iterdir() if p.name.endswith(".toml"))


# A scenario's [zookeeper] table: --set assignments that apply when it runs on a ZooKeeper-mode
# cluster (e.g. a longer chaos phase: ZooKeeper notices a dead broker after zookeeper.session.timeout.ms
# 18000, KRaft after broker.session.timeout.ms 9000).
MODE_TABLES = ("zookeeper",)


def _parse_toml(text: str, origin: str, overrides: tuple[str, ...] = (), mode: str | None = None) -> Scenario | PipelineScenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{origin} is not valid TOML: {e}") from e
    if isinstance(data, dict):
        by_mode = {m: data.pop(m) for m in MODE_TABLES if m in data}
        for m, table in by_mode.items():
            assignments = table.get("set") if isinstance(table, dict) else None
            if not isinstance(assignments, list) or not all(isinstance(a, str) for a in assignments):
                raise ScenarioError(f"{origin}: [{m}] must hold set = [\"PATH=VALUE\", ...] (the --set syntax)")
        if mode in by_mode:
            data = apply_overrides(data, by_mode[mode]["set"])
    data = apply_overrides(data, overrides)
    kind = data.pop("kind", "lab") if isinstance(data, dict) else "lab"
    if kind == "pipeline":
        return parse_pipeline_scenario({**data, "kind": kind})
    if kind == DR_KIND:
        return parse_dr_scenario({**data, "kind": kind})
    if kind != "lab":
        raise ScenarioError(f"{origin}: kind {kind!r} is not lab, pipeline or dr")
    return parse_scenario(data)


def load_scenario(name_or_path: str, overrides: tuple[str, ...] = (), mode: str | None = None) -> Scenario | PipelineScenario:
    """A catalog scenario by name, or a scenario file (``*.toml``) by path, with ``--set PATH=VALUE`` overrides applied.

    ``mode``: the cluster's (kraft, zookeeper); the scenario's table of that name, if any, applies first.
    """
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise ScenarioError(f"no scenario file at {path}: pass a catalog name ({', '.join(catalog_names())}) or a .toml file")
        return _parse_toml(path.read_text(), str(path), overrides, mode)
    if name_or_path not in catalog_names():
        raise ScenarioError(f"no scenario named {name_or_path!r}: choose one of {', '.join(catalog_names())}, or seed-lab")
    text = (resources.files("failsafe.scenarios") / "catalog" / f"{name_or_path}.toml").read_text()
    return _parse_toml(text, f"catalog scenario {name_or_path}", overrides, mode)
