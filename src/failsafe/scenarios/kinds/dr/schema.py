"""DR scenarios: a lab scenario run across a DR pair, plus the MirrorMaker settings of its flows.

Its ``faults`` act on the primary (``cluster-loss``: every node killed); its ``actions`` move the
clients (``failover`` to the backup, ``failback`` to the primary again). ``[mirror]`` holds
mm2.properties entries written after failsafe's own (cluster/topology/mirror.py), e.g. the intervals that
decide RPO and RTO.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from failsafe.cluster.spec import ZOOKEEPER_MODE
from failsafe.scenarios.base import KindInfo, ScenarioError, fail
from failsafe.scenarios.kit.clients import TOP, ClientsScenario, parse_clients

# A DR worker is NAME@ALIAS, or NAME-sN@ALIAS from its Nth start on (kinds/dr/workload.py).
STINT = r"(-s\d+)?@[^@]+"


@dataclass(frozen=True)
class DrScenario(ClientsScenario):
    mirror: dict[str, str] = field(default_factory=dict)

    def process_name(self, name: str) -> str:
        return f"{name}@primary"

    def incarnations(self, name: str) -> str:
        return re.escape(name) + STINT


def parse_dr(data: dict, kind: KindInfo) -> DrScenario:
    table = dict(data)
    mirror = table.pop("mirror", {})
    where = f"scenario {table.get('name', '?')}.mirror"
    if not isinstance(mirror, dict) or set(mirror) - {"settings"}:
        raise ScenarioError(f'{where}: expected a table with settings = {{ "mm2.key" = "value", ... }}')
    settings = mirror.get("settings", {})
    if not isinstance(settings, dict):
        raise ScenarioError(f"{where}.settings: expected a table of mm2.properties entries")
    settings = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()}
    scenario = parse_clients(table, kind, DrScenario, TOP, mirror=settings)
    stint_like = [
        n for g in (*scenario.producers, *scenario.consumers) for n in g.processes() if re.search(r"-s\d+$", n)
    ]
    if stint_like:
        raise fail(
            scenario.name,
            f"{stint_like[0]!r}: a DR worker's name must not end in -sN, which names a restart of a worker",
        )
    if scenario.cluster.mode == ZOOKEEPER_MODE:
        raise fail(f"{scenario.name}.cluster.mode", "DR scenarios run on KRaft clusters (MirrorMaker 2 of Kafka 4.x)")
    assert isinstance(scenario, DrScenario)
    return replace(scenario, raw=data)
