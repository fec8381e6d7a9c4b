"""The atlas's grid: four axes, a cell per combination, the --cells syntax that picks a part of it, and what a part
costs.

    fault     kill, sigterm, pause, leader-isolated, follower-cut-off, controller-kill, quorum-loss: each a catalog
    scenario
    profile   defaults, fast-failover, durable: the cluster's profile ([cluster] profile, set as --set does)
    client    librdkafka (failsafe's workers), kafka-java (Kafka's VerifiableProducer and VerifiableConsumer)
    mode      kraft-4.3.1, kraft-4.4.0, kraft-3.9.2, zookeeper-3.9.2: the cluster's metadata mode and Kafka release

A cell is one of each; its runs are its scenario with the cell's --set changes (``Cell.overrides``), run as
'failsafe run SCENARIO --set ...' runs it. ``--cells 'fault=kill,pause;profile=*;client=librdkafka;mode=kraft-4.3.1'``
picks the cells of every combination of the values named (``*`` or an axis left out: all of its values); several
--cells add up. The estimate rests on the scenarios' own phase lengths (their ZooKeeper tables included) plus a
measured overhead per run and per cluster.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

from failsafe.errors import UserError
from failsafe.scenarios.registry import read_scenario


@dataclass(frozen=True)
class Fault:
    name: str
    title: str
    scenario: str
    # The scenario in ZooKeeper mode, where the KRaft one has no counterpart (its controller is a broker).
    zookeeper_scenario: str | None = None
    # --set changes the scenario needs in ZooKeeper mode (a scenario written for KRaft only).
    zookeeper_sets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mode:
    name: str
    title: str
    cluster_mode: str  # cluster/spec.py's MODES
    kafka_version: str


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    sets: tuple[str, ...]


# leader-isolated and follower-cut-off say mode = "kraft" (their words are about KRaft's fencing); network faults work
# in ZooKeeper mode too (faults/network.py), where the isolated leader also loses its ZooKeeper session
# (zookeeper.session.timeout.ms 18 s, against 20 s of isolation), so their ZooKeeper cells set the mode.
ZOOKEEPER_MODE_SET = ('cluster.mode="zookeeper"',)
FAULTS: tuple[Fault, ...] = (
    Fault("kill", "kill -9 of a leader", "broker-failover"),
    Fault("sigterm", "SIGTERM of a leader (controlled shutdown)", "broker-failover-sigterm"),
    Fault("pause", "SIGSTOP of a leader for 6 s", "leader-pause-timeout"),
    Fault(
        "leader-isolated",
        "a leader cut off from every other node for 20 s",
        "leader-isolated",
        zookeeper_sets=ZOOKEEPER_MODE_SET,
    ),
    Fault(
        "follower-cut-off",
        "a follower that cannot fetch from its leader for 45 s",
        "follower-cut-off",
        zookeeper_sets=ZOOKEEPER_MODE_SET,
    ),
    Fault(
        "controller-kill",
        "kill -9 of the active controller",
        "controller-failover",
        zookeeper_scenario="controller-broker-failover",
    ),
    Fault(
        "quorum-loss", "every controller stopped for 12 s (ZooKeeper mode: the ZooKeeper ensemble)", "controller-outage"
    ),
)
PROFILES: tuple[str, ...] = ("defaults", "fast-failover", "durable")
CLIENTS: tuple[Client, ...] = (
    Client("librdkafka", "librdkafka (failsafe's workers)", ()),
    Client(
        "kafka-java",
        "Kafka's Java clients (VerifiableProducer, VerifiableConsumer)",
        ('producers[*].driver="kafka-verifiable"', 'consumers[*].driver="kafka-verifiable"'),
    ),
)
MODES: tuple[Mode, ...] = (
    Mode("kraft-4.3.1", "KRaft, Kafka 4.3.1", "kraft", "4.3.1"),
    Mode("kraft-4.4.0", "KRaft, Kafka 4.4.0", "kraft", "4.4.0"),
    Mode("kraft-3.9.2", "KRaft, Kafka 3.9.2", "kraft", "3.9.2"),
    Mode("zookeeper-3.9.2", "ZooKeeper, Kafka 3.9.2", "zookeeper", "3.9.2"),
)
# How a cell asks for its profile: the scenario field the profiles branch adds ([cluster] profile = "NAME"), changed as
# --set changes any field. The default profile is asked for by leaving the field out, which is what it means there, so
# the defaults cells run on a tree without profiles too.
PROFILE_SET = 'cluster.profile="{profile}"'
DEFAULT_PROFILE = "defaults"

FAULT_BY_NAME = {f.name: f for f in FAULTS}
CLIENT_BY_NAME = {c.name: c for c in CLIENTS}
MODE_BY_NAME = {m.name: m for m in MODES}
AXES: dict[str, tuple[str, ...]] = {
    "fault": tuple(FAULT_BY_NAME),
    "profile": PROFILES,
    "client": tuple(CLIENT_BY_NAME),
    "mode": tuple(MODE_BY_NAME),
}
EXAMPLE = "'fault=kill,pause;profile=*;client=librdkafka;mode=kraft-4.3.1'"

# The default grid (docs/atlas.md): every fault under every profile on KRaft 4.3.1 with librdkafka, and the kill -9
# column under the default profile across both clients and the three modes it was first measured in (4.4.0 is compared
# with 4.3.1 by 'failsafe compare', docs/lifecycle.md). 26 cells, 130 runs at 5 runs a cell.
DEFAULT_SELECTIONS = (
    "mode=kraft-4.3.1;client=librdkafka",
    "fault=kill;profile=defaults;mode=kraft-4.3.1,kraft-3.9.2,zookeeper-3.9.2",
)
DEFAULT_RUNS = 5
BUDGET_S = 3 * 3600

# What a run costs beyond its scenario's warm-up, chaos and recover phases: set-up (topics), waiting for the group,
# the heal (a killed broker started again), the drain, checking and the report. Fitted to the stored atlas
# (docs/benchmarks/atlas-fit.json, benchmarks/fit_atlas.py): the mean over its 115 librdkafka runs (first guessed 35 s).
RUN_OVERHEAD_S = 9.2
# Kafka's verifiable clients are a JVM each (a producer and every consumer), started and stopped with every run: the
# mean of the stored atlas's 15 Java runs' overhead, less the above (first guessed 15 s).
JAVA_CLIENT_EXTRA_S = 16.3
# A group's cluster, made, ready, stopped and deleted: the stored atlas's second invocation (3 groups; first guessed 25
# s).
CLUSTER_START_STOP_S = 20.2


@dataclass(frozen=True)
class Cell:
    fault: str
    profile: str
    client: str
    mode: str

    @property
    def id(self) -> str:
        """The cell's name in file names and links: its four values joined by '--' (no value holds '--')."""
        return "--".join((self.fault, self.profile, self.client, self.mode))

    @property
    def label(self) -> str:
        return " · ".join((self.fault, self.profile, self.client, self.mode))

    def key(self) -> dict[str, str]:
        return {"fault": self.fault, "profile": self.profile, "client": self.client, "mode": self.mode}

    @property
    def scenario(self) -> str:
        fault = FAULT_BY_NAME[self.fault]
        return (fault.zookeeper_scenario or fault.scenario) if self.zookeeper else fault.scenario

    @property
    def zookeeper(self) -> bool:
        return MODE_BY_NAME[self.mode].cluster_mode == "zookeeper"

    def fault_sets(self) -> tuple[str, ...]:
        return FAULT_BY_NAME[self.fault].zookeeper_sets if self.zookeeper else ()

    def overrides(self) -> tuple[str, ...]:
        """The --set changes of the cell's runs: the fault's for the mode, the client's, the profile's."""
        profile = () if self.profile == DEFAULT_PROFILE else (PROFILE_SET.format(profile=self.profile),)
        return (*self.fault_sets(), *CLIENT_BY_NAME[self.client].sets, *profile)

    @classmethod
    def from_key(cls, key: dict) -> Cell:
        return cls(str(key.get("fault")), str(key.get("profile")), str(key.get("client")), str(key.get("mode")))


