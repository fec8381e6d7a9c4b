"""Kafka Streams from Kafka's own jars: ``kafka-streams`` (with kafka-clients and RocksDB) of a Kafka version, resolved
through the same pom (its ``streams`` profile) into ``kafka-<version>/streams-libs`` beside the broker's jars.

An app scenario's Kafka Streams application runs on this classpath (``{streams_classpath}`` in its command,
scenarios/kinds/app): the Streams release of the cluster's Kafka, as a user's build would pin it.
"""

from __future__ import annotations

from pathlib import Path

from failsafe.errors import ProvisionError
from failsafe.jvm.kafka import KafkaDist, cache_root, check_supported, resolve_artifacts

_RESOLVED_MARKER = ".streams-resolved"


def resolve_streams(version: str, *, quiet: bool = True) -> KafkaDist:
    """Resolve kafka-streams of that Kafka version from Maven Central into the cache (idempotent)."""
    check_supported(version)
    home: Path = cache_root() / f"kafka-{version}"
    if not (home / _RESOLVED_MARKER).is_file():
        libs = resolve_artifacts(
            version, home, "streams-libs", "Kafka Streams", ("-Dkafka.artifacts=streams",), quiet=quiet
        )
        if not any(libs.glob("kafka-streams-*.jar")):
            raise ProvisionError(f"Maven resolved no kafka-streams jar for Kafka {version} into {libs}")
        (home / _RESOLVED_MARKER).write_text(version + "\n")
    return KafkaDist(version, home / "streams-libs")
