"""Where scenarios run: the topology at --dir (one cluster, or a DR pair) when it fits them, otherwise one started for
the run.

A kind says where its scenarios run (``ScenarioKind.placement``); everything else is the same for a
lone cluster and a DR pair, through cluster/topology/directory.py's one interface: open what is at --dir,
check that each of its clusters fits what the scenarios need (``misfit``, including each fault
type's own ``fits``), use it when every node is up, restart it when it is stopped, or make one for
the run; and stop what the run started, after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from failsafe.cluster.profiles import DEFAULT_PROFILE, broker_settings, spec_fields
from failsafe.cluster.spec import KRAFT_MODE, ZOOKEEPER_MODE, ClusterSpec
from failsafe.cluster.topology import lifecycle
from failsafe.cluster.topology.directory import SingleCluster, Topology, TopologyKind, find_topology
from failsafe.cluster.topology.lifecycle import DEFAULT_READY_TIMEOUT_S
from failsafe.cluster.topology.pair import Pair
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES
from failsafe.scenarios.base import ClusterNeeds, Scenario

Progress = Callable[[str], None]
RUNS_DIR = "runs"  # a run's directories under the cluster directory, unless --runs says elsewhere (cli/lab.py)


def needs_of(scenarios: list[Scenario], mode: str | None = None) -> ClusterNeeds:
    """What one cluster for all of ``scenarios`` needs; ``mode`` is --mode (None: the scenarios', else KRaft)."""
    modes = sorted({s.cluster.mode for s in scenarios if s.cluster.mode})
    if len(modes) > 1:
        raise UserError(
            f"these scenarios need clusters of different modes ({' and '.join(modes)}): run them separately"
        )
    if mode and modes and modes[0] != mode:
        names = ", ".join(s.name for s in scenarios if s.cluster.mode == modes[0])
        raise UserError(f"{names} runs in {modes[0]} mode only: drop --mode {mode}")
    versions = sorted({s.cluster.kafka_version for s in scenarios if s.cluster.kafka_version})
    if len(versions) > 1:
        raise UserError(
            f"these scenarios need clusters of different Kafka releases ({' and '.join(versions)}): run them separately"
        )
    securities = sorted({s.cluster.security for s in scenarios if s.cluster.security})
    if len(securities) > 1:
        raise UserError(
            f"these scenarios need clusters in different security modes ({' and '.join(securities)}): run them "
            "separately"
        )
    profiles = sorted({s.cluster.profile for s in scenarios if s.cluster.profile})
    if len(profiles) > 1:
        raise UserError(
            f"these scenarios need clusters of different profiles ({' and '.join(profiles)}): run them separately"
        )
    overrides: dict[str, str] = {}
    features: dict[str, str] = {}
    # What the scenarios' fault types need of the cluster (protocol faults: proxies), said by the scenario or not.
    fault_needs = {need for s in scenarios for f in s.faults for need in FAULT_TYPES[f.fault].cluster_needs}
    for s in scenarios:
        for wanted, got in ((s.cluster.overrides, overrides), (s.cluster.features, features)):
            for key, value in wanted.items():
                if got.setdefault(key, value) != value:
                    raise UserError(
                        f"these scenarios need {key} set to both {got[key]} and {value}: run them separately"
                    )
    return ClusterNeeds(
        brokers=max(s.cluster.brokers for s in scenarios),
        controllers=max(s.cluster.controllers for s in scenarios),
        combined=all(s.cluster.combined for s in scenarios),
        mode=mode or (modes[0] if modes else ""),
        racks=max(s.cluster.racks for s in scenarios),
        volatile_disks=any(s.cluster.volatile_disks for s in scenarios) or "volatile_disks" in fault_needs,
        protocol_proxy=any(s.cluster.protocol_proxy for s in scenarios) or "protocol_proxy" in fault_needs,
        clock_faults=any(s.cluster.clock_faults for s in scenarios) or "clock_faults" in fault_needs,
        tiered_storage=any(s.cluster.tiered_storage for s in scenarios)
        or "tiered_storage" in fault_needs
        # A topic tiered by its own settings needs a remote store.
        or any(t.configs.get("remote.storage.enable") == "true" for s in scenarios for t in getattr(s, "topics", ())),
        features=features,
        overrides=overrides,
        profile=profiles[0] if profiles else "",
        security=securities[0] if securities else "",
        kafka_version=versions[0] if versions else "",
        delete_after=any(s.cluster.delete_after for s in scenarios),
        dynamic_quorum=any(s.cluster.dynamic_quorum for s in scenarios),
        adds_brokers=max(s.cluster.adds_brokers for s in scenarios),
    )


def misfit(spec: ClusterSpec, needs: ClusterNeeds, scenarios: list[Scenario]) -> str | None:
    """Why a cluster of ``spec`` cannot run the scenarios, or None."""
    if spec.brokers < needs.brokers:
        return f"it has {spec.brokers} brokers and the scenario needs {needs.brokers}"
    if needs.adds_brokers and spec.brokers != needs.brokers:
        return (
            f"it has {spec.brokers} brokers and the scenario adds {needs.adds_brokers} to exactly {needs.brokers} "
            "(its faults name the added ones by id)"
        )
    if needs.mode and spec.mode != needs.mode:
        return f"it runs in {spec.mode} mode and the run asks for {needs.mode} mode"
    if needs.dynamic_quorum and not spec.dynamic_quorum:
        return "its controller quorum is static and the scenario changes its voters (failsafe up --dynamic-quorum)"
    if needs.kafka_version and spec.kafka_version != needs.kafka_version:
        return (
            f"it runs Kafka {spec.kafka_version} and the scenario starts from {needs.kafka_version} (failsafe up "
            f"--kafka-version {needs.kafka_version})"
        )
    controllers = spec.controllers - len(spec.retired_controllers)  # a dynamic quorum's removed ones are no node
    if needs.mode != ZOOKEEPER_MODE and spec.mode == KRAFT_MODE and controllers < needs.controllers:
        return f"it has {controllers} controllers and the scenario needs {needs.controllers}"
    if needs.racks and spec.racks != needs.racks:
        return (
            f"it has {spec.racks or 'no'} racks and the scenario needs {needs.racks} (failsafe up --racks "
            f"{needs.racks})"
        )
    if needs.protocol_proxy and not spec.protocol_proxy:
        return (
            "its brokers have no protocol proxy and the scenario's faults act through one (failsafe up "
            "--protocol-proxy)"
        )
    if needs.clock_faults and not spec.clock_faults:
        return (
            "its nodes' clocks cannot be set apart, and the scenario's faults set them apart (failsafe up "
            "--clock-faults)"
        )
    if needs.tiered_storage and not spec.tiered_storage:
        return (
            "it has no remote store and the scenario's topics or faults need tiered storage (failsafe up "
            "--tiered-storage)"
        )
    if needs.volatile_disks and not spec.volatile_disks:
        return (
            "its data directories are on plain disks and the scenario's disk faults need disk layers (failsafe up "
            "--volatile-disks)"
        )
    if needs.security and spec.security != needs.security:
        return (
            f"its listeners are {spec.security} and the scenario needs {needs.security} (failsafe up --security "
            f"{needs.security})"
        )
    if needs.profile and spec.profile != needs.profile:
        return (
            f"it runs with profile {spec.profile} and the scenario asks for profile {needs.profile} (failsafe up "
            f"--profile {needs.profile})"
        )
    try:
        # Its topic and client settings go to the run: they must be those of the version its brokers run.
        settings = broker_settings(spec)
    except UserError as e:
        return str(e)
    unlike = {k: v for k, v in needs.features.items() if spec.features.get(k) != v}
    if unlike:
        return (
            "it was made without the feature level "
            + ", ".join(f"{k}={v}" for k, v in unlike.items())
            + " (failsafe up "
            + " ".join(f"--feature {k}={v}" for k, v in unlike.items())
            + ")"
        )
    missing = {k: v for k, v in needs.overrides.items() if settings.get(k) != v}
    if missing:
        return (
            "it was started without "
            + ", ".join(f"{k}={v}" for k, v in missing.items())
            + " (failsafe up "
            + " ".join(f"--override {k}={v}" for k, v in missing.items())
            + ")"
        )
    # What a fault of the scenarios cannot do on this cluster (its type says: quorum-loss on a combined cluster).
    return next((why for s in scenarios for f in s.faults if (why := FAULT_TYPES[f.fault].fits(spec))), None)


def spec_for(needs: ClusterNeeds, base_port: int | None, heap: str | None, zookeeper_port: int | None) -> ClusterSpec:
    """The spec of a cluster the run starts for ``needs``."""
    fields = {
        "brokers": needs.brokers,
        "overrides": dict(needs.overrides),
        "volatile_disks": needs.volatile_disks,
        **({"protocol_proxy": True} if needs.protocol_proxy else {}),
        **({"clock_faults": True} if needs.clock_faults else {}),
        **({"tiered_storage": True} if needs.tiered_storage else {}),
        **({"security": needs.security} if needs.security else {}),
        **spec_fields(needs.profile or DEFAULT_PROFILE),
        **({"features": dict(needs.features)} if needs.features else {}),
        **({"base_port": base_port} if base_port is not None else {}),
        **({"heap": heap} if heap else {}),
        **({"kafka_version": needs.kafka_version} if needs.kafka_version else {}),
        **({"dynamic_quorum": True} if needs.dynamic_quorum else {}),
    }
    if needs.mode == ZOOKEEPER_MODE:
        return ClusterSpec.zookeeper_mode(
            **fields, **({"zookeeper_base_port": zookeeper_port} if zookeeper_port else {})
        )
    return ClusterSpec(controllers=needs.controllers, combined=needs.combined, racks=needs.racks, **fields)


@contextmanager
def placed(
    root: Path,
    scenarios: list[Scenario],
    pair: bool,
    base_port: int | None,
    heap: str | None,
    progress: Progress,
    mode: str | None = None,
    zookeeper_port: int | None = None,
    spec: ClusterSpec | None = None,
    clean: bool = False,
    delete_after: bool = False,
) -> Iterator[Topology]:
    """Yield a ready topology at ``root`` (a DR pair when ``pair``); stop it afterwards only if this run started it.

    ``spec``: start a cluster of that spec (the atlas's, made for a whole group of cells), where ``root`` holds none.
    ``clean``: delete what this run started after it, rather than stop it; ``delete_after``: the same for a scenario
    that leaves the cluster changed for good, keeping ``root/runs`` (where its run directories go by default)."""
    wanted: TopologyKind = Pair if pair else SingleCluster  # type: ignore[assignment]
    existing = find_topology(root)
    if spec is not None:
        if existing is not None:
            raise UserError(f"{root} holds a {existing.noun}: a cluster of a given spec starts in an empty directory")
        controllers = f", {spec.controllers} controllers" if spec.mode == KRAFT_MODE else ""
        progress(
            f"starting a {spec.brokers}-broker {spec.mode} cluster (Kafka {spec.kafka_version}{controllers}) in {root}"
        )
    elif existing is not None:
        needs = needs_of(scenarios, mode)
        if existing.noun != wanted.noun:
            raise UserError(
                f"{root} holds a {existing.noun} and these scenarios run on a {wanted.noun}: pass another --dir "
                f"(the run starts one there){', or make one with failsafe up --dr' if pair else ''}"
            )
        for alias, cluster in existing.clusters().items():
            reason = misfit(cluster.spec, needs, scenarios)
            if reason:
                raise UserError(f"the {alias} at {root} does not fit: {reason}; run the scenario with another --dir")
        mirrors = [m for m in existing.status().mirrors if m.pid is not None]
        if mirrors:
            # Its Connect group and internal topics are the ones a run's own MirrorMaker uses.
            raise UserError(
                f"MirrorMaker {mirrors[0].flow.arrow} is running at {root} (pid {mirrors[0].pid}); a DR scenario "
                f"runs its own: stop it with 'failsafe mirror stop --dir {root}'"
            )
        if existing.running():
            not_up = existing.not_up()
            if not_up:
                raise UserError(
                    f"the {existing.noun} at {root} is not whole ({', '.join(not_up)}): start or resume those nodes "
                    f"('failsafe up --dir {root}'), or stop it ('failsafe down'); a scenario needs every node up"
                )
            progress(f"using the {existing.noun} running at {root} ({', '.join(existing.bootstraps().values())})")
            yield existing
            return
        progress(f"restarting the stopped {existing.noun} at {root}")
        spec = existing.fault_target.spec
    else:
        spec = spec_for(needs_of(scenarios, mode), base_port, heap, zookeeper_port)
        progress(
            f"starting a {wanted.noun} of {spec.brokers}-broker {spec.mode} clusters in {root} for the run"
            if pair
            else f"starting a {spec.brokers}-broker {spec.mode} cluster in {root} for the run"
        )
    topology: Topology | None = None
    try:
        topology = wanted.up(root, spec, set(), DEFAULT_READY_TIMEOUT_S, progress)
        yield topology
    finally:
        if clean:
            leftover = topology if topology is not None else find_topology(root)
            if leftover is not None:
                progress(f"stopping and deleting the {wanted.noun} this run started at {root}")
                leftover.clean()
        elif delete_after and not pair and find_topology(root) is not None:
            # The run changed the cluster for good (upgraded and finalized): deleted, its runs/ beside it kept.
            progress(f"stopping and deleting the {wanted.noun} this run started at {root} (its runs are kept)")
            lifecycle.clean(root, keep=(RUNS_DIR,))
        elif topology is not None:
            progress(f"stopping the {wanted.noun} this run started at {root}")
            topology.down()
