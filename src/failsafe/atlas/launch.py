"""The atlas's real clusters and runs: one cluster at a time at the atlas's cluster directory, each run in-process
through the code 'failsafe run' uses (scenarios/engine/runs.py's run_and_judge, then require_whole between runs).

Before anything starts, ``prepare`` parses every cell's scenario with its --set changes (for its mode's table, as
'failsafe run --mode' does), works out each group's cluster from what the scenarios of its mode and profile need
together in the whole grid (in KRaft three controllers: controller-kill needs them), whichever cells are selected,
with the mode's Kafka release, checks that the scenarios fit it and that the release is set up: a cell that cannot
run is one line and exit 2 with nothing started. The cluster directory is
the atlas's own: each group's cluster is made there and deleted after (Ctrl-C and errors too; a crash of failsafe
leaves a cluster the next invocation deletes first, as the marker OUT/cluster-in-use.json says it may). A failsafe
cluster there that the atlas did not make is refused.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from failsafe.atlas.grid import FULL_GRID, MODE_BY_NAME, Cell
from failsafe.atlas.runner import Group, RunOutcome
from failsafe.campaigns.runner import RUN_ERRORS
from failsafe.cluster.site import RunSite, SiteOptions
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir
from failsafe.cluster.topology.directory import find_topology
from failsafe.errors import ClusterNotWhole, UserError
from failsafe.jvm.kafka import kafka_dist
from failsafe.scenarios.base import Scenario, ScenarioError
from failsafe.scenarios.engine.core import require_whole
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.engine.runs import run_and_judge
from failsafe.scenarios.engine.sites import open_site
from failsafe.scenarios.registry import read_scenario
from failsafe.scenarios.store.rundir import RunDir

MARKER = "cluster-in-use.json"


def parse_cell(cell: Cell) -> Scenario:
    """The cell's scenario with its --set changes, for its mode (its [zookeeper] table in ZooKeeper mode)."""
    file = read_scenario(cell.scenario)
    mode = MODE_BY_NAME[cell.mode].cluster_mode
    try:
        return file.parse(cell.overrides(), mode if file.applies(mode) else None)
    except ScenarioError as e:
        raise UserError(
            f"cell {cell.label}: {cell.scenario} with {' '.join(cell.overrides()) or 'no --set'}: {e}"
        ) from e


class KafkaLauncher:
    def __init__(
        self,
        root: Path,
        out: Path,
        heap: str | None,
        base_port: int | None,
        event: Callable[[str], None],
        status: Callable[[str], None],
        inventory: Any = None,
    ) -> None:
        self.inventory = (
            inventory  # hosts.toml's hosts (hosts/inventory.py): each group's cluster made on them, over SSH
        )
        self.root = Path(root)
        self.out = Path(out)
        self.heap = heap
        self.base_port = base_port
        self.event = event
        self.status = status
        self.scenarios: dict[Cell, Scenario] = {}
        self.specs: dict[Group, ClusterSpec] = {}

    def spec(self, group: Group) -> ClusterSpec:
        """The group's cluster: what the scenarios of every cell of its mode and profile in the whole grid need
        together, so a cell's runs get the same cluster whichever cells are selected beside it; the mode's Kafka
        release."""
        mode = MODE_BY_NAME[group.mode]
        scenarios = []
        for cell in (c for c in FULL_GRID if c.mode == group.mode and c.profile == group.profile):
            if cell not in self.scenarios:
                self.scenarios[cell] = parse_cell(cell)
            scenarios.append(self.scenarios[cell])
        needs = needs_of(scenarios, mode.cluster_mode)
        spec = dataclasses.replace(spec_for(needs, self.base_port, self.heap, None), kafka_version=mode.kafka_version)
        if self.inventory is not None:
            from failsafe.cluster.nodes.hosts import place

            spec = dataclasses.replace(spec, placement=place(spec, self.inventory))
        try:
            spec.validate()
        except UserError as e:
            raise UserError(f"the {group.label} cluster: {e}") from e
        reason = misfit(spec, needs, scenarios)
        if reason:
            raise UserError(f"the {group.label} cluster cannot run its cells: {reason}")
        return spec

    def prepare(self, groups: list[Group]) -> None:
        """Parse every cell of the groups' modes and profiles and work out each group's cluster, check that each mode's
        Kafka is set up and that the cluster directory is free: before anything starts."""
        for group in groups:
            self.specs[group] = self.spec(group)
            kafka_dist(self.specs[group].kafka_version)
        self._free_the_directory()

    def _free_the_directory(self) -> None:
        existing = find_topology(self.root)
        if existing is None:
            return
        marker = self.out / MARKER
        if _marked_root(marker) != str(self.root.resolve()):
            raise UserError(
                f"{self.root} holds a failsafe {existing.noun} the atlas did not make; the atlas makes and deletes a "
                "cluster of its own there for each mode and profile: pass another --dir (default: OUT/cluster)"
            )
        self.event(f"deleting the cluster a stopped atlas left at {self.root}")
        existing.clean()
        marker.unlink(missing_ok=True)

    @contextmanager
    def cluster(self, group: Group) -> Iterator[KafkaSession]:
        """The group's cluster, opened as every run opens its site (scenarios/engine/sites.py) and deleted after."""
        spec = self.specs[group]
        marker = self.out / MARKER
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"root": str(self.root.resolve()), "group": group.label}) + "\n")
        if self.inventory is not None:
            from failsafe.cluster.nodes.hosts import save_inventory

            save_inventory(ClusterDir(self.root), self.inventory)
        scenarios = [self.scenarios[cell] for cell in group.cells]
        options = SiteOptions(spec=spec, clean=True)
        try:
            with open_site(scenarios, self.root, self.event, options) as (site, _, facts):
                yield KafkaSession(site, facts, self.scenarios, self.event, self.status)
        finally:
            marker.unlink(missing_ok=True)


def _marked_root(marker: Path) -> str | None:
    """The cluster directory the marker says an atlas of OUT was using, or None."""
    try:
        data = json.loads(marker.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return str(data.get("root")) if isinstance(data, dict) else None


class KafkaSession:
    def __init__(
        self,
        site: RunSite,
        facts: dict[str, Any],
        scenarios: dict[Cell, Scenario],
        event: Callable[[str], None],
        status: Callable[[str], None],
    ) -> None:
        self.cluster = site
        self.facts = facts
        self.scenarios = scenarios
        self.event = event
        self.status = status

    def run(self, cell: Cell, runs_root: Path) -> RunOutcome:
        scenario = self.scenarios[cell]
        run_dir = RunDir.create(runs_root, scenario)
        begun = time.monotonic()
        facts = {**self.facts, "overrides": list(cell.overrides())}
        try:
            outcome = run_and_judge(
                scenario,
                self.cluster,
                run_dir,
                kafka_version=self.cluster.spec.kafka_version,
                facts=facts,
                clusters={},
                status=self.status,
                event=self.event,
            )
        except RUN_ERRORS as e:
            # As a campaign: the run is kept as not carried out and the cell goes on (a resumed atlas runs it again).
            return RunOutcome(
                run_dir.path,
                None,
                time.monotonic() - begun,
                error=f"{type(e).__name__}: {e}",
                broken=self._broken(scenario),
            )
        return RunOutcome(run_dir.path, outcome.results, outcome.wall_s, broken=self._broken(scenario))

    def _broken(self, scenario: Scenario) -> str | None:
        try:
            require_whole(self.cluster, after=scenario.name)
        except ClusterNotWhole as e:
            return str(e)
        return None
