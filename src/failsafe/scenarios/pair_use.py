"""Which DR pair a DR scenario runs on: the one at --dir when it fits, otherwise one started for the run (and stopped after)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from failsafe.cluster.lifecycle import Cluster
from failsafe.cluster.pair import ALIASES, PRIMARY, Pair, down_pair, is_pair, up_pair
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir
from failsafe.errors import UserError
from failsafe.scenarios.base import Scenario
from failsafe.scenarios.cluster_use import cluster_facts, misfit, needs_of
from failsafe.supervisor import UP


@contextmanager
def pair_for(root: Path, scenarios: list[Scenario], base_port: int | None, heap: str | None,
             progress: Callable[[str], None]) -> Iterator[tuple[Cluster, dict[str, str]]]:
    """Yield the primary and every cluster's bootstrap servers by alias; stop the pair afterwards only if this run started it."""
    needs = needs_of(scenarios)
    if is_pair(root):
        pair = Pair.open(root)
        primary = pair.cluster(PRIMARY)
        running = [m for m in pair.mirror_status() if m.pid is not None]
        if running:
            # Its Connect group and internal topics are the ones a run's own MirrorMaker uses.
            raise UserError(f"MirrorMaker {running[0].flow.arrow} is running on the pair at {root} (pid {running[0].pid}); a DR scenario "
                            f"runs its own: stop it with 'failsafe mirror stop --dir {root}'")
        for alias in ALIASES:
            reason = misfit(pair.cluster(alias).spec, needs, scenarios)
            if reason:
                raise UserError(f"the {alias} at {root} does not fit: {reason}; run the scenario with another --dir")
        states = {alias: {pair.cluster(alias).node_state(n) for n in pair.cluster(alias).spec.nodes()} for alias in ALIASES}
        if all(s == {UP} for s in states.values()):
            progress(f"using the DR pair running at {root}")
            yield primary, pair.bootstraps()
            return
        if any(UP in s for s in states.values()):
            raise UserError(f"the DR pair at {root} is not whole: start it with 'failsafe up --dir {root}' or stop it with 'failsafe down'")
        spec = primary.spec
    elif ClusterDir(root).has_state():
        raise UserError(f"{root} holds one cluster and a DR scenario needs two: pass another --dir (the run starts a pair there), "
                        "or make one with 'failsafe up --dr'")
    else:
        spec = ClusterSpec(brokers=needs.brokers, controllers=needs.controllers, overrides=dict(needs.overrides),
                           **({"base_port": base_port} if base_port is not None else {}), **({"heap": heap} if heap else {}))
    progress(f"starting a DR pair of {spec.brokers}-broker clusters in {root} for the run")
    pair = up_pair(root, spec, set(), progress=progress)
    try:
        yield pair.cluster(PRIMARY), pair.bootstraps()
    finally:
        progress(f"stopping the DR pair this run started at {root}")
        down_pair(root)


def pair_facts(root: Path) -> dict[str, Any]:
    """The pair's part of a run's manifest.json: each cluster's facts by alias."""
    pair = Pair.open(root)
    return {"dr_pair": {alias: cluster_facts(pair.cluster(alias)) for alias in ALIASES}}
