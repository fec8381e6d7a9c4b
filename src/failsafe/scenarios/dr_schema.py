"""DR scenarios (kind = "dr"): a lab scenario run across a DR pair, plus the MirrorMaker settings of its flows.

Its ``faults`` act on the primary (``cluster-loss``: every node killed); its ``actions`` move the
clients (``failover`` to the backup, ``failback`` to the primary again). ``[mirror]`` holds
mm2.properties entries written after failsafe's own (cluster/mirror.py), e.g. the intervals that
decide RPO and RTO.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from failsafe.scenarios.schema import Scenario, ScenarioError, parse_scenario

DR_KIND = "dr"


@dataclass(frozen=True)
class DrScenario(Scenario):
    mirror: dict[str, str] = field(default_factory=dict)
    kind: ClassVar[str] = DR_KIND


def parse_dr_scenario(data: dict) -> DrScenario:
    table = dict(data)
    table.pop("kind", None)
    mirror = table.pop("mirror", {})
    where = f"scenario {table.get('name', '?')}.mirror"
    if not isinstance(mirror, dict) or set(mirror) - {"settings"}:
        raise ScenarioError(f"{where}: expected a table with settings = {{ \"mm2.key\" = \"value\", ... }}")
    settings = mirror.get("settings", {})
    if not isinstance(settings, dict):
        raise ScenarioError(f"{where}.settings: expected a table of mm2.properties entries")
    settings = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()}
    scenario = parse_scenario(table, DrScenario, mirror=settings)
    assert isinstance(scenario, DrScenario)
    return replace(scenario, raw={**data, "kind": DR_KIND})
