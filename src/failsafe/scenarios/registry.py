"""The catalog of scenarios shipped with failsafe, and loading a scenario from a TOML file."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from failsafe.scenarios.overrides import apply_overrides
from failsafe.scenarios.pipeline_schema import PipelineScenario, parse_pipeline_scenario
from failsafe.scenarios.schema import Scenario, ScenarioError, parse_scenario

SEED_LAB = ("pubsub", "queue", "consumer-failover", "broker-failover", "broker-failover-sigterm", "broker-restart",
            "two-brokers-down", "controller-outage", "acks-matrix", "min-insync-replicas")


def catalog_names() -> list[str]:
    files = resources.files("failsafe.scenarios") / "catalog"
    return sorted(p.name.removesuffix(".toml") for p in files.iterdir() if p.name.endswith(".toml"))


def _parse_toml(text: str, origin: str, overrides: tuple[str, ...] = ()) -> Scenario | PipelineScenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{origin} is not valid TOML: {e}") from e
    data = apply_overrides(data, overrides)
    kind = data.pop("kind", "lab") if isinstance(data, dict) else "lab"
    if kind == "pipeline":
        return parse_pipeline_scenario({**data, "kind": kind})
    if kind != "lab":
        raise ScenarioError(f"{origin}: kind {kind!r} is not lab or pipeline")
    return parse_scenario(data)


def load_scenario(name_or_path: str, overrides: tuple[str, ...] = ()) -> Scenario | PipelineScenario:
    """A catalog scenario by name, or a scenario file (``*.toml``) by path, with ``--set PATH=VALUE`` overrides applied."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise ScenarioError(f"no scenario file at {path}: pass a catalog name ({', '.join(catalog_names())}) or a .toml file")
        return _parse_toml(path.read_text(), str(path), overrides)
    if name_or_path not in catalog_names():
        raise ScenarioError(f"no scenario named {name_or_path!r}: choose one of {', '.join(catalog_names())}, or seed-lab")
    text = (resources.files("failsafe.scenarios") / "catalog" / f"{name_or_path}.toml").read_text()
    return _parse_toml(text, f"catalog scenario {name_or_path}", overrides)
