"""What Kafka's nodes (and ZooKeeper) said in their own logs during a run, as ``node-event`` ops.

    read_node_events(log_files, since_ns, until_ns, zookeeper_logs=None) -> list[dict]

``log_files`` maps each Kafka node's id (broker or KRaft controller) to its log file
(``logs/server-N.log``); ``zookeeper_logs`` maps each ZooKeeper node's id to its own
(``logs/zookeeper-N.log``): separate, because a ZooKeeper node and a broker may share an id. The
ops are ``failsafe.history.ops.node_event`` dicts, sorted by time, ready for the recorder; their
``event`` is a ``NodeEvent`` (docs/history.md, ``node-event``):

    fenced               KRaft: the active controller fenced broker N (session timed out, fencing
                         requested, or a shutdown granted: its leaderships are taken away)
    controlled-shutdown  KRaft: broker N, still leading partitions, was granted a controlled shutdown
                         (its leaders are moved first); ZooKeeper mode: the controller's "Shutting down broker N"
    unfenced             KRaft: broker N's request to unfence was granted
    registered           KRaft: a new incarnation of broker N registered (first start or restart)
    broker-gone          ZooKeeper mode: the controller saw broker N deleted from /brokers/ids, or a newly
                         elected controller's live set lacks broker N (one of ``log_files``' ids; not the
                         cluster's first controller's, which only shows who registered before it)
    broker-bounced       ZooKeeper mode: broker N re-registered before the controller saw it leave
    broker-added         ZooKeeper mode: broker N registered
    controller-elected   ZooKeeper mode: broker N became the controller
    zk-session-expired   ZooKeeper expired broker N's session (ZooKeeper's log; ``node`` is the ZooKeeper
                         node and ``process`` ``zookeeper-K``), or broker N found its own session expired
    zk-disconnected      ZooKeeper saw broker N's connection close (a killed broker: at once)
    became-leader        broker N became the leader of a partition (``topic``, ``partition``)
    corruption-found     the node's log recovery found a batch that failed its checks in a segment (LogSegment)
    log-truncated        ... cut the log at the first bad batch, or invalid bytes off a segment's end (LogLoader,
                         LogSegment)
    index-rebuilt        ... found an index corrupted or missing and rebuilt it from its segment (LogLoader)
    segment-deleted      ... deleted a segment holding an invalid offset and made an empty one (LogLoader)
    checkpoint-unreadable  a checkpoint file did not parse (CheckpointFileWithFailureHandler, CheckpointFile)
    log-dir-offline      a log directory was taken offline after a disk error (LogManager); the storage events
                         name the partition (``topic``, ``partition``) when their line does
    log-unreadable       the node's log could not be read; ``line`` says why, ``time_ns`` is ``until_ns``

Times are the lines' own (log4j's ``[yyyy-MM-dd HH:mm:ss,SSS]``, this machine's local time, the
millisecond the line was written in). A line is kept when its millisecond overlaps
[since_ns, until_ns]. ZooKeeper sessions are told apart by the "Session establishment complete"
lines of the brokers' logs, read whatever their time (a session is opened when a broker starts,
usually before the run); an expiry of a session no broker log names is left out.

The patterns were written from Kafka 4.3.1's and 3.9.2's logs and checked against the messages
in their jars (and apache/kafka's 3.9 source): each names its class.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from failsafe.history.ops import STORAGE_EVENTS, NodeEvent, node_event

MAX_LINE_CHARS = 300
_MS_NS = 1_000_000
# log4j's pattern in Kafka's own config and failsafe's: "[2026-11-27 17:30:21,623] INFO message (logger)".
_TIME = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3})\] (.*)$")


@dataclass(frozen=True)
class _Found:
    event: NodeEvent
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None


def _one(event: NodeEvent) -> Callable[[re.Match[str]], list[_Found]]:
    return lambda m: [_Found(event, int(m.group(1)))]


def _ids(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def _broker_change(m: re.Match[str]) -> list[_Found]:
    return (
        [_Found(NodeEvent.BROKER_ADDED, b) for b in _ids(m.group(1))]
        + [_Found(NodeEvent.BROKER_GONE, b) for b in _ids(m.group(2))]
        + [_Found(NodeEvent.BROKER_BOUNCED, b) for b in _ids(m.group(3))]
    )


def _became_leader(m: re.Match[str]) -> list[_Found]:
    return [_Found(NodeEvent.BECAME_LEADER, int(m.group(1)), m.group(2), int(m.group(3)))]


# A partition named by a storage line: LogLoader's "[LogLoader partition=t-0, dir=...]", or the path of one of a
# partition's files ("/t-0/00000000000000000000.log", "/t-0/partition.metadata"; not a log directory's own files).
_PARTITION_OF = re.compile(
    r"partition=(\S+)-(\d+),|/([^/\s]+)-(\d+)/(?:\d+\.\w+|leader-epoch-checkpoint|partition\.metadata)\b"
)


def _storage(event: NodeEvent) -> Callable[[re.Match[str]], list[_Found]]:
    def read(m: re.Match[str]) -> list[_Found]:
        where = _PARTITION_OF.search(m.string)
        if where is None:
            return [_Found(event)]
        groups = [g for g in where.groups() if g is not None]
        return [_Found(event, None, groups[0], int(groups[1]))]

    return read


# (pattern, what it says). Searched in the message of every Kafka node's line.
_KAFKA: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], list[_Found]]], ...] = (
    # org.apache.kafka.controller.ReplicationControlManager.maybeFenceOneStaleBroker: 3.9 "Fencing broker {} because its
    # session has timed out.", 4.3 "Fencing broker {} at epoch {} because its session has timed out."
    (re.compile(r"Fencing broker (\d+) (?:at epoch -?\d+ )?because its session has timed out"), _one(NodeEvent.FENCED)),
    # org.apache.kafka.controller.BrokerHeartbeatManager.calculateNextBrokerState (3.9 and 4.3): the next state FENCED
    # or SHUTDOWN_NOW, for which ReplicationControlManager.processBrokerHeartbeat calls handleBrokerFenced.
    (
        re.compile(r"Unfenced broker (\d+) has requested and been granted (?:fencing|an immediate shutdown)"),
        _one(NodeEvent.FENCED),
    ),
    (re.compile(r"The request from broker (\d+) to shut down has been granted"), _one(NodeEvent.FENCED)),
    # ... CONTROLLED_SHUTDOWN: handleBrokerInControlledShutdown moves its leaders away.
    (
        re.compile(r"Unfenced broker (\d+) has requested and been granted a controlled shutdown"),
        _one(NodeEvent.CONTROLLED_SHUTDOWN),
    ),
    (re.compile(r"The request from broker (\d+) to unfence has been granted"), _one(NodeEvent.UNFENCED)),
    # org.apache.kafka.controller.ClusterControlManager.registerBroker (3.9 and 4.3).
    (re.compile(r"No previous registration found for broker (\d+)\."), _one(NodeEvent.REGISTERED)),
    (re.compile(r"Registering a new incarnation of broker (\d+)\."), _one(NodeEvent.REGISTERED)),
    # kafka.controller.KafkaController.processBrokerChange (3.9): "Newly added brokers: 0, deleted brokers: , bounced
    # brokers: , all live brokers: 0,1,2".
    (
        re.compile(r"Newly added brokers: ([\d,]*), deleted brokers: ([\d,]*), bounced brokers: ([\d,]*)"),
        _broker_change,
    ),
    # KafkaController.doControlledShutdown (3.9).
    (
        re.compile(r"Shutting down broker (\d+) \(kafka\.controller\.KafkaController\)"),
        _one(NodeEvent.CONTROLLED_SHUTDOWN),
    ),
    # kafka.cluster.Partition.makeLeader through state.change.logger (3.9 and 4.3, both modes): "[Broker id=2] Leader
    # t-0 with topic id Some(...) starts at leader epoch 1 from offset 0 ...".
    (re.compile(r"\[Broker id=(\d+)\] Leader (\S+)-(\d+) with topic id .* starts at leader epoch"), _became_leader),
    # kafka.zookeeper.ZooKeeperClient's watcher (3.9), on KeeperState.Expired: the broker's own session expired
    # ("[ZooKeeperClient Kafka server] Session expired."), seen once it talks to ZooKeeper again (a paused or cut-off
    # broker).
    (
        re.compile(r"\bSession expired\. \(kafka\.zookeeper\.ZooKeeperClient\)"),
        lambda m: [_Found(NodeEvent.ZK_SESSION_EXPIRED)],
    ),
)
# Log recovery and checkpoints (kafka-storage 4.3.1's and 4.4.0's messages; 3.9.2's are the same words): what a broker
# made of a file it found wrong.
_STORAGE: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], list[_Found]]], ...] = (
    (re.compile(r"Found invalid messages in log segment \S+ at byte offset \d+"), _storage(NodeEvent.CORRUPTION_FOUND)),
    (re.compile(r"Corruption found in segment \d+, truncating to offset \d+"), _storage(NodeEvent.LOG_TRUNCATED)),
    (re.compile(r"Truncated \d+ invalid bytes at the end of segment \S+"), _storage(NodeEvent.LOG_TRUNCATED)),
    (
        re.compile(r"(?:Found a corrupted|Could not find offset) index file corresponding to log file \S+"),
        _storage(NodeEvent.INDEX_REBUILT),
    ),
    (
        re.compile(r"Found invalid offset during recovery\. Deleting the corrupt segment"),
        _storage(NodeEvent.SEGMENT_DELETED),
    ),
    # CheckpointFileWithFailureHandler, PartitionMetadataFile (both through LogDirFailureChannel: the log directory
    # fails with them), CheckpointFile; LogManager's recovery points, which it resets to 0 instead.
    (
        re.compile(
            r"Error while reading (?:checkpoint|partition metadata) file \S+|Malformed line in checkpoint file"
            r"|Error occurred while reading recovery-point-offset-checkpoint file"
        ),
        _storage(NodeEvent.CHECKPOINT_UNREADABLE),
    ),
    # LogManager, ReplicaManager (4.3.1's words), and the halt of a broker left without a log directory.
    (
        re.compile(
            r"are offline due to failure on log directory \S+|Stopping serving replicas in dir \S+"
            r"|Shutdown broker because all log dirs in \S+ have failed"
        ),
        _storage(NodeEvent.LOG_DIR_OFFLINE),
    ),
)
# KafkaController.elect (3.9): "2 successfully elected as the controller. Epoch incremented to 2 ...".
_ELECTED = re.compile(r"(\d+) successfully elected as the controller\. Epoch incremented to (\d+)")
# KafkaController.initializeControllerContext (3.9): a new controller's view, "Set(0, 2)" (a HashSet beyond 4 brokers).
_ACTIVE = re.compile(r"Currently active brokers in the cluster: \w*\(([\d, ]*)\)")
# org.apache.zookeeper.ClientCnxn (3.8.4, Kafka 3.9.2's): a broker's session with ZooKeeper.
_SESSION = re.compile(r"Session establishment complete on server \S+, session id = 0x([0-9a-f]+)")
# org.apache.zookeeper.server.ZooKeeperServer.expire and NIOServerCnxn (3.8.4), in ZooKeeper's own log.
_ZK: tuple[tuple[re.Pattern[str], NodeEvent], ...] = (
    (re.compile(r"Expiring session 0x([0-9a-f]+), timeout of \d+ms exceeded"), NodeEvent.ZK_SESSION_EXPIRED),
    (
        re.compile(
            r"Unable to read additional data from client, it probably closed the socket: address = \S+, "
            r"session = 0x([0-9a-f]+)"
        ),
        NodeEvent.ZK_DISCONNECTED,
    ),
)
# Every line worth a regular expression holds one of these: the rest (most of a log) is skipped by a substring test.
_KEYWORDS = (
    "broker",
    "Broker",
    "session",
    "Session",
    "controller",
    "segment",
    "checkpoint",
    "metadata file",
    "log dir",
)


def read_node_events(
    log_files: Mapping[int, Path],
    since_ns: int,
    until_ns: int,
    zookeeper_logs: Mapping[int, Path] | None = None,
    offsets: Mapping[Path, int] | None = None,
) -> list[dict[str, Any]]:
    """The node-event ops of ``log_files`` (Kafka node id -> its log) and ``zookeeper_logs`` (ZooKeeper node id -> its
    log) whose lines fall in [since_ns, until_ns], sorted by time. A file that cannot be read gives one
    ``log-unreadable`` op naming it and why (at ``until_ns``), never an exception.

    ``offsets`` (a file's size when the window began): a KRaft cluster's logs are read from there, so a long-lived
    cluster's run costs its own lines only. With ZooKeeper logs every file is read whole: the sessions named in them
    were opened when the brokers started, before any run."""
    known = set(log_files)
    ops: list[dict[str, Any]] = []
    sessions: dict[str, int] = {}
    for node, path in sorted(log_files.items()):
        try:
            with open(path, errors="replace") as f:
                start = (offsets or {}).get(path, 0) if not zookeeper_logs else 0
                if start:
                    f.seek(start - 1)
                    if f.read(1) != "\n":
                        f.readline()  # the rest of a line the offset cut
                ops.extend(_kafka_events(node, f, since_ns, until_ns, known, sessions))
        except OSError as e:
            ops.append(_unreadable(node, path, e, until_ns))
    for node, path in sorted((zookeeper_logs or {}).items()):
        try:
            with open(path, errors="replace") as f:
                found = list(_zookeeper_events(node, f, since_ns, until_ns, sessions))
        except OSError as e:
            found = [_unreadable(node, path, e, until_ns)]
        for op in found:
            op["process"] = f"zookeeper-{node}"
        ops.extend(found)
    return sorted(ops, key=lambda op: op["time_ns"])


def _unreadable(node: int, path: Path, error: OSError, until_ns: int) -> dict[str, Any]:
    return node_event(node, NodeEvent.LOG_UNREADABLE, until_ns, line=f"{path}: {error.strerror or error}")


def _lines(
    lines: Iterable[str], since_ns: int, until_ns: int, keep: Callable[[str], bool]
) -> Iterator[tuple[int, str, str]]:
    """(time_ns, message, line) of the timed lines in the window that ``keep`` lets through."""
    parse = _TimeParser()
    for raw in lines:
        if not keep(raw):
            continue
        match = _TIME.match(raw)
        if not match:
            continue
        time_ns = parse(match.group(1), match.group(2))
        # The line's time is its millisecond, truncated: it may have been written up to 1 ms after it.
        if time_ns + _MS_NS > since_ns and time_ns <= until_ns:
            yield time_ns, match.group(3), raw.strip()[:MAX_LINE_CHARS]


def _kafka_events(
    node: int, lines: Iterable[str], since_ns: int, until_ns: int, known: set[int], sessions: dict[str, int]
) -> Iterator[dict[str, Any]]:
    def keep(raw: str) -> bool:
        if "Session establishment complete" in raw:
            # Sessions are opened when a broker starts, whenever that was: read whatever the window.
            session = _SESSION.search(raw)
            if session:
                sessions[session.group(1)] = node
            return False
        return any(word in raw for word in _KEYWORDS)

    # The cluster's first controller (epoch 1) sees the brokers that registered before it: the others are not gone, only
    # late.
    first_controller = False
    for time_ns, message, line in _lines(lines, since_ns, until_ns, keep):
        found: list[_Found] = []
        for pattern, read in (*_KAFKA, *_STORAGE):
            match = pattern.search(message)
            if match:
                found = read(match)
                break
        else:
            if elected := _ELECTED.search(message):
                first_controller = elected.group(2) == "1"
                found = [_Found(NodeEvent.CONTROLLER_ELECTED, int(elected.group(1)))]
            elif (active := _ACTIVE.search(message)) and not first_controller:
                found = [_Found(NodeEvent.BROKER_GONE, b) for b in sorted(known - set(_ids(active.group(1))))]
        for item in found:
            # A broker's own "Session expired." is about itself, and so is what it found in its own files.
            broker = node if item.event == NodeEvent.ZK_SESSION_EXPIRED or item.event in STORAGE_EVENTS else item.broker
            yield node_event(
                node, item.event, time_ns, broker=broker, topic=item.topic, partition=item.partition, line=line
            )


def _zookeeper_events(
    node: int, lines: Iterable[str], since_ns: int, until_ns: int, sessions: Mapping[str, int]
) -> Iterator[dict[str, Any]]:
    for time_ns, message, line in _lines(lines, since_ns, until_ns, lambda raw: "session" in raw):
        for pattern, event in _ZK:
            match = pattern.search(message)
            if match and match.group(1) in sessions:
                yield node_event(node, event, time_ns, broker=sessions[match.group(1)], line=line)
                break


class _TimeParser:
    """Local time ``yyyy-MM-dd HH:mm:ss`` and milliseconds to ns, each second parsed once."""

    def __init__(self) -> None:
        self._second: str | None = None
        self._second_ns = 0

    def __call__(self, second: str, millis: str) -> int:
        if second != self._second:
            # The log's times are this machine's local time, as the history's are taken on the same machine.
            self._second_ns = int(datetime.strptime(second, "%Y-%m-%d %H:%M:%S").timestamp()) * 1_000_000_000
            self._second = second
        return self._second_ns + int(millis) * _MS_NS