FULL_GRID: tuple[Cell, ...] = tuple(Cell(*values) for values in itertools.product(*AXES.values()))


def parse_selection(text: str) -> dict[str, tuple[str, ...]]:
    """``AXIS=V[,V...]`` joined by ';' -> the values of each axis (in the grid's order); an axis left out or ``*``:
    all."""
    where = f"--cells {text!r}"
    parts = [p.strip() for p in text.split(";") if p.strip()]
    if not parts:
        raise UserError(f"{where} is empty: write AXIS=VALUE[,VALUE...] joined by ';', e.g. --cells {EXAMPLE}")
    chosen: dict[str, tuple[str, ...]] = {}
    for part in parts:
        axis, sep, values = (s.strip() for s in part.partition("="))
        if not sep:
            raise UserError(f"{where}: {part!r} is not AXIS=VALUES: write e.g. --cells {EXAMPLE}")
        if axis not in AXES:
            raise UserError(f"{where}: no axis {axis!r}: the axes are {', '.join(AXES)}")
        if axis in chosen:
            raise UserError(f"{where}: {axis} is given twice: list its values once, separated by commas")
        names = [v.strip() for v in values.split(",") if v.strip()]
        if not names:
            raise UserError(f"{where}: {axis} has no value: name some of {', '.join(AXES[axis])}, or *")
        unknown = [n for n in names if n != "*" and n not in AXES[axis]]
        if unknown:
            raise UserError(f"{where}: no {axis} {unknown[0]!r}: choose from {', '.join(AXES[axis])}, or *")
        chosen[axis] = AXES[axis] if "*" in names else tuple(v for v in AXES[axis] if v in names)
    return {axis: chosen.get(axis, values) for axis, values in AXES.items()}


def select(selections: tuple[str, ...] | list[str], full: bool = False) -> list[Cell]:
    """The cells the selections pick (the default grid without any, every cell with ``full``), in the grid's order."""
    if full and selections:
        raise UserError("--full and --cells: choose one (--full runs every cell of the grid, --cells a part of it)")
    if full:
        return list(FULL_GRID)
    wanted: set[Cell] = set()
    for text in selections or DEFAULT_SELECTIONS:
        wanted |= {Cell(*values) for values in itertools.product(*parse_selection(text).values())}
    return [c for c in FULL_GRID if c in wanted]


@cache
def phase_seconds(scenario: str, sets: tuple[str, ...], zookeeper: bool) -> float:
    """Warm-up, chaos and recover of a catalog scenario as a run of it in that mode has them (its [zookeeper] table)."""
    file = read_scenario(scenario)
    parsed = file.parse(sets, "zookeeper" if zookeeper and file.applies("zookeeper") else None)
    return parsed.phases.warmup_s + parsed.phases.chaos_s + parsed.phases.recover_s


def run_estimate_s(cell: Cell) -> float:
    """What one run of the cell is expected to take (its scenario's phases and the overheads above)."""
    java = JAVA_CLIENT_EXTRA_S if cell.client == "kafka-java" else 0.0
    return phase_seconds(cell.scenario, cell.fault_sets(), cell.zookeeper) + RUN_OVERHEAD_S + java


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
