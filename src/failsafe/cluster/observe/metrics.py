"""Each node's metrics, as Prometheus's JMX exporter serves them: the agent's configuration, where each
node serves it, and reading it back.

Every Kafka and ZooKeeper node of a cluster made with metrics on (the default) runs with the agent
(jvm/jmx_exporter.py) on a loopback port of its own, ``127.0.0.1:<metrics port>/metrics``. The
configuration below selects what a failover shows: under-replicated, under-min-ISR and offline
partitions, ISR shrinks and expands, leader elections (unclean and from eligible leader replicas),
the active controller, fenced and active brokers, produce and fetch latencies, request queues and
idle network and request-handler threads, the KRaft quorum's view, and the JVM's GC. A user's own
Prometheus can scrape the same endpoints (``failsafe status`` lists them; docs/metrics.md).
"""

from __future__ import annotations

import http.client
import math
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.jvm.jmx_exporter import agent_option, exporter_agent

CONFIG_NAME = "jmx-exporter.yaml"
SCRAPE_TIMEOUT_S = 2.0
# What failsafe records of a scrape: the exporter's own rules name these; the agent's JVM metrics other than GC are left
# out.
RECORDED_PREFIXES = ("kafka_", "jvm_gc_collection_seconds", "zookeeper_")

# The agent's configuration (jmx_exporter's YAML). includeObjectNames keeps a scrape to the MBeans listed (each scrape
# reads every MBean it selects); the rules name what they select after Kafka's own MBean names, lower-cased:
# kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions ->
# kafka_server_replicamanager_underreplicatedpartitions.
EXPORTER_CONFIG = r"""# Written by failsafe (src/failsafe/cluster/observe/metrics.py): what each node's Prometheus JMX exporter serves.
lowercaseOutputName: true
lowercaseOutputLabelNames: true
includeObjectNames:
  - "kafka.server:type=ReplicaManager,name=*"
  - "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"
  - "kafka.server:type=SessionExpireListener,name=*"
  - "kafka.server:type=raft-metrics"
  - "kafka.controller:type=KafkaController,name=*"
  - "kafka.controller:type=ControllerStats,name=*"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=FetchConsumer"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=FetchFollower"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Metadata"
  - "kafka.network:type=RequestChannel,name=RequestQueueSize"
  - "kafka.network:type=RequestChannel,name=ResponseQueueSize"
  - "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent"
  - "org.apache.ZooKeeperService:*"
rules:
  # Request latencies: one series per request and quantile (the 50th, 99th and 99.9th percentiles).
  - pattern: 'kafka.network<type=RequestMetrics, name=TotalTimeMs, request=(\w+)><>(50|99|999)thPercentile'
    name: kafka_network_requestmetrics_totaltimems
    type: GAUGE
    labels:
      request: "$1"
      quantile: "0.$2"
  - pattern: 'kafka.network<type=RequestMetrics, name=TotalTimeMs, request=(\w+)><>Count'
    name: kafka_network_requestmetrics_totaltimems_count
    type: GAUGE
    labels:
      request: "$1"
  # The KRaft quorum as a node sees it (Kafka's own metrics, attribute names with dashes).
  - pattern: 'kafka.server<type=raft-metrics><>(current-leader|current-epoch|current-state|high-watermark)'
    name: kafka_server_raft_metrics_$1
    type: GAUGE
  # Gauges (Value), and meters and timers as their count and one-minute rate.
  - pattern: 'kafka.(\w+)<type=(.+), name=(.+)><>Value'
    name: kafka_$1_$2_$3
    type: GAUGE
  - pattern: 'kafka.(\w+)<type=(.+), name=(.+)><>Count'
    name: kafka_$1_$2_$3_count
    type: GAUGE
  - pattern: 'kafka.(\w+)<type=(.+), name=(.+)><>OneMinuteRate'
    name: kafka_$1_$2_$3_oneminuterate
    type: GAUGE
  # ZooKeeper's own server (ZooKeeper mode): outstanding requests, latency, alive connections.
  - pattern: 'org.apache.ZooKeeperService<name0=(.+)><>(OutstandingRequests|AvgRequestLatency|MaxRequestLatency|NumAliveConnections)'
    name: zookeeper_$2
    type: GAUGE
"""


def config_file(root: Path) -> Path:
    return root / "metrics" / CONFIG_NAME


def write_config(root: Path) -> Path:
    """The agent's configuration in the cluster directory (``DIR/metrics/jmx-exporter.yaml``), rewritten at each
    start."""
    path = config_file(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written only when it differs, and whole (a rename): a running node's agent never reads half a file.
    if not path.is_file() or path.read_text() != EXPORTER_CONFIG:
        partial = path.with_name(path.name + ".partial")
        partial.write_text(EXPORTER_CONFIG)
        partial.replace(path)
    return path


def jvm_option(root: Path, spec: ClusterSpec, node: NodeSpec) -> str:
    """The ``-javaagent`` option node ``node`` starts with (a ProvisionError saying how to resolve the agent when
    'failsafe setup' has not)."""
    return agent_option(exporter_agent(), node.client_address, spec.metrics_port(node), write_config(root))


def endpoint(spec: ClusterSpec, node: NodeSpec) -> str:
    return f"http://{node.client_address}:{spec.metrics_port(node)}/metrics"


def endpoints(spec: ClusterSpec) -> dict[NodeSpec, str]:
    """Every node's metrics URL (empty for a cluster made without metrics)."""
    if not spec.metrics:
        return {}
    return {n: endpoint(spec, n) for n in spec.nodes()}


class ScrapeError(Exception):
    """A node's endpoint answered nothing usable: why, in one line."""


def parse(text: str) -> list[dict]:
    """The samples failsafe records of an exposition (RECORDED_PREFIXES): ``{"metric", "labels", "value"}``, NaN as
    None."""
    samples = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.startswith(RECORDED_PREFIXES):
                continue
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            value = None if math.isnan(s.value) else s.value
            samples.append({"metric": s.name, "labels": labels, "value": value})
    return samples


def scrape(url: str, timeout_s: float = SCRAPE_TIMEOUT_S) -> list[dict]:
    """One scrape of ``url``; ScrapeError when the node is down, paused past the timeout, or serves something else."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - a loopback URL failsafe made
            text = response.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise ScrapeError(f"{url}: {reason}") from None
    try:
        return parse(text)
    except ValueError as e:
        raise ScrapeError(f"{url}: not Prometheus text: {e}") from None
