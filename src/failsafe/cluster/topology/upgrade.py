"""A rolling upgrade of a KRaft cluster's Kafka release, one node at a time, and its rollback before finalizing.

Kafka's upgrade notes (docs/getting-started/upgrade.md) say: the servers one at a time, then the features finalized;
they do not order controllers and brokers, and this follows Confluent's KRaft guidance, controllers first:

1. roll   each node in turn: a controlled shutdown (SIGTERM), started again on the new release's jars, and waited on
          until it is ready (a broker registered, no partition under-replicated); controllers first, the active one
          last, then the brokers. Until step 2 the cluster keeps its metadata.version, so the old release can still
          run it: rolling the nodes back to the old release is the rollback (``Upgrade(..., to=OLD)``).
2. finalize  ``kafka-features upgrade --release-version X.Y`` with the new release's tool: metadata.version and the
          other features move to the new release's defaults; after that the old release cannot read the metadata.

Each step is a window in a run's history (family ``upgrade``, the ``roll`` of a node or the ``finalize``), so the
checkers measure each partition's unavailability during each roll, as for the live migration's rolls. The nodes'
releases are kept in the cluster's state file while the upgrade is under way (ClusterState.node_versions), so a
stopped cluster starts again on the releases its nodes had.
"""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Callable
from dataclasses import dataclass

from failsafe.cluster.nodes.control import LocalNodes
from failsafe.cluster.observe.readiness import under_replicated
from failsafe.cluster.spec import KRAFT_MODE, NodeSpec
from failsafe.cluster.state import ClusterState
from failsafe.cluster.topology.lifecycle import DEFAULT_STOP_TIMEOUT_S, Cluster
from failsafe.errors import FailsafeError, UserError
from failsafe.history.ops import UPGRADE_FINALIZE, UPGRADE_ROLL
from failsafe.jvm.kafka import check_supported, kafka_dist
from failsafe.supervisor import UP
from failsafe.tools.kafka_tools import finalized_features, upgrade_release
from failsafe.waiting import WaitTimeout, wait_until

STEP_TIMEOUT_S = 180.0


class UpgradeFailed(FailsafeError):
    """A step of the upgrade failed; the message names it and what the cluster runs now."""


@dataclass(frozen=True)
class Step:
    """One step: its kind (UPGRADE_ROLL or UPGRADE_FINALIZE), what it does, and the node it rolls."""

    kind: str
    description: str
    node: NodeSpec | None = None


StepStarted = Callable[[Step], None]
StepDone = Callable[[Step, bool, str | None], None]


def release_of(version: str) -> str:
    """The ``--release-version`` a Kafka release finalizes as: its major and minor (4.4.0 -> 4.4)."""
    return ".".join(version.split(".")[:2])


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def roll_order(cluster: Cluster) -> list[NodeSpec]:
    """Controllers first (the active one last, so the quorum elects once), then brokers; combined nodes with the
    brokers."""
    nodes = [n for n in cluster.spec.nodes() if not n.is_zookeeper]
    active = cluster.active_controller()
    controllers = [n for n in nodes if n.is_controller and not n.is_broker]
    controllers.sort(key=lambda n: n.node_id == active)
    return controllers + [n for n in nodes if n.is_broker]


