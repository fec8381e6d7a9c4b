"""Opening the site a run takes place on: the one entry 'failsafe run', 'failsafe campaign', 'failsafe shrink' and
'failsafe atlas' use.

``open_site`` yields the run site (cluster/site.py: the cluster the engine drives and the faults act on), every
cluster's bootstrap by alias (a DR pair: primary and backup; else none) and the manifest's facts. It places the
scenarios on the topology at --dir when it fits them, otherwise on one started for the run
(scenarios/engine/placement.py), or on a cluster failsafe did not start (``attach``); and it refuses, in one line and
before any run, what the site cannot do for them: a network fault where rules cannot be made, a client on a host the
site does not have."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from failsafe.cluster.site import RunSite, SiteOptions
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES
from failsafe.history.ops import Family
from failsafe.hosts.inventory import Inventory
from failsafe.scenarios.base import Scenario

Event = Callable[[str], None]
DEFAULTS = SiteOptions()


@contextmanager
def open_site(
    scenarios: list[Scenario],
    root: Path,
    event: Event,
    options: SiteOptions = DEFAULTS,
    *,
    attach: str | None = None,
    inventory: Inventory | None = None,
    client_config: Path | None = None,
) -> Iterator[tuple[RunSite, dict[str, str], dict[str, Any]]]:
    """(site, bootstraps by alias, facts) for ``scenarios``: the cluster at ``attach`` when given (reached with the
    settings of ``client_config``, a client properties file), else the topology at ``root`` (or one started there for
    the run, stopped after it)."""
    with (
        _attached(scenarios, attach, root, inventory, event, client_config)
        if attach
        else _placed(scenarios, root, options, event)
    ) as opened:
        yield opened


@contextmanager
def _placed(
    scenarios: list[Scenario], root: Path, options: SiteOptions, event: Event
) -> Iterator[tuple[RunSite, dict[str, str], dict[str, Any]]]:
    """On the topology the scenarios' kinds place them on (all on one: a mix is one clear line)."""
    from failsafe.cluster.observe.status import cluster_facts
    from failsafe.cluster.state import run_lock
    from failsafe.scenarios.engine.placement import placed
    from failsafe.scenarios.kinds import Placement, kind_of

    placements: dict[str, list[str]] = {}
    for s in scenarios:
        placements.setdefault(kind_of(s).placement, []).append(s.name)
    if len(placements) > 1:
        raise UserError(
            "these scenarios run on different topologies ("
            + "; ".join(f"{', '.join(n)} on a {p}" for p, n in placements.items())
            + "): run them separately"
        )
    pair = Placement.DR_PAIR in placements
    with (
        run_lock(root),
        placed(
            root,
            scenarios,
            pair,
            options.base_port,
            options.heap,
            event,
            options.mode,
            options.zookeeper_port,
            spec=options.spec,
            clean=options.clean,
            # A scenario that leaves the cluster changed for good (upgraded, finalized): the one it starts is deleted.
            delete_after=any(s.cluster.delete_after for s in scenarios),
        ) as topology,
    ):
        site: RunSite = topology.fault_target
        if any(FAULT_TYPES[f.fault].family == Family.NETWORK for s in scenarios for f in s.faults):
            site.net_ready()  # a machine or host without root or nft refuses the run now, in one line naming it
        _check_client_hosts(scenarios, site)
        yield site, (topology.bootstraps() if pair else {}), {**cluster_facts(site), **topology.facts()}


@contextmanager
def _attached(
    scenarios: list[Scenario],
    bootstrap: str,
    root: Path,
    inventory: Inventory | None,
    event: Event,
    client_config: Path | None = None,
) -> Iterator[tuple[RunSite, dict[str, str], dict[str, Any]]]:
    """A cluster failsafe did not start (cluster/topology/attached.py): refused up front if a scenario's fault cannot be
    made on it."""
    from failsafe.cluster.security.secured import attach_clients
    from failsafe.cluster.topology.attached import AttachedCluster, refusal
    from failsafe.scenarios.engine.actions import created_topics
    from failsafe.tools.admin import check_access
    from failsafe.tools.connections import register

    faults = [(s.name, f.fault, str(FAULT_TYPES[f.fault].family)) for s in scenarios for f in s.faults]
    why = refusal(faults, inventory, bootstrap)
    placed = [(s.name, host) for s in scenarios for host in _client_hosts(s).values()]
    if placed and not why:
        why = f"a client of {placed[0][0]} runs on host {placed[0][1]}: with --attach, clients run where failsafe runs"
    if why:
        raise UserError(why)
    # Every client of the run reaches the cluster with the user's settings (cluster/security/secured.py), checked
    # against the cluster itself before anything is made on it: a refusal is one line (exit 2).
    servers = [s.strip() for s in bootstrap.split(",")]
    security = attach_clients(root, client_config, servers) if client_config else None
    if security is None:
        register(servers, None)  # plaintext, whatever this process reached at these addresses before
    check_access(bootstrap)
    cluster = AttachedCluster(bootstrap, root, inventory)
    if security is not None:
        attach_clients(root, client_config, [*servers, *(f"{b.host}:{b.port}" for b in cluster.brokers.values())])
    theirs = cluster.topics() & {
        n for s in scenarios for n in (*(t.name for t in getattr(s, "topics", ())), *created_topics(s))
    }
    if theirs:
        # A scenario deletes an earlier run's topics before it starts: on a cluster failsafe did not start, that could
        # be yours.
        raise UserError(
            f"the cluster at {bootstrap} has a topic named {sorted(theirs)[0]}, which a scenario here makes anew: "
            "failsafe deletes no topic it did not make: delete it yourself if it is an earlier run's, or run a copy "
            "of the scenario whose topics have other names"
        )
    event(
        f"attached to the cluster at {bootstrap}: brokers {', '.join(str(i) for i in sorted(cluster.brokers))} "
        "(nothing of it is changed but the scenarios' topics)"
    )
    try:
        yield (
            cluster,
            {},
            {
                "attached": bootstrap,
                "bootstrap_servers": bootstrap,
                **({"client_security": security.described()} if security else {}),
                "cluster": cluster.spec.to_json(),
                "brokers": [{"id": b.node_id, "host": b.host, "port": b.port} for b in cluster.brokers.values()],
                **({"inventory": inventory.to_json()} if inventory else {}),
            },
        )
    finally:
        cluster.close()


def _client_hosts(scenario: Scenario) -> dict[str, str]:
    """The clients a scenario places on hosts, by name (a lab kind's ``host``; other kinds place none)."""
    return scenario.client_hosts() if hasattr(scenario, "client_hosts") else {}


def _check_client_hosts(scenarios: list[Scenario], site: RunSite) -> None:
    """Each client host is one the site has, and no fault of its scenario cuts the clients' links (those rules go where
    failsafe runs): one line now, not mid-run."""
    from failsafe.faults.network import cuts_clients

    for s in scenarios:
        hosts = _client_hosts(s)
        if not hosts:
            continue
        host = next(iter(hosts.values()))
        cutting = next((f.fault for f in s.faults if cuts_clients(f)), None)
        if cutting:
            raise UserError(
                f"{s.name}: a client runs on host {host!r}, and its {cutting} fault cuts the clients' links, which "
                "failsafe cuts where it runs: run that scenario's clients here"
            )
        for name in hosts.values():
            try:
                site.check_client_host(name)
            except UserError as e:
                raise UserError(f"{s.name}: {e}") from e
