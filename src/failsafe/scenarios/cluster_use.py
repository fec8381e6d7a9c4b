"""Which cluster a scenario runs on: the one running at --dir when it fits, otherwise one started for the run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from failsafe.cluster import lifecycle
from failsafe.cluster.lifecycle import DEFAULT_READY_TIMEOUT_S, Cluster
from failsafe.cluster.spec import KRAFT_MODE, ZOOKEEPER_MODE, ClusterSpec
from failsafe.cluster.state import ClusterDir
from failsafe.dist.java import find_java
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES
from failsafe.scenarios.base import ClusterNeeds, Scenario
from failsafe.supervisor import UP


def needs_of(scenarios: list[Scenario], mode: str | None = None) -> ClusterNeeds:
    """What one cluster for all of ``scenarios`` needs; ``mode`` is --mode (None: the scenarios', else KRaft)."""
    modes = sorted({s.cluster.mode for s in scenarios if s.cluster.mode})
    if len(modes) > 1:
        raise UserError(f"these scenarios need clusters of different modes ({' and '.join(modes)}): run them separately")
    if mode and modes and modes[0] != mode:
        names = ", ".join(s.name for s in scenarios if s.cluster.mode == modes[0])
        raise UserError(f"{names} runs in {modes[0]} mode only: drop --mode {mode}")
    overrides: dict[str, str] = {}
    for s in scenarios:
        for key, value in s.cluster.overrides.items():
            if overrides.setdefault(key, value) != value:
                raise UserError(f"these scenarios need {key} set to both {overrides[key]} and {value}: run them separately")
    return ClusterNeeds(
        brokers=max(s.cluster.brokers for s in scenarios),
        controllers=max(s.cluster.controllers for s in scenarios),
        combined=all(s.cluster.combined for s in scenarios),
        mode=mode or (modes[0] if modes else ""),
        racks=max(s.cluster.racks for s in scenarios),
        overrides=overrides,
    )


def misfit(spec: ClusterSpec, needs: ClusterNeeds, scenarios: list[Scenario]) -> str | None:
    if spec.brokers < needs.brokers:
        return f"it has {spec.brokers} brokers and the scenario needs {needs.brokers}"
    if needs.mode and spec.mode != needs.mode:
        return f"it runs in {spec.mode} mode and the run asks for {needs.mode} mode"
    if needs.mode != ZOOKEEPER_MODE and spec.mode == KRAFT_MODE and spec.controllers < needs.controllers:
        return f"it has {spec.controllers} controllers and the scenario needs {needs.controllers}"
    if needs.racks and spec.racks != needs.racks:
        return f"it has {spec.racks or 'no'} racks and the scenario needs {needs.racks} (failsafe up --racks {needs.racks})"
    missing = {k: v for k, v in needs.overrides.items() if spec.overrides.get(k) != v}
    if missing:
        return ("it was started without " + ", ".join(f"{k}={v}" for k, v in missing.items())
                + " (failsafe up " + " ".join(f"--override {k}={v}" for k, v in missing.items()) + ")")
    # What a fault of the scenarios cannot be done on this cluster (its type says: quorum-loss on a combined cluster).
    return next((why for s in scenarios for f in s.faults if (why := FAULT_TYPES[f.fault].fits(spec))), None)


@contextmanager
def cluster_for(root: Path, scenarios: list[Scenario], base_port: int | None, heap: str | None,
                progress: Callable[[str], None], mode: str | None = None, zookeeper_port: int | None = None) -> Iterator[Cluster]:
    """Yield a ready cluster at ``root``; stop it afterwards only if this run started it."""
    needs = needs_of(scenarios, mode)
    cdir = ClusterDir(root)
    if cdir.has_state():
        cluster = Cluster.open(root)
        reason = misfit(cluster.spec, needs, scenarios)
        if reason:
            raise UserError(f"the cluster at {root} does not fit: {reason}; run the scenario with another --dir")
        running = cluster.running_nodes()
        if running:
            not_up = [n for n in cluster.spec.nodes() if cluster.node_state(n) != UP]
            if not_up:
                raise UserError(f"the cluster at {root} is not whole ({', '.join(f'{n.role} {n.node_id} is {cluster.node_state(n)}' for n in not_up)}): "
                                f"start or resume those nodes first, a scenario needs every node up")
            progress(f"using the cluster running at {root} ({cluster.bootstrap_servers})")
            yield cluster
            return
        progress(f"restarting the stopped cluster at {root}")
        cluster = lifecycle.up(root, cluster.spec, set(), DEFAULT_READY_TIMEOUT_S, progress)
    else:
        fields = {"brokers": needs.brokers, "overrides": dict(needs.overrides), **({"base_port": base_port} if base_port is not None else {}),
                  **({"heap": heap} if heap else {})}
        if needs.mode == ZOOKEEPER_MODE:
            spec = ClusterSpec.zookeeper_mode(**fields, **({"zookeeper_base_port": zookeeper_port} if zookeeper_port else {}))
        else:
            spec = ClusterSpec(controllers=needs.controllers, combined=needs.combined, racks=needs.racks, **fields)
        progress(f"starting a {spec.brokers}-broker {spec.mode} cluster in {root} for the run")
        cluster = lifecycle.up(root, spec, set(), DEFAULT_READY_TIMEOUT_S, progress)
    try:
        yield cluster
    finally:
        progress(f"stopping the cluster this run started at {root}")
        lifecycle.down(root)


def cluster_facts(cluster: Cluster) -> dict[str, Any]:
    """The cluster's part of a run's manifest.json."""
    java = find_java()
    spec = cluster.spec
    return {
        "kafka_version": spec.kafka_version,
        "java": {"executable": str(java.executable), "major": java.major},
        "cluster_dir": str(cluster.dir.root.resolve()),
        "bootstrap_servers": cluster.bootstrap_servers,
        "cluster": spec.to_json(),
        "nodes": [{"id": n.node_id, "roles": list(n.roles), "port": n.port, "controller_port": n.controller_port} for n in spec.nodes()],
    }