class Upgrade:
    """Roll every node of ``cluster`` that does not run ``to`` onto it, then finalize when ``finalize``."""

    def __init__(
        self,
        cluster: Cluster,
        to: str,
        finalize: bool = True,
        progress: Callable[[str], None] = lambda _: None,
        step_timeout_s: float = STEP_TIMEOUT_S,
    ) -> None:
        self.cluster = cluster
        self.to = to
        self.finalize = finalize
        self.progress = progress
        self.step_timeout_s = step_timeout_s
        # The features finalizing changed: feature -> (level before, level after).
        self.changed: dict[str, tuple[str, str]] = {}
        self.check()

    def check(self) -> None:
        """Refuse, in one line, what Kafka or failsafe cannot do, before any node stops."""
        cluster, to = self.cluster, self.to
        check_supported(to)
        kafka_dist(to)  # resolved, or a ProvisionError naming 'failsafe setup --kafka-version TO'
        spec = cluster.spec
        if spec.mode != KRAFT_MODE:
            raise UserError(f"a rolling upgrade needs a KRaft cluster; the one at {cluster.dir.root} runs {spec.mode}")
        if _key(to)[0] < 4:
            raise UserError(f"Kafka {to} is a 3.x release: a rolling upgrade goes to a 4.x release")
        if not isinstance(cluster.nodes, LocalNodes):
            raise UserError("a rolling upgrade of a cluster on hosts is not supported yet: run it on a local cluster")
        down = [f"{n.role} {n.node_id} is {s}" for n in spec.nodes() if (s := cluster.node_state(n)) != UP]
        if down:
            raise UserError(f"a rolling upgrade needs every node running: {'; '.join(down)}")
        finalized = _key(spec.kafka_version)
        if _key(to) < finalized:
            raise UserError(
                f"the cluster's metadata is finalized at Kafka {spec.kafka_version}'s release: it cannot roll back to "
                f"{to} (a rollback is possible only before the upgrade is finalized)"
            )
        if not self.steps():
            raise UserError(f"every node runs Kafka {to} and the cluster is finalized at it: nothing to do")

    def nodes_to_roll(self) -> list[NodeSpec]:
        return [n for n in roll_order(self.cluster) if self.cluster.state.version_of(n) != self.to]

    def steps(self) -> list[tuple[Step, Callable[[], None]]]:
        out: list[tuple[Step, Callable[[], None]]] = []
        for node in self.nodes_to_roll():
            was = self.cluster.state.version_of(node)
            step = Step(UPGRADE_ROLL, f"roll {node.role} {node.node_id} from Kafka {was} to {self.to}", node)
            out.append((step, lambda node=node: self._roll(node)))
        if self.finalize and _key(self.to) > _key(self.cluster.spec.kafka_version):
            release = release_of(self.to)
            out.append((Step(UPGRADE_FINALIZE, f"finalize the features at release {release}"), self._finalize))
        return out

    def run(self, started: StepStarted = lambda _: None, done: StepDone = lambda *_: None) -> None:
        for step, action in self.steps():
            self.progress(step.description)
            started(step)
            try:
                action()
            except (FailsafeError, WaitTimeout, OSError) as e:
                done(step, False, str(e))
                raise UpgradeFailed(f"upgrade step '{step.description}' failed: {e}. {self.where_now()}") from e
            done(step, True, None)

    def where_now(self) -> str:
        versions = {n.name: self.cluster.state.version_of(n) for n in self.cluster.spec.nodes()}
        return "The cluster is left running; its nodes run " + ", ".join(f"{k} {v}" for k, v in versions.items())

    # -- the steps ------------------------------------------------------------------------------
    def _save(self, state: ClusterState) -> None:
        self.cluster.state = state
        self.cluster.dir.save(state)

    def _set_version(self, node: NodeSpec, version: str) -> None:
        versions = dict(self.cluster.state.node_versions)
        if version == self.cluster.spec.kafka_version:
            versions.pop(node.name, None)
        else:
            versions[node.name] = version
        self._save(dataclasses.replace(self.cluster.state, node_versions=versions))

    def _roll(self, node: NodeSpec) -> None:
        """Controlled shutdown, the new release's jars, start; wait until it is ready and every ISR is full again."""
        cluster = self.cluster
        cluster.stop_nodes([node], signal.SIGTERM, DEFAULT_STOP_TIMEOUT_S)
        was = cluster.state.version_of(node)
        self._set_version(node, self.to)
        try:
            cluster.start([node], cluster.java, cluster.dist_of(node), self.step_timeout_s, self.progress)
        except BaseException:
            # Not started on the new release: the state says the release it last ran, so 'failsafe up' starts that.
            self._set_version(node, was)
            raise
        other = next((n for n in cluster.spec.brokers_nodes() if n != node), node)
        wait_until(
            lambda: under_replicated(other.port) == [],
            self.step_timeout_s,
            f"partitions were still under-replicated {self.step_timeout_s:g}s after {node.name} came back on Kafka "
            f"{self.to}",
            poll_interval_s=0.25,
        )

    def _finalize(self) -> None:
        """kafka-features upgrade --release-version with the new release's tool; then the cluster's release is it."""
        cluster = self.cluster
        new = kafka_dist(self.to)
        before = {f: v[2] for f, v in finalized_features(new, cluster.bootstrap_servers).items()}
        upgrade_release(new, cluster.bootstrap_servers, release_of(self.to))
        levels = finalized_features(new, cluster.bootstrap_servers)
        # Every feature --release-version moved, kraft.version among them: on a static quorum (controller.quorum.voters)
        # it goes from 0 to 1 for good (KAFKA-21426, docs/lifecycle.md).
        self.changed = {f: (before.get(f, "0"), v[2]) for f, v in levels.items() if before.get(f, "0") != v[2]}
        level = (levels.get("metadata.version") or ("", "", "?"))[2]
        if not level.startswith(release_of(self.to)):
            raise UpgradeFailed(f"metadata.version is {level} after the upgrade to release {release_of(self.to)}")
        spec = dataclasses.replace(cluster.spec, kafka_version=self.to)
        self._save(dataclasses.replace(cluster.state, spec=spec, node_versions={}))
        cluster.__dict__.pop("dist", None)  # the cached_property: the cluster's release changed


def upgrade(
    cluster: Cluster,
    to: str,
    finalize: bool = True,
    progress: Callable[[str], None] = lambda _: None,
    started: StepStarted = lambda _: None,
    done: StepDone = lambda *_: None,
) -> Upgrade:
    """Roll ``cluster`` onto Kafka ``to`` and finalize it (or, with ``finalize`` False, roll only: a rollback to the
    release the cluster is finalized at is such a roll); the upgrade, done, with the feature levels it changed."""
    with cluster.dir.lock():
        done_upgrade = Upgrade(cluster, to, finalize, progress)
        done_upgrade.run(started, done)
    return done_upgrade
