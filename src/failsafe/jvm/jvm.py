"""Command lines for Kafka's JVMs, as kafka-run-class.sh builds them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from failsafe.jvm.java import Java
from failsafe.jvm.kafka import KafkaDist, cache_root
from failsafe.jvm.logging_config import logging_jvm_option, write_logging_configs

# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
SERVER_JVM_OPTS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
# zookeeper-server-start.sh's main class: standalone with one server, a quorum peer with server.N lines.
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# kafka-run-class.sh gives tools a 256M heap unless KAFKA_HEAP_OPTS says otherwise.
TOOL_HEAP = "256M"


def tools_logging_option(dist: KafkaDist) -> str:
    config_dir = cache_root() / "config"
    write_logging_configs(config_dir)
    return logging_jvm_option(config_dir, log4j2=dist.uses_log4j2, tools=True)


def server_command(
    java: Java, dist: KafkaDist, properties: Path, logging_dir: Path, heap: str, jvm_options: Sequence[str] = ()
) -> list[str]:
    """A Kafka node as kafka-server-start.sh starts it."""
    return _node_command(java, dist, "kafka.Kafka", properties, logging_dir, heap, jvm_options)


def zookeeper_command(
    java: Java, dist: KafkaDist, properties: Path, logging_dir: Path, heap: str, jvm_options: Sequence[str] = ()
) -> list[str]:
    """A ZooKeeper node as zookeeper-server-start.sh starts it, from the ZooKeeper jar Kafka 3.9 depends on."""
    return _node_command(java, dist, ZOOKEEPER_MAIN, properties, logging_dir, heap, jvm_options)


def _node_command(
    java: Java,
    dist: KafkaDist,
    main_class: str,
    properties: Path,
    logging_dir: Path,
    heap: str,
    jvm_options: Sequence[str],
) -> list[str]:
    return [
        str(java.executable),
        f"-Xmx{heap}",
        f"-Xms{heap}",
        *SERVER_JVM_OPTS,
        *jvm_options,
        logging_jvm_option(logging_dir, log4j2=dist.uses_log4j2, tools=False),
        "-cp",
        dist.classpath,
        main_class,
        str(properties),
    ]


def tool_command(java: Java, dist: KafkaDist, main_class: str, args: list[str], heap: str = TOOL_HEAP) -> list[str]:
    return [
        str(java.executable),
        f"-Xmx{heap}",
        "-Djava.awt.headless=true",
        tools_logging_option(dist),
        "-cp",
        dist.classpath,
        main_class,
        *args,
    ]
