"""Lab scenarios: the kit's topics, verifying producers and consumers (scenarios/kit/clients.py), on one cluster, and
nothing else.

A producer that promises no durability (acks 0 or 1) may be declared ``may_lose = true``: its lost
writes are then counted against it and are not violations. An acks=all producer cannot be: loss of
its acknowledged writes is INVALID whatever else the scenario allows (the checkers hold to that
from the history too, by the acks each client ran with).
"""

from __future__ import annotations

from dataclasses import dataclass

from failsafe.scenarios.base import KindInfo
from failsafe.scenarios.kit.clients import ClientsScenario, parse_clients


@dataclass(frozen=True)
class LabScenario(ClientsScenario):
    """The kit's scenario as it is."""


def parse_lab(data: dict, kind: KindInfo) -> LabScenario:
    scenario = parse_clients(data, kind, LabScenario)
    assert isinstance(scenario, LabScenario)
    return scenario
