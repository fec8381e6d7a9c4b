"""A cluster is a directory: configs, data, logs, pidfiles and a state file.

DIR/failsafe-state.json     the spec, the cluster id, the Kafka version
DIR/server-N.properties     one per Kafka node, seed style
DIR/kafka-N/                each Kafka node's log.dirs
DIR/zookeeper-N.properties  one per ZooKeeper node (ZooKeeper mode), with its dataDir zookeeper-N/
DIR/logs/server-N.log       each node's own log
DIR/pids/server-N.pid       "pid create_time" of each running node
DIR/operator-actions.jsonl  the node actions done by hand (cluster/observe/journal.py)
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from failsafe.cluster.observe.journal import JOURNAL_FILE
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.errors import ClusterNotRunning, UserError
from failsafe.tools.security import write_secret

STATE_FILE = "failsafe-state.json"
LOCK_FILE = ".failsafe.lock"
DEFAULT_DIR = "failsafe-cluster"
STATE_FORMAT = 1


def default_cluster_dir() -> Path:
    return Path(os.environ.get("FAILSAFE_DIR") or DEFAULT_DIR)


def new_cluster_id() -> str:
    """A Kafka Uuid in its base64url form, as kafka-storage random-uuid prints it."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # Kafka's own generator avoids a leading '-', which a command line would read as an option.
        if not text.startswith("-"):
            return text


@dataclass(frozen=True)
class ClusterState:
    spec: ClusterSpec
    cluster_id: str
    created_at: str
    # Nodes that run another Kafka release than the spec's, by node name: a rolling upgrade (or its rollback) under way
    # (cluster/topology/upgrade.py). Empty once it is finalized, when the spec's release is every node's.
    node_versions: dict[str, str] = field(default_factory=dict)

    def version_of(self, node: NodeSpec) -> str:
        return self.node_versions.get(node.name, self.spec.kafka_version)

    def to_json(self) -> dict:
        return {
            "format": STATE_FORMAT,
            "cluster_id": self.cluster_id,
            "created_at": self.created_at,
            "kafka_version": self.spec.kafka_version,
            "spec": self.spec.to_json(),
            **({"node_versions": dict(self.node_versions)} if self.node_versions else {}),
        }

    @classmethod
    def from_json(cls, data: object) -> ClusterState:
        """ValueError names what is missing or of the wrong type (ClusterDir.load says which file and what to do)."""
        if not isinstance(data, dict):
            raise ValueError("it holds no JSON object")
        for key in ("spec", "cluster_id", "created_at"):
            if key not in data:
                raise ValueError(f"{key!r} is missing")
        for key in ("cluster_id", "created_at"):
            if not isinstance(data[key], str):
                raise ValueError(f"{key!r} is {data[key]!r}, not a string")
        versions = data.get("node_versions") or {}
        if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
            raise ValueError(f"'node_versions' is {versions!r}, not an object of node names to Kafka releases")
        return cls(
            spec=ClusterSpec.from_json(data["spec"]),
            cluster_id=data["cluster_id"],
            created_at=data["created_at"],
            node_versions={str(k): v for k, v in versions.items()},
        )


class UnreadableState(UserError):
    """A state file failsafe cannot read: not JSON, another format, keys missing or of the wrong type. Only 'clean' can
    help."""


def unreadable(path: Path, root: Path, reason: str) -> UnreadableState:
    return UnreadableState(f"{path} is unreadable ({reason}): run 'failsafe clean --dir {root}' and start again")


@dataclass(frozen=True)
class ClusterDir:
    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / STATE_FILE

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def pids_dir(self) -> Path:
        return self.root / "pids"

    def config_file(self, node: NodeSpec) -> Path:
        return self.root / f"{node.name}.properties"

    def write_config(self, node: NodeSpec, text: str) -> None:
        """A node's properties, owner-only: in a secured mode they hold its listeners' JAAS passwords."""
        write_secret(self.config_file(node), text.encode())

    def data_dir(self, node: NodeSpec) -> Path:
        """A Kafka node's log.dirs (kafka-N), a ZooKeeper node's dataDir (zookeeper-N)."""
        return self.root / (node.name if node.is_zookeeper else f"kafka-{node.node_id}")

    def log_file(self, node: NodeSpec) -> Path:
        return self.logs_dir / f"{node.name}.log"

    @property
    def journal(self) -> Path:
        return self.root / JOURNAL_FILE

    def pidfile(self, node: NodeSpec) -> Path:
        return self.pids_dir / f"{node.name}.pid"

    def has_state(self) -> bool:
        return self.state_file.is_file()

    def load(self) -> ClusterState:
        try:
            data = json.loads(self.state_file.read_text())
        except FileNotFoundError as e:
            raise ClusterNotRunning(
                f"no failsafe cluster at {self.root}: start one with 'failsafe up --dir {self.root}' or set "
                f"FAILSAFE_DIR"
            ) from e
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
            raise unreadable(self.state_file, self.root, str(e)) from e
        if isinstance(data, dict) and data.get("format") != STATE_FORMAT:
            raise UnreadableState(
                f"{self.state_file} has state format {data.get('format')!r}, this failsafe reads {STATE_FORMAT}: "
                f"run 'failsafe clean --dir {self.root}'"
            )
        try:
            return ClusterState.from_json(data)
        except ValueError as e:
            raise unreadable(self.state_file, self.root, str(e)) from e

    def save(self, state: ClusterState) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.to_json(), indent=2) + "\n")
        tmp.replace(self.state_file)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Serialise commands that start or stop nodes of this cluster."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / LOCK_FILE, "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


RUN_LOCK_FILE = ".failsafe-run.lock"


class ClusterBusy(UserError):
    """Another failsafe run holds the cluster directory."""


@contextmanager
def run_lock(root: Path) -> Iterator[None]:
    """Held by a run (failsafe run, campaign, shrink, an atlas group) for as long as it uses the cluster at ``root``: a
    second run there is refused in one line, naming the first's pid, rather than deleting and creating the first's
    topics under it. The kernel drops the lock with its holder, however that ends."""
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        handle = open(Path(root) / RUN_LOCK_FILE, "a+")  # noqa: SIM115 - held open for the whole run
    except OSError as e:
        raise UserError(f"{root} cannot hold a cluster: {e.strerror or e}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip()
        handle.close()
        raise ClusterBusy(
            f"another failsafe run{f' (pid {holder})' if holder else ''} is using the cluster at {root}: wait for it "
            "to end, or stop it, then run again"
        ) from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()
