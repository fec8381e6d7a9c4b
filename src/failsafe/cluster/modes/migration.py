"""A live ZooKeeper-to-KRaft migration of a running ZooKeeper-mode cluster, as Kafka 3.9 documents it (KIP-866).

The documented phases (docs/ops.html, "ZooKeeper to KRaft Migration"), each step waiting on a
condition failsafe can observe:

1. provision  a KRaft controller with ``zookeeper.metadata.migration.enable=true`` and
              ``zookeeper.connect``, its storage formatted with the cluster id from /cluster/id;
              wait: it leads its quorum.
2. brokers into migration mode, one rolling restart each (the flag, the controller quorum, the
              CONTROLLER listener mapped, ``inter.broker.protocol.version=3.9``); wait: each is
              back in every broker's metadata and every partition's ISR is full again. After the
              last one the controller copies ZooKeeper's metadata into its log and takes over;
              wait: /migration holds a KRaft metadata offset > 0 and /controller names the KRaft
              controller (the two facts KRaftMigrationDriver's "Completed migration of metadata
              from ZooKeeper to KRaft" stands on).
3. brokers into KRaft, a second rolling restart (``process.roles=broker``, ``node.id``, no
              ZooKeeper); wait as in 2, and at the end /brokers/ids is empty.
4. finalize   restart the controller without the flag and without ``zookeeper.connect``; wait:
              it leads again and its log says it completed the migration.
5. retire ZooKeeper: stop its nodes. The cluster is KRaft from here on; ZooKeeper's data stays
              on disk (zookeeper-N/) but nothing uses it.

The static quorum (``controller.quorum.voters``) is the one Kafka's own migration system test and
vendors' docs use. A step that fails raises MigrationFailed naming the step and the documented
way back from there; the cluster is left running as it was.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, replace

from failsafe.cluster.modes import zookeeper
from failsafe.cluster.modes.mode import mode_of
from failsafe.cluster.observe.readiness import under_replicated
from failsafe.cluster.properties import kraft_properties, render_properties, zookeeper_broker_properties
from failsafe.cluster.spec import KRAFT_MODE, MIGRATING_MODE, ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterState
from failsafe.cluster.topology.lifecycle import DEFAULT_STOP_TIMEOUT_S, Cluster, ensure_ports_free
from failsafe.errors import FailsafeError, UserError
from failsafe.history.ops import MIGRATION_ROLL
from failsafe.supervisor import UP
from failsafe.waiting import WaitTimeout, wait_until

STEP_TIMEOUT_S = 180.0
# The controller's node id: apart from broker ids, as the docs ask (their example uses 3000).
MIGRATION_CONTROLLER_ID = 3000
FINALIZED_LINE = re.compile(r"Completing the ZK migration since this controller", re.IGNORECASE)

# The documented way back from each step (docs/ops.html, "Reverting to ZooKeeper mode During the Migration").
ROLLBACK = {
    "provision": "nothing to do: failsafe stopped the controller, and the brokers never left ZooKeeper mode",
    "brokers-to-migration": "stop the controller, delete /controller and /migration in "
    "'failsafe kafka zookeeper-shell', then roll each broker without zookeeper.metadata.migration.enable "
    "and the controller.* settings",
    "migration-done": "as for brokers-to-migration: the brokers still run in ZooKeeper (migration) mode",
    "brokers-to-kraft": "roll the KRaft brokers back to broker.id and zookeeper.connect keeping the migration flag, "
    "stop the controller, delete /controller, then roll them once more without the flag",
    "finalize": "none: after finalizing Kafka cannot go back to ZooKeeper; start the controller again ('failsafe "
    "controller start 3000')",
    "retire-zookeeper": "none needed: the cluster runs in KRaft mode; start ZooKeeper again only to read its data",
}


class MigrationFailed(FailsafeError):
    """A step of the migration failed; the message names it and the way back."""


ROLL = MIGRATION_ROLL  # a rolling restart of one node with a new config (the name the history records: history/ops.py)
MIGRATION = "migration"  # any other step: a node started or stopped, or a wait for Kafka


@dataclass(frozen=True)
class Step:
    """One step: ``name`` (a key of ROLLBACK), what it does, the node it acts on or waits for, and its kind."""

    name: str
    description: str
    node: NodeSpec | None = None
    kind: str = MIGRATION


# A step's observer: called with the step before it runs and with (step, ok) after.
StepStarted = Callable[[Step], None]
StepDone = Callable[[Step, bool, str | None], None]


def check_can_migrate(cluster: Cluster) -> None:
    spec = cluster.spec
    root = cluster.dir.root
    mode_of(spec).check_can_migrate(root)
    if not spec.kafka_version.startswith("3.9."):
        raise UserError(f"the migration needs Kafka 3.9.x; the cluster at {root} runs {spec.kafka_version}")
    down = [f"{n.role} {n.node_id} is {cluster.node_state(n)}" for n in spec.nodes() if cluster.node_state(n) != UP]
    if down:
        raise UserError(
            f"every node must be up to migrate ({'; '.join(down)}): start them first ('failsafe broker start ID')"
        )
    if not cluster.state.cluster_id:
        raise UserError(
            f"the cluster at {root} has no cluster id recorded yet: run 'failsafe status --dir {root}' once "
            f"ZooKeeper answers"
        )


def target_spec(spec: ClusterSpec) -> ClusterSpec:
    """The KRaft cluster the migration ends with: the same brokers, one controller, no ZooKeeper."""
    return replace(
        spec, mode=KRAFT_MODE, controllers=1, combined=False, zookeepers=0, first_controller_id=MIGRATION_CONTROLLER_ID
    )


class Migration:
    def __init__(
        self,
        cluster: Cluster,
        progress: Callable[[str], None] = lambda _: None,
        step_timeout_s: float = STEP_TIMEOUT_S,
        stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
    ) -> None:
        self.cluster = cluster
        self.progress = progress
        self.step_timeout_s = step_timeout_s
        self.stop_timeout_s = stop_timeout_s
        zk_spec = cluster.spec
        self.kraft = target_spec(zk_spec)
        # During the migration: ZooKeeper, the controller and the brokers, all tracked.
        self.migrating = replace(self.kraft, mode=MIGRATING_MODE, zookeepers=zk_spec.zookeepers)
        self.controller = self.kraft.controller_nodes()[0]
        self.root = cluster.dir.root.resolve()

    # -- configs ------------------------------------------------------------------------------------
    def _controller_props(self, migrating: bool) -> dict[str, str]:
        props = kraft_properties(self.kraft, self.controller, self.root)
        # The controller sends RPCs to the ZooKeeper-mode brokers over their listener.
        props["inter.broker.listener.name"] = "PLAINTEXT"
        if migrating:
            props["zookeeper.metadata.migration.enable"] = "true"
            props["zookeeper.connect"] = self.migrating.zookeeper_connect()
        return props

    def _migrating_broker_props(self, node: NodeSpec) -> dict[str, str]:
        props = zookeeper_broker_properties(self.migrating, node, self.root)
        props.update(
            {
                "zookeeper.metadata.migration.enable": "true",
                "controller.quorum.voters": self.kraft.quorum_voters(),
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "inter.broker.protocol.version": "3.9",
            }
        )
        return props

    def _write(self, node: NodeSpec, props: dict[str, str], why: str) -> None:
        header = [
            f"# {node.name}.properties: {node.role} {node.node_id} of the failsafe cluster in {self.root}",
            f"# Written by 'failsafe migrate' ({why}); every property not listed keeps Kafka's default.",
        ]
        self.cluster.dir.write_config(node, render_properties(props, header))

    def _save(self, spec: ClusterSpec) -> None:
        self.cluster.state = ClusterState(spec, self.cluster.state.cluster_id, self.cluster.state.created_at)
        self.cluster.dir.save(self.cluster.state)

    # -- the plan -----------------------------------------------------------------------------------
    def steps(self) -> list[tuple[Step, Callable[[], None]]]:
        brokers = self.kraft.brokers_nodes()
        plan: list[tuple[Step, Callable[[], None]]] = [
            (
                Step(
                    "provision", f"start KRaft controller {self.controller.node_id} in migration mode", self.controller
                ),
                self._provision,
            )
        ]
        for node in brokers:
            plan.append(
                (
                    Step("brokers-to-migration", f"roll broker {node.node_id} into migration mode", node, ROLL),
                    lambda node=node: self._roll(node, self._migrating_broker_props(node), "migration mode"),
                )
            )
        plan.append(
            (
                Step(
                    "migration-done",
                    "wait for the controller to copy ZooKeeper's metadata and take over",
                    self.controller,
                ),
                self._await_migrated,
            )
        )
        for node in brokers:
            plan.append(
                (
                    Step("brokers-to-kraft", f"roll broker {node.node_id} into KRaft mode", node, ROLL),
                    lambda node=node: self._roll(node, kraft_properties(self.kraft, node, self.root), "KRaft mode"),
                )
            )
        plan.append(
            (
                Step(
                    "finalize", f"restart controller {self.controller.node_id} without ZooKeeper", self.controller, ROLL
                ),
                self._finalize,
            )
        )
        plan.append((Step("retire-zookeeper", "stop ZooKeeper"), self._retire_zookeeper))
        return plan

    def run(self, started: StepStarted = lambda _: None, done: StepDone = lambda *_: None) -> None:
        check_can_migrate(self.cluster)
        for step, action in self.steps():
            self.progress(step.description)
            started(step)
            try:
                action()
            except (FailsafeError, WaitTimeout, OSError) as e:
                done(step, False, str(e))
                raise MigrationFailed(
                    f"migration step {step.name} ({step.description}) failed: {e}. The cluster is left running; "
                    f"to roll back: {ROLLBACK[step.name]}"
                ) from e
            done(step, True, None)

    # -- the steps ----------------------------------------------------------------------------------
    def _wait(self, condition: Callable[[], object], message: str) -> None:
        wait_until(condition, self.step_timeout_s, message, poll_interval_s=0.25)

    def _provision(self) -> None:
        ensure_ports_free([self.controller], spec=self.migrating)
        zookeeper_spec = self.cluster.spec
        self._write(self.controller, self._controller_props(migrating=True), "a KRaft controller in migration mode")
        self._save(self.migrating)
        try:
            # Without --release-version the format takes metadata.version 3.9-IV0, the brokers'
            # inter.broker.protocol.version.
            self.cluster.format_storage([self.controller], self.cluster.java, self.cluster.dist)
            self.cluster.start(
                [self.controller], self.cluster.java, self.cluster.dist, self.step_timeout_s, self.progress
            )
            self._wait(
                lambda: self.cluster.active_controller() == self.controller.node_id,
                f"controller {self.controller.node_id} did not become its quorum's leader within "
                f"{self.step_timeout_s:g}s",
            )
        except BaseException:
            # Nothing else has changed yet: stop the controller and the cluster is the ZooKeeper-mode one it was.
            self.cluster.stop_nodes([self.controller], signal.SIGKILL, self.stop_timeout_s)
            self._save(zookeeper_spec)
            raise

    def _roll(self, node: NodeSpec, props: dict[str, str], into: str) -> None:
        """Controlled shutdown, the new config, start; wait until it is registered and every ISR is full again."""
        self.cluster.stop_nodes([node], signal.SIGTERM, self.stop_timeout_s)
        self._write(node, props, f"broker in {into}")
        self.cluster.start([node], self.cluster.java, self.cluster.dist, self.step_timeout_s, self.progress)
        # Asked of another broker when there is one: its metadata says whether the rolled one caught up.
        other = next((n for n in self.kraft.brokers_nodes() if n != node), node)
        self._wait(
            lambda: under_replicated(other.port) == [],
            f"partitions were still under-replicated {self.step_timeout_s:g}s after broker {node.node_id} came "
            f"back in {into}",
        )

    def _await_migrated(self) -> None:
        def migrated() -> bool:
            try:
                with zookeeper.connected(self.migrating.zookeeper_connect()) as client:
                    state = zookeeper.migration_state(client) or {}
                    controller = zookeeper.controller(client) or {}
            except zookeeper.ZooKeeperUnavailable:
                return False
            return (
                int(state.get("kraft_metadata_offset", -1)) > 0
                and controller.get("brokerid") == self.controller.node_id
                and int(controller.get("kraftControllerEpoch", -1)) >= 0
            )

        self._wait(
            migrated,
            f"the controller had not migrated ZooKeeper's metadata within {self.step_timeout_s:g}s "
            f"(see {self.cluster.dir.log_file(self.controller)}, KRaftMigrationDriver lines)",
        )

    def _finalize(self) -> None:
        # Only brokers in KRaft mode may remain: Kafka 3.9 does not check this itself (KAFKA-20960).
        seen = zookeeper.view(self.migrating.zookeeper_connect())
        if seen is None or seen[0]:
            raise MigrationFailed(
                f"brokers {sorted(seen[0]) if seen else '?'} are still registered in ZooKeeper: not finalizing"
            )
        log = self.cluster.dir.log_file(self.controller)
        offset = log.stat().st_size if log.exists() else 0
        self.cluster.stop_nodes([self.controller], signal.SIGTERM, self.stop_timeout_s)
        self._write(self.controller, self._controller_props(migrating=False), "a KRaft controller, migration finalized")
        self.cluster.start([self.controller], self.cluster.java, self.cluster.dist, self.step_timeout_s, self.progress)

        def finalized() -> bool:
            with open(log, "rb") as fh:
                fh.seek(offset)
                return bool(FINALIZED_LINE.search(fh.read().decode(errors="replace")))

        self._wait(
            finalized,
            f"controller {self.controller.node_id} did not log that it completed the migration "
            f"within {self.step_timeout_s:g}s (see {log})",
        )

    def _retire_zookeeper(self) -> None:
        self.cluster.stop_nodes(self.migrating.zookeeper_nodes(), signal.SIGTERM, self.stop_timeout_s)
        self._save(self.kraft)


def migrate(
    cluster: Cluster,
    progress: Callable[[str], None] = lambda _: None,
    started: StepStarted = lambda _: None,
    done: StepDone = lambda *_: None,
) -> ClusterSpec:
    """Migrate ``cluster`` (a running ZooKeeper-mode one) to KRaft; returns its new spec."""
    with cluster.dir.lock():
        Migration(cluster, progress).run(started, done)
    return cluster.spec
