"""What a campaign runs: its workload (a lab scenario without faults), the arena its faults aim at, its nemesis.

Workloads ship in campaigns/workloads/ (``--workload acks-all``); any lab or txn scenario file without
``[[faults]]`` is one too (``--workload my.toml``). The envelope's limits come from the workload's
own promise: its smallest replication factor less its largest min.insync.replicas brokers, and a
minority of its controllers.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from failsafe.campaigns.nemesis import Envelope, Limits, Nemesis, drawn_by_default
from failsafe.campaigns.schedule import Planned, Schedule, scenario_data
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES, allowed
from failsafe.faults.draw import Arena
from failsafe.history.ops import Family
from failsafe.scenarios.base import Scenario, ScenarioError
from failsafe.scenarios.kinds import kind_of
from failsafe.scenarios.kinds.txn.schema import TxnScenario
from failsafe.scenarios.kit.clients import ClientsScenario
from failsafe.scenarios.registry import parse_scenario

WORKLOADS_DIR = Path(__file__).parent / "workloads"
MIN_INSYNC = "min.insync.replicas"


def workload_names() -> list[str]:
    return sorted(p.stem for p in WORKLOADS_DIR.glob("*.toml"))


def load_workload(name: str) -> tuple[str, dict[str, Any]]:
    """A workload by name (campaigns/workloads/NAME.toml) or path: its name and its scenario data."""
    shipped = WORKLOADS_DIR / f"{name}.toml"
    path = shipped if shipped.is_file() else Path(name)
    if not path.is_file():
        raise UserError(f"--workload {name!r} is neither one of {', '.join(workload_names())} nor a scenario file")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"--workload {path}: not TOML: {e}") from e
    if data.get("faults"):
        raise UserError(f"--workload {path} has [[faults]]: a campaign draws its own, so a workload has none")
    return path.stem, data


@dataclass(frozen=True)
class Plan:
    """A campaign's workload, its parsed form, and the nemesis that draws its schedules."""

    workload: str
    base: dict[str, Any]
    scenario: Scenario
    nemesis: Nemesis
    envelope: Envelope

    @classmethod
    def make(cls, workload: str, faults: tuple[str, ...], envelope: Envelope, chaos_s: float) -> Plan:
        name, base = load_workload(workload)
        scenario = parse(base, Schedule(chaos_s, ()), f"{name}-workload", name)
        if not isinstance(scenario, ClientsScenario):
            raise UserError(
                f"--workload {workload}: a campaign runs scenarios of the kit's clients (lab, txn), not "
                f"{kind_of(scenario).name} ones"
            )
        topics = scenario.topics
        if not topics:
            raise UserError(f"--workload {workload} has no topics for the faults to aim at")
        cluster = scenario.cluster
        txn_clients = tuple(scenario.txn_clients()) if isinstance(scenario, TxnScenario) else ()
        arena = Arena(
            tuple(f"{t.name}-{i}" for t in topics for i in range(t.partitions)),
            cluster.brokers,
            0 if cluster.combined else cluster.controllers,
            cluster.combined,
            txn_clients,
        )
        replication = min(t.replication_factor for t in topics)
        min_insync = max(int(t.configs.get(MIN_INSYNC, "1")) for t in topics)
        # Every type a campaign can draw that this kind of scenario takes (a lab workload has no transactional client to
        # kill).
        takes = set(allowed(kind_of(scenario).offers))
        nemesis = Nemesis(
            faults or tuple(f for f in drawn_by_default() if f in takes),
            chaos_s,
            arena,
            Limits.of(envelope, arena, replication, min_insync),
        )
        # What the drawn types need of the cluster (protocol faults: proxies), so the campaign's cluster has it from the
        # start, as a run of a scenario with such a fault gets it.
        needs = {need: True for f in nemesis.faults for need in FAULT_TYPES[f].cluster_needs}
        settings = {k: v for f in nemesis.faults for k, v in FAULT_TYPES[f].topic_settings.items()}
        if settings:
            topics = [{**t, "configs": {**settings, **t.get("configs", {})}} for t in base.get("topics", [])]
            base = {**base, "topics": topics}
            scenario = parse(base, Schedule(chaos_s, ()), f"{name}-workload", name)
        if needs:
            scenario = replace(scenario, cluster=replace(scenario.cluster, **needs))
        plan = cls(name, base, scenario, nemesis, envelope)
        plan.check_faults()
        plan.check_client_hosts()
        return plan

    def check_client_hosts(self) -> None:
        """A client on a host is not cut by a network fault (failsafe cuts the clients' links where it runs), and a
        drawn one may name the clients: a campaign with such a client draws no network fault."""
        placed = list(self.scenario.client_hosts())
        network = [f for f in self.nemesis.faults if FAULT_TYPES[f].family == Family.NETWORK]
        if placed and network:
            raise UserError(
                f"--workload {self.workload}: {placed[0]} runs on a host, and network faults ({', '.join(network)}) "
                "may cut the clients' links, which failsafe cuts where it runs: choose --faults without them"
            )

    def check_faults(self) -> None:
        """Each fault type, as drawn, is one this workload's scenario takes (refused here, not in run 37)."""
        rng = random.Random(0)
        for name in self.nemesis.faults:
            drawn = FAULT_TYPES[name].draw(rng, self.nemesis.arena)  # type: ignore[misc]
            one = Planned(name, 0.0, None if drawn.occupies_s is not None else 2.0, dict(drawn.fields))
            parse(self.base, Schedule(self.nemesis.chaos_s, (one,)), f"{self.workload}-check-{name}", self.workload)

    def run_name(self, seed: int, run: int) -> str:
        return f"{self.workload}-s{seed}-r{run:03d}"


def parse(base: dict[str, Any], schedule: Schedule, name: str, workload: str, description: str = "") -> Scenario:
    """The lab scenario of ``base`` under ``schedule``; a schedule it cannot take is one clear line."""
    data = scenario_data(base, schedule, name, description or str(base.get("description", workload)))
    try:
        return parse_scenario(data, name)
    except ScenarioError as e:
        raise UserError(f"--workload {workload}: {e}") from e
