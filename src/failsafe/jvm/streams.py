"""Kafka Streams from Kafka's own jars: ``kafka-streams`` (with kafka-clients and RocksDB) of a Kafka version, resolved
through the same pom (its ``streams`` profile) into ``kafka-<version>/streams-libs`` beside the broker's jars.

An app scenario's Kafka Streams application runs on this classpath (``{streams_classpath}`` in its command,
scenarios/kinds/app): the Streams release of the cluster's Kafka, as a user's build would pin it.
"""

from __future__ import annotations

from failsafe.jvm.kafka import KafkaDist, resolve_beside


def resolve_streams(version: str, *, quiet: bool = True) -> KafkaDist:
    """Resolve kafka-streams of that Kafka version from Maven Central into the cache (idempotent)."""
    return resolve_beside(version, "streams", "streams-libs", "Kafka Streams", "kafka-streams-*.jar", quiet=quiet)
