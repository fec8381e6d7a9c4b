"""Kafka's jars and Java: resolve them from Maven Central, cache them, find them."""

from __future__ import annotations

from failsafe.jvm.java import Java, find_java
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, KafkaDist, resolve_kafka

__all__ = ["DEFAULT_KAFKA_VERSION", "Java", "KafkaDist", "find_java", "resolve_kafka"]
