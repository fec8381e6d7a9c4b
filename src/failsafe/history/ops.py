"""The history's vocabulary: every op's name, type and process, and the constructors of the ops failsafe writes.

Every writer (the engine, the operator feed, the workloads, the kinds, the worker processes) builds
its ops here, and every reader (the loader, the checkers, the reports, the console) names them
here, so an op's name is written once. The format is docs/history.md.

    Op          what happened (``f``): send, poll, fault-start, phase, ...
    OpType      how it ended (``type``): invoke, ok, fail, info
    Target      what a fault acted on, as its fault-start records it
    Family      the kind of fault (process, network, client, ...), as its fault-start records it
    PhaseName   the engine's phases, as its phase ops record them
    NodeEvent   what a node's own log said, as a node-event records it
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any


class OpType(StrEnum):
    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"  # an outcome nobody knows (a send that timed out), or a fact about the run


class Op(StrEnum):
    # Clients (worker processes).
    SEND = "send"
    POLL = "poll"
    ASSIGN = "assign"
    REVOKE = "revoke"
    COMMIT = "commit"
    CLOSE = "close"
    CRASH = "crash"
    CLIENT_CONFIG = "client-config"
    # A share-group consumer (KIP-932): the records one poll acquired, each with its delivery count; then, per
    # partition, the acknowledgements (accept, release, reject) sent for them and what the broker answered.
    SHARE_POLL = "share-poll"
    SHARE_ACK = "share-ack"
    # A transaction: invoke at begin, then ok (committed), fail (certainly aborted) or info (unknown); txn-end (an
    # invoke) is written just before the writer asks for the commit or the abort, with the input offsets sent into it.
    TXN = "txn"
    TXN_END = "txn-end"
    # The log read back after the run: one op per partition, with what it read and the partition's offsets at the read.
    LOG_READ = "log-read"
    # The clients the scenario declares (every one must show up in the history: checkers/clients.py), and a group's
    # configuration as the cluster reported it (a share group's delivery count limit, its lock duration).
    DECLARE = "declare"
    GROUP_CONFIG = "group-config"
    # Faults, the cluster as the engine saw it, the run's own phases and admin actions.
    FAULT_START = "fault-start"
    FAULT_STOP = "fault-stop"
    TOPOLOGY = "topology"
    CONTROLLER = "controller"
    # A node's metrics as its Prometheus JMX exporter served them (or why they could not be read).
    METRICS = "metrics"
    # What a node's own log says happened (a broker fenced, a ZooKeeper session expired), read after the run.
    NODE_EVENT = "node-event"
    PHASE = "phase"
    # A phase the engine finished: a run is judged only when every phase ended (checkers/completeness.py).
    PHASE_END = "phase-end"
    CREATE_TOPIC = "create-topic"
    # Events: what the engine and the kinds record about the run itself (the loader's ``events`` frame).
    RECOVER_TIMEOUT = "recover-timeout"
    FAULT_NOT_STARTED = "fault-not-started"
    ELECT_LEADERS = "elect-leaders"
    APP_START = "app-start"
    APP_EXIT = "app-exit"
    PIPELINE_START = "pipeline-start"
    PIPELINE_EXIT = "pipeline-exit"
    PIPELINE_STOP = "pipeline-stop"
    SIMULATOR_EXIT = "simulator-exit"
    DRAINED = "drained"
    SPARK_STANDALONE_UP = "spark-standalone-up"
    DR_SWITCH = "dr-switch"
    DR_OFFSETS = "dr-offsets"
    MIRROR_START = "mirror-start"
    MIRROR_READY = "mirror-ready"
    MIRROR_STOP = "mirror-stop"
    FEATURE_LEVEL = "feature-level"
    READ_BACK = "read-back"


EVENTS: tuple[Op, ...] = (
    Op.APP_START,
    Op.APP_EXIT,
    Op.RECOVER_TIMEOUT,
    Op.FAULT_NOT_STARTED,
    Op.ELECT_LEADERS,
    Op.PIPELINE_START,
    Op.PIPELINE_EXIT,
    Op.PIPELINE_STOP,
    Op.SIMULATOR_EXIT,
    Op.DRAINED,
    Op.SPARK_STANDALONE_UP,
    Op.DR_SWITCH,
    Op.DR_OFFSETS,
    Op.MIRROR_START,
    Op.MIRROR_READY,
    Op.MIRROR_STOP,
    Op.FEATURE_LEVEL,
    Op.READ_BACK,
    Op.DECLARE,
)


class Target(StrEnum):
    """What a fault acts on, as recorded in ``fault-start``."""

    BROKER = "broker"
    CONTROLLER = "controller"
    QUORUM = "quorum"
    CLUSTER = "cluster"
    CONSUMER = "consumer"
    TXN_CLIENT = "txn-client"
    PIPELINE = "pipeline"
    APP = "app"  # an instance of a user's application (the app kind)
    SPARK_WORKER = "spark-worker"
    NETWORK = "network"


# The client fault that freezes a consumer (SIGSTOP) instead of stopping it (faults/clients.py): it keeps its
# connections, its group membership until its session runs out, and a share group's records until their lock does.
PAUSE_CONSUMER = "pause-consumer"
# The client fault that closes a consumer and starts it again as a new process (NAME.N) when it ends: a leave, then a
# join.
RESTART_CONSUMER = "restart-consumer"

# Faults whose target is one of these act on Kafka's nodes: the partitions they led are the affected ones.
NODE_TARGETS: tuple[Target, ...] = (Target.BROKER, Target.CONTROLLER, Target.QUORUM, Target.NETWORK)


class Family(StrEnum):
    """The kind of fault, as recorded in ``fault-start`` (a fault type's ``family``)."""

    PROCESS = "process"  # a node's process: killed, stopped, paused
    NETWORK = "network"  # links cut or lossy
    CLIENT = "client"  # the workload's own processes
    DISK = "disk"  # a node's disk: power lost (unsynced writes gone), full, failing
    MIGRATION = "migration"  # a step of the live ZooKeeper-to-KRaft migration, recorded as a window
    UPGRADE = "upgrade"  # a step of a rolling upgrade of the Kafka release (cluster/topology/upgrade.py), a window
    QUORUM_CHANGE = "quorum-change"  # a dynamic quorum's voters changed (cluster/topology/quorum.py), a window
    FEATURE_FLIP = "feature-flip"  # a feature level finalized mid-run (kafka-features), a window on the quorum
    REASSIGNMENT = "reassignment"  # a broker added, partitions moved between brokers (cluster/topology/reassign.py)
    PROTOCOL = (
        "protocol"  # requests or answers delayed, held, dropped or sent twice by a broker's proxy (failsafe.proxy)
    )
    CLOCK = "clock"  # a node's clock set apart from real time: jumped, skewed, drifting (cluster/clocks.py)


# The families whose windows are steps of an operation, not faults: those on the quorum are no quorum loss.
OPERATION_FAMILIES: tuple[Family, ...] = (
    Family.MIGRATION,
    Family.UPGRADE,
    Family.QUORUM_CHANGE,
    Family.FEATURE_FLIP,
    Family.REASSIGNMENT,
)


# The migration's steps are recorded as fault windows of family migration, named by their kind: a roll restarts one
# node.
MIGRATION_ROLL = "roll"
# A rolling upgrade's steps, family upgrade: the roll of one node onto another release, and the features finalized.
UPGRADE_ROLL = "roll"
UPGRADE_FINALIZE = "finalize"


class PhaseName(StrEnum):
    SETUP = "setup"
    WARM_UP = "warm-up"
    CHAOS = "chaos"
    HEAL = "heal"
    RECOVER = "recover"
    DRAIN = "drain"
    # The log read back from the beginning of every partition, once the clients stopped: what durability is judged by.
    FINAL_READ = "final-read"


class Role(StrEnum):
    """What a declared client is (``declare``): what it must have done for the run to account for it."""

    PRODUCER = "producer"  # a plain producer: writes
    CONSUMER = "consumer"  # a consumer in a group (assigned by it) or on its own (manual assignment): reads
    SHARE_CONSUMER = "share-consumer"  # a member of a share group (KIP-932): acquires records
    TXN_WRITER = "txn-writer"  # a transactional writer: writes in transactions
    PROCESSOR = "processor"  # a consume-transform-produce worker: reads its input, writes in transactions


class Process:
    """The names of failsafe's own processes in the history (clients are named by the scenario)."""

    RUNNER = "runner"
    NEMESIS = "nemesis"
    TOPOLOGY = "topology"
    LOG_READER = "log-reader"
    ADMIN = "admin"
    OPERATOR = "operator"
    METRICS = "metrics"


# What a network fault's side names besides its nodes.
CLIENTS_SIDE = "clients"


def op(
    f: Op, type: OpType = OpType.INFO, process: str = Process.RUNNER, time_ns: int | None = None, **fields: Any
) -> dict[str, Any]:
    """One op as the recorder writes it: time, process, type and name first, then its fields (``None`` fields left
    out)."""
    return {
        "time_ns": time.time_ns() if time_ns is None else time_ns,
        "process": process,
        "type": str(type),
        "f": str(f),
        **{name: value for name, value in fields.items() if value is not None},
    }


def event(f: Op, process: str = Process.RUNNER, time_ns: int | None = None, **fields: Any) -> dict[str, Any]:
    """An op about the run itself (one of EVENTS)."""
    if f not in EVENTS:
        raise ValueError(f"{f} is not an event op: events are {', '.join(EVENTS)}")
    return op(f, OpType.INFO, process, time_ns, **fields)


def phase(name: PhaseName, time_ns: int | None = None) -> dict[str, Any]:
    return op(Op.PHASE, phase=str(name), time_ns=time_ns)


def phase_end(name: PhaseName, time_ns: int | None = None) -> dict[str, Any]:
    return op(Op.PHASE_END, phase=str(name), time_ns=time_ns)


def declared_client(
    process: str,
    role: Role,
    *,
    topics: Sequence[str] = (),
    group: str | None = None,
    may_lose: bool = False,
    matches: str | None = None,
) -> dict[str, Any]:
    """One client a scenario declares, as the ``declare`` op lists it: its (first) process, what it is, the topics it
    writes or reads, its group, whether the scenario lets it lose acknowledged writes (acks 0 or 1 only:
    checkers/common.py may_lose), and ``matches``: a regular expression every process of this client's fully matches
    (its restarts, a DR stint's)."""
    return {
        "process": process,
        "role": str(role),
        "topics": list(topics),
        "group": group,
        "may_lose": may_lose,
        "matches": matches,
    }


def declare(clients: Sequence[Mapping[str, Any]], time_ns: int | None = None) -> dict[str, Any]:
    """The clients the scenario declares (``declared_client``), written once when the run is set up."""
    return op(Op.DECLARE, OpType.INFO, Process.RUNNER, time_ns, clients=[dict(c) for c in clients])


def log_read(
    topic: str,
    partition: int,
    records: Sequence[Mapping[str, Any]] | None = None,
    *,
    log_start_offset: int | None = None,
    high_watermark: int | None = None,
    cluster: str | None = None,
    error: str | None = None,
    time_ns: int | None = None,
    retention: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The final read of one partition: ``ok`` with every record from ``log_start_offset`` up to ``high_watermark``
    (both as the partition reported them when the read began; no records is a complete read of an empty log), or, with
    ``error``, ``fail``: the partition was not read completely. ``cluster``: the alias of the cluster read (a DR
    pair's), else None. ``retention``: the topic's retention_ms, retention_bytes and cleanup_policy as the cluster
    described them (what tells a write retention deleted in time from one deleted early)."""
    return op(
        Op.LOG_READ,
        OpType.FAIL if error is not None else OpType.OK,
        Process.LOG_READER,
        time_ns,
        cluster=cluster,
        topic=topic,
        partition=partition,
        log_start_offset=log_start_offset,
        high_watermark=high_watermark,
        error=error,
        records=None if error is not None else [dict(r) for r in records or ()],
        **{k: retention[k] for k in RETENTION_FIELDS if retention and retention.get(k) is not None},
    )


RETENTION_FIELDS = ("retention_ms", "retention_bytes", "cleanup_policy")


def group_config(group: str, configs: Mapping[str, str], time_ns: int | None = None) -> dict[str, Any]:
    """A group's configuration as the cluster described it (DescribeConfigs of the group), the values in force."""
    return op(
        Op.GROUP_CONFIG,
        OpType.INFO,
        Process.RUNNER,
        time_ns,
        group=group,
        config=[{"name": name, "value": str(value)} for name, value in sorted(configs.items())],
    )


def sides_of(sides: Sequence[Sequence[str]] | None) -> list[list[str]] | None:
    return None if sides is None else [[str(member) for member in side] for side in sides]


def fault_start(
    fault_id: int,
    fault: str,
    *,
    target: str | None = None,
    nodes: Sequence[int | str] = (),
    role: str | None = None,
    family: str | None = None,
    label: str | None = None,
    sides: Sequence[Sequence[str]] | None = None,
    one_way: bool | None = None,
    loss: float | None = None,
    details: Mapping[str, Any] | None = None,
    error: str | None = None,
    in_force_ns: int | None = None,
    process: str = Process.NEMESIS,
    time_ns: int | None = None,
) -> dict[str, Any]:
    """A fault began (or, with ``error``, could not begin).

    ``time_ns`` is taken just before the fault acts, ``in_force_ns`` once its action is done (the rules
    installed, the signal delivered): what was sent in between may still have gone through.
    ``sides``: a network fault's sides, each a list of node labels and ``clients``; ``label``: how
    reports name the fault when its nodes alone do not say it.
    """
    return op(
        Op.FAULT_START,
        OpType.INFO,
        process,
        time_ns,
        fault_id=fault_id,
        fault=str(fault),
        target=None if target is None else str(target),
        nodes=list(nodes) if target is not None or nodes else None,
        role=role,
        family=None if family is None else str(family),
        label=label,
        sides=sides_of(sides),
        one_way=one_way,
        loss=loss,
        details=dict(details) if details else None,
        error=error,
        in_force_ns=in_force_ns,
    )


def fault_stop(
    fault_id: int,
    fault: str | None,
    ok: bool,
    attempt: int,
    *,
    error: str | None = None,
    by: str | None = None,
    time_ns: int | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An attempt to undo fault ``fault_id``: ``ok`` false means it failed and will be tried again. ``details``: what
    the fault did while in force, known only at its end (a protocol fault's requests taken, by API and client)."""
    return op(
        Op.FAULT_STOP,
        OpType.INFO,
        Process.NEMESIS,
        time_ns,
        fault_id=fault_id,
        fault=fault,
        ok=ok,
        attempt=attempt,
        error=error,
        by=by,
        details=dict(details) if details else None,
    )


def metrics_sample(
    node: int,
    node_name: str,
    samples: Sequence[Mapping[str, Any]] | None = None,
    *,
    error: str | None = None,
    time_ns: int | None = None,
) -> dict[str, Any]:
    """One scrape of a node's metrics endpoint: ``node`` its id, ``node_name`` its name (``server-1``, ``zookeeper-1``:
    ZooKeeper nodes and brokers can share an id), ``samples`` ``[{"metric", "labels", "value"}]``, or ``error``."""
    return op(
        Op.METRICS,
        OpType.INFO if error is None else OpType.FAIL,
        Process.METRICS,
        time_ns,
        node=node,
        node_name=node_name,
        samples=None if samples is None else [dict(s) for s in samples],
        error=error,
    )


class NodeEvent(StrEnum):
    """What a node's own log said, as a ``node-event`` records it (``event``); read by cluster/observe/node_logs.py.

    KRaft (the active controller's QuorumController lines): FENCED (session timed out, fencing requested, or an
    immediate or completed shutdown: the controller takes its leaderships away), CONTROLLED_SHUTDOWN (granted while it
    led partitions: its leaders are moved away first), UNFENCED, REGISTERED (a new incarnation). ZooKeeper mode (the
    controller broker's KafkaController lines): BROKER_GONE (a deleted broker, or one missing from a new controller's
    live set), BROKER_BOUNCED, BROKER_ADDED, CONTROLLED_SHUTDOWN, CONTROLLER_ELECTED; from ZooKeeper's own log,
    ZK_SESSION_EXPIRED and ZK_DISCONNECTED (a broker's session, mapped from the brokers' logs). Both modes:
    BECAME_LEADER (a broker's state-change line for a partition). LOG_UNREADABLE: the node's log could not be read
    (``line``: why). Storage, from a broker's log recovery (of ``topic``/``partition`` when its line names one):
    CORRUPTION_FOUND (a segment's batch failed its checks), LOG_TRUNCATED (the log cut at the first bad batch, or
    invalid bytes cut off a segment's end), INDEX_REBUILT (an index corrupted or missing, rebuilt from its segment),
    SEGMENT_DELETED (a segment with an invalid offset deleted), CHECKPOINT_UNREADABLE (a checkpoint file that did not
    parse), LOG_DIR_OFFLINE (a log directory taken offline after a disk error)."""

    FENCED = "fenced"
    CONTROLLED_SHUTDOWN = "controlled-shutdown"
    UNFENCED = "unfenced"
    REGISTERED = "registered"
    BROKER_GONE = "broker-gone"
    BROKER_BOUNCED = "broker-bounced"
    BROKER_ADDED = "broker-added"
    CONTROLLER_ELECTED = "controller-elected"
    ZK_SESSION_EXPIRED = "zk-session-expired"
    ZK_DISCONNECTED = "zk-disconnected"
    BECAME_LEADER = "became-leader"
    LOG_UNREADABLE = "log-unreadable"
    # What a broker's log recovery found in its own files (cluster/observe/node_logs.py, from Kafka's storage classes).
    CORRUPTION_FOUND = "corruption-found"
    LOG_TRUNCATED = "log-truncated"
    INDEX_REBUILT = "index-rebuilt"
    SEGMENT_DELETED = "segment-deleted"
    CHECKPOINT_UNREADABLE = "checkpoint-unreadable"
    LOG_DIR_OFFLINE = "log-dir-offline"


# The events by which the cluster's metadata authority (the KRaft controller, the ZooKeeper controller or ZooKeeper
# itself) declared a broker gone, or began moving its leaderships away: the end of a failover's detection.
DETECTION_EVENTS: tuple[NodeEvent, ...] = (
    NodeEvent.FENCED,
    NodeEvent.CONTROLLED_SHUTDOWN,
    NodeEvent.BROKER_GONE,
    NodeEvent.BROKER_BOUNCED,
    NodeEvent.ZK_SESSION_EXPIRED,
)

# What a broker said of its own files: the events a corruption's detection is read from (checkers/measure/storage.py).
STORAGE_EVENTS: tuple[NodeEvent, ...] = (
    NodeEvent.CORRUPTION_FOUND,
    NodeEvent.LOG_TRUNCATED,
    NodeEvent.INDEX_REBUILT,
    NodeEvent.SEGMENT_DELETED,
    NodeEvent.CHECKPOINT_UNREADABLE,
    NodeEvent.LOG_DIR_OFFLINE,
)


def node_event(
    node: int,
    event: str,
    time_ns: int,
    *,
    broker: int | None = None,
    topic: str | None = None,
    partition: int | None = None,
    line: str | None = None,
) -> dict[str, Any]:
    """What node ``node``'s log said at ``time_ns`` (its own clock: the same machine's): ``event`` about ``broker``
    (or a partition), with the ``line`` it was read from."""
    return op(
        Op.NODE_EVENT,
        OpType.INFO,
        f"node-{node}",
        time_ns,
        node=node,
        event=event,
        broker=broker,
        topic=topic,
        partition=partition,
        line=line,
    )
