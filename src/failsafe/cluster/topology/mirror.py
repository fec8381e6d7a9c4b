"""MirrorMaker 2 between the clusters of a DR pair: its mm2.properties, its command, its lag (docs/failover.md).

failsafe runs MirrorMaker in dedicated mode from Kafka's own jars (jvm/mirror.py), one process per
flow (``primary->backup``), started with ``--clusters TARGET`` so it drives only the herder that
writes into the target, as MirrorMaker is deployed beside the cluster it writes to. Topics are
renamed by the DefaultReplicationPolicy: ``orders`` on the primary is ``primary.orders`` on the
backup. Every internal topic's replication factor is fitted to the cluster it lives on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException

from failsafe.errors import FailsafeError, UserError
from failsafe.jvm.java import Java
from failsafe.jvm.kafka import KafkaDist
from failsafe.jvm.logging_config import logging_jvm_option, write_logging_configs
from failsafe.jvm.mirror import MIRROR_MAKER_MAIN, mirror_dist
from failsafe.tools.admin import DEFAULT_TIMEOUT_S, fetch_metadata, log_end_offsets, new_admin

MIRROR_HEAP = "512M"
SEPARATOR = "."  # replication.policy.separator's default
# Internal topics (and mirrored ones) get at most this replication factor, as Kafka's defaults ask.
MAX_REPLICATION_FACTOR = 3
# MirrorMaker finds new topics and groups every 10 minutes by default; a scenario creates both just
# before it starts, so failsafe looks every 5 s. Written first: a user's --set wins.
DISCOVERY = {"refresh.topics.interval.seconds": "5", "refresh.groups.interval.seconds": "5"}
# The intervals a DR run's RPO and RTO depend on, with MirrorMaker's defaults (MirrorCheckpointConfig,
# MirrorSourceConfig, and Connect's worker config): what docs/failover.md varies.
# MirrorMaker counts its own intervals in seconds, and ignores a key it does not know (an *.interval.ms is silently
# unused). offset.flush.interval.ms is Connect's, in ms: an offset sync held back while another was in flight (a
# burst, a backlog) is only sent at the next offset flush, so the translation lags by up to that much when the
# source goes quiet.
TIMING_DEFAULTS = {
    "emit.checkpoints.interval.seconds": "60",
    "sync.group.offsets.interval.seconds": "60",
    "offset.lag.max": "100",
    "offset.flush.interval.ms": "60000",
}


# Connect worker settings: a dedicated MirrorMaker takes them from the target cluster's prefix only (a top-level
# offset.flush.interval.ms is logged nowhere and has no effect), so failsafe writes them as TARGET.key.
WORKER_SETTINGS = frozenset({"offset.flush.interval.ms", "offset.flush.timeout.ms"})


def translation_delay_s(settings: Mapping[str, str]) -> float:
    """The longest a committed offset takes to reach the target as a synced one once the source is quiet: the
    held-back offset sync waits for an offset flush, the checkpoint for its interval, the sync for its own."""
    merged = {**TIMING_DEFAULTS, **settings}
    return (
        float(merged["offset.flush.interval.ms"]) / 1000
        + float(merged["emit.checkpoints.interval.seconds"])
        + float(merged["sync.group.offsets.interval.seconds"])
    )


class MirrorError(FailsafeError):
    """MirrorMaker could not start, or is not mirroring."""


@dataclass(frozen=True)
class MirrorFlow:
    """One direction of mirroring between two clusters known by alias."""

    source: str
    target: str

    @property
    def name(self) -> str:
        return f"{self.source}-{self.target}"

    @property
    def arrow(self) -> str:
        return f"{self.source}->{self.target}"

    def remote_topic(self, topic: str) -> str:
        """What the DefaultReplicationPolicy names ``topic`` of the source on the target."""
        return f"{self.source}{SEPARATOR}{topic}"


def parse_flow(text: str, aliases: tuple[str, ...]) -> MirrorFlow:
    """``primary->backup`` (or ``primary-backup``), both aliases of the pair."""
    parts = re.split(r"->|-", text.replace(" ", ""), maxsplit=1)
    if len(parts) != 2 or not all(p in aliases for p in parts) or parts[0] == parts[1]:
        raise UserError(
            f"{text!r} is not a flow between {' and '.join(aliases)}: write SOURCE->TARGET, e.g. "
            f"{aliases[0]}->{aliases[1]}"
        )
    return MirrorFlow(parts[0], parts[1])


def fitted_replication(brokers: int) -> int:
    return max(1, min(MAX_REPLICATION_FACTOR, brokers))


def mirror_properties(
    flow: MirrorFlow,
    bootstraps: Mapping[str, str],
    brokers: Mapping[str, int],
    topics: str,
    settings: Mapping[str, str] = (),
) -> str:  # type: ignore[assignment]
    """mm2.properties for one flow: the clusters, the flow and its topics, checkpoints and synced group offsets, and
    replication factors fitted to the clusters (internal topics default to 3, which a 1-broker backup cannot hold)."""
    target_rf, source_rf = fitted_replication(brokers[flow.target]), fitted_replication(brokers[flow.source])
    aliases = [flow.source, flow.target]
    lines = [
        "# Written by failsafe (cluster/topology/mirror.py); MirrorMaker 2 in dedicated mode, one flow.",
        f"clusters = {', '.join(aliases)}",
        *(f"{alias}.bootstrap.servers = {bootstraps[alias]}" for alias in aliases),
        f"{flow.arrow}.enabled = true",
        f"{flow.arrow}.topics = {topics}",
        f"{flow.target}->{flow.source}.enabled = false",
        f"{flow.target}->{flow.source}.emit.heartbeats.enabled = false",
        "emit.checkpoints.enabled = true",
        "sync.group.offsets.enabled = true",
        "groups = .*",
        f"replication.factor = {target_rf}",
        f"checkpoints.topic.replication.factor = {target_rf}",
        f"heartbeats.topic.replication.factor = {target_rf}",
        # Offset syncs live on the source by default (offset-syncs.topic.location = source).
        f"offset-syncs.topic.replication.factor = {source_rf}",
        f"config.storage.replication.factor = {target_rf}",
        f"offset.storage.replication.factor = {target_rf}",
        f"status.storage.replication.factor = {target_rf}",
    ]
    chosen = {**DISCOVERY, **dict(settings)}
    lines += [
        f"{flow.target}.{key} = {value}" if key in WORKER_SETTINGS else f"{key} = {value}"
        for key, value in chosen.items()
    ]
    return "\n".join(lines) + "\n"


def mirror_command(java: Java, dist: KafkaDist, properties: Path, logging_dir: Path, target: str) -> list[str]:
    """connect-mirror-maker.sh's command: MirrorMaker's main class on its own classpath, driving flows into
    ``target``."""
    write_logging_configs(logging_dir)
    return [
        str(java.executable),
        f"-Xmx{MIRROR_HEAP}",
        f"-Xms{MIRROR_HEAP}",
        "-XX:+UseG1GC",
        "-Djava.awt.headless=true",
        logging_jvm_option(logging_dir, log4j2=dist.uses_log4j2, tools=False),
        "-cp",
        dist.classpath,
        MIRROR_MAKER_MAIN,
        str(properties),
        "--clusters",
        target,
    ]


def prepare_mirror(
    flow: MirrorFlow,
    bootstraps: Mapping[str, str],
    topics: list[str],
    settings: Mapping[str, str],
    work: Path,
    java: Java,
    kafka_version: str,
) -> list[str]:
    """Write ``work``/mm2.properties for ``flow`` (replication factors fitted to both clusters as they are now) and
    return the command that runs MirrorMaker on it: the one preparation of ``mirror start`` and of a DR run."""
    brokers = {alias: broker_count(bootstraps[alias]) for alias in (flow.source, flow.target)}
    work.mkdir(parents=True, exist_ok=True)
    properties = work / "mm2.properties"
    properties.write_text(mirror_properties(flow, bootstraps, brokers, "|".join(topics), settings))
    return mirror_command(java, mirror_dist(kafka_version), properties.resolve(), work.resolve(), flow.target)


def broker_count(bootstrap: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> int:
    return len(fetch_metadata(new_admin(bootstrap), bootstrap, timeout_s).brokers)


def partitions_of(bootstrap: str, topics: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, int]:
    """Each existing topic of ``topics`` with its partition count (missing ones left out)."""
    metadata = fetch_metadata(new_admin(bootstrap), bootstrap, timeout_s)
    return {
        t: len(metadata.topics[t].partitions)
        for t in topics
        if t in metadata.topics and metadata.topics[t].error is None
    }


@dataclass(frozen=True)
class PartitionLag:
    topic: str  # on the source
    partition: int
    source_end: int | None  # None: the source did not answer
    target_end: int | None  # None: the mirrored partition does not exist (yet)

    @property
    def lag(self) -> int | None:
        return None if self.source_end is None or self.target_end is None else self.source_end - self.target_end


def mirror_lag(
    flow: MirrorFlow, bootstraps: Mapping[str, str], topics: list[str], timeout_s: float = DEFAULT_TIMEOUT_S
) -> list[PartitionLag]:
    """For each partition of ``topics`` on the source: its log end there and on the target's mirrored topic.

    Log end offsets compare only while the mirrored topic holds every record from offset 0 once (no
    retention, no duplicate from a restarted MirrorMaker): a DR run reads the logs to count instead."""
    source, target = bootstraps[flow.source], bootstraps[flow.target]
    try:
        counts = partitions_of(source, topics, timeout_s)
    except FailsafeError:
        counts = {}
    mirrored = partitions_of(target, [flow.remote_topic(t) for t in topics], timeout_s)
    wanted = [(t, p) for t in topics for p in range(counts.get(t) or mirrored.get(flow.remote_topic(t), 0))]
    try:
        source_ends: dict = log_end_offsets(source, [tp for tp in wanted if tp[0] in counts], timeout_s)
    except (FailsafeError, KafkaException):
        source_ends = {}
    present = [(flow.remote_topic(t), p) for t, p in wanted if flow.remote_topic(t) in mirrored]
    target_ends = log_end_offsets(target, present, timeout_s) if present else {}
    return [PartitionLag(t, p, source_ends.get((t, p)), target_ends.get((flow.remote_topic(t), p))) for t, p in wanted]


def mirroring(lags: list[PartitionLag]) -> bool:
    """Ready: every partition of the source's topics has its mirrored partition on the target, with a lag to read."""
    return bool(lags) and all(lag.lag is not None for lag in lags)


def settings_not_applied(log: Path, settings: Mapping[str, str]) -> list[str]:
    """The ``settings`` MirrorMaker is not running with, as ``key=value``: no config it logged at start has that key
    with that value. It ignores unknown keys silently (a misspelt interval leaves its default in force under another
    name), and reads some known ones only under a prefix (a worker's, like offset.flush.interval.ms)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    printed: dict[str, set[str]] = {}
    for key, value in re.findall(r"^\t([A-Za-z0-9_.\-]+) = (.*)$", text, re.MULTILINE):
        printed.setdefault(key, set()).add(value.strip())

    def applied(key: str, value: str) -> bool:
        unflowed = key.split("->", 1)[-1]
        names = {key, unflowed, unflowed.split(".", 1)[-1]}
        return any(str(value) in printed.get(name, ()) for name in names)

    return [f"{key}={value}" for key, value in settings.items() if not applied(key, value)]
