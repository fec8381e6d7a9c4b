"""Tiered storage (KIP-405) on a failsafe cluster (failsafe up --tiered-storage, docs/tiered-storage.md).

Every broker runs Kafka's own ``LocalTieredStorage`` (jvm/tiered.py) as its RemoteStorageManager, all of them on one
directory, ``DIR/remote-store``: the remote tier, shared as an object store is. That directory is a disk layer of its
own (failsafe.disk; its backing directory ``DIR/remote-store.disk``), so the remote store can fail, fill up, slow down
or lose what it did not sync (faults/remote_store.py) while the brokers' own disks stay healthy. Remote log metadata
goes through Kafka's default TopicBasedRemoteLogMetadataManager (the ``__remote_log_metadata`` topic), over the
brokers' client listener.

What a cluster gets besides: the remote log manager's task every second (default 30 s) and the retention check every
second (default 5 min), from a second after a broker starts (``log.initial.task.delay.ms``, default 30 s), so a topic
with small segments and a short ``local.retention.ms`` moves its data to the tier within seconds, on a broker that was
just restarted too. A topic is tiered by its own ``remote.storage.enable=true`` (``TIERED_TOPIC`` is such a topic's
settings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from failsafe import disk
from failsafe.cluster.nodes import disks
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir
from failsafe.jvm.kafka import KafkaDist
from failsafe.jvm.tiered import LOCAL_TIERED_STORAGE, RemoteStorageJar, resolve_remote_storage

REMOTE_STORE = "remote-store"
# Where LocalTieredStorage keeps its tree, under rsm.config.dir.
STORE_TREE = "kafka-tiered-storage"
TOPIC_ID = "x" * 22  # a topic id's length in a directory name: 16 bytes, URL-safe base64 without padding
# A topic whose closed segments move to the tier within seconds: segments roll every second and stay on the broker's
# disk 2 s after they are copied (segment.bytes cannot go below 1 MB; segment.ms rolls it on the next append).
TIERED_TOPIC = {"remote.storage.enable": "true", "local.retention.ms": "2000", "segment.ms": "1000"}


def remote_dir(root: Path) -> Path:
    """The remote store as the brokers see it: the layer's mountpoint."""
    return root / REMOTE_STORE


def node_properties(spec: ClusterSpec, node: NodeSpec, root: Path) -> dict[str, str]:
    """What a node of a tiered cluster adds to its properties (the cluster's profile and --override come after): a
    controller only the switch (it refuses a topic with remote.storage.enable unless the system is enabled), a broker
    its remote log manager too."""
    if not node.is_broker:
        return {"remote.log.storage.system.enable": "true"}
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "rsm.config.dir": str(remote_dir(root.resolve())),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": str(min(3, spec.brokers)),
        "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
        "remote.log.manager.task.interval.ms": "1000",
        "log.retention.check.interval.ms": "1000",
        "log.initial.task.delay.ms": "1000",
    }


def broker_dist(dist: KafkaDist) -> tuple[KafkaDist, RemoteStorageJar]:
    """The brokers' jars with LocalTieredStorage after Kafka's own (resolved on first use)."""
    jar = resolve_remote_storage(dist.version)
    return KafkaDist(dist.version, dist.libs_dir, (*dist.extra_jars, *jar.paths)), jar


def ensure_mounted(cdir: ClusterDir) -> None:
    """Mount the remote store's layer unless it is mounted (its backing directory made the first time), as a node's."""
    disks.ensure_layer(cdir, REMOTE_STORE, remote_dir(cdir.root))


def store_layer(root: Path) -> disk.DiskLayer | None:
    """The remote store's layer when it is tracked, else None (a cluster without tiered storage)."""
    return disks.layer_named(root, REMOTE_STORE)


def remote_segments(root: Path, topic_ids: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """What the remote tier holds now, per partition (TOPIC-P): its segments and bytes, read from LocalTieredStorage's
    tree (one directory per partition, TOPIC-P-TOPICID, with OFFSET-UUID.log and its indexes per segment). With
    ``topic_ids`` (TOPIC-P to its topic's id), only what belongs to those topics, not to a deleted topic of that
    name."""
    tree = remote_dir(root) / STORE_TREE
    held: dict[str, dict[str, Any]] = {}
    if not tree.is_dir():
        return held
    for part in sorted(p for p in tree.iterdir() if p.is_dir()):
        name = part.name[: -len(TOPIC_ID) - 1]  # TOPIC-P, without "-" and the topic id (base64: it may hold "-")
        if topic_ids is not None and topic_ids.get(name) != part.name[-len(TOPIC_ID) :]:
            continue
        logs = sorted(part.glob("*.log"))
        entry = held.setdefault(name, {"segments": 0, "bytes": 0, "base_offsets": []})
        entry["segments"] += len(logs)
        entry["bytes"] += sum(f.stat().st_size for f in logs)
        entry["base_offsets"].extend(sorted(int(f.name.split("-", 1)[0]) for f in logs))
    return held


def topic_ids(root: Path, spec: ClusterSpec) -> dict[str, str]:
    """Each partition (TOPIC-P) the brokers hold now, to its topic's id (its partition.metadata, ``topic_id: ID``)."""
    ids: dict[str, str] = {}
    for node in spec.brokers_nodes():
        for meta in sorted((root / f"kafka-{node.node_id}").glob("*-*/partition.metadata")):
            for line in meta.read_text(errors="replace").splitlines():
                if line.startswith("topic_id:"):
                    ids[meta.parent.name] = line.split(":", 1)[1].strip()
    return ids


def local_first_offsets(root: Path, spec: ClusterSpec) -> dict[str, dict[int, int]]:
    """Per partition (TOPIC-P) that the tier holds, each broker's first offset on its own disk (the base offset of its
    first local segment), for the brokers that hold the partition."""
    firsts: dict[str, dict[int, int]] = {}
    for partition in remote_segments(root, topic_ids(root, spec)):
        for node in spec.brokers_nodes():
            logs = sorted((root / f"kafka-{node.node_id}" / partition).glob("*.log"))
            if logs:
                firsts.setdefault(partition, {})[node.node_id] = int(logs[0].name.split(".")[0])
    return firsts


def local_log_starts(root: Path, spec: ClusterSpec) -> dict[str, int]:
    """Per partition (TOPIC-P) that the tier holds, the lowest offset any broker still holds on its own disk (the lowest
    first local offset over the replicas): what is below it is in the remote tier only."""
    return {p: min(by_broker.values()) for p, by_broker in local_first_offsets(root, spec).items()}
