"""What each view of the console shows, built from what the poller read: plain dicts, the JSON API's bodies.

Pure: no Kafka, no files. The field names are the API's (docs/console.md).
"""

from __future__ import annotations

# The topic configs the topics view shows, as Kafka names them.
SHOWN_TOPIC_CONFIGS = (
    "min.insync.replicas",
    "retention.ms",
    "retention.bytes",
    "cleanup.policy",
    "unclean.leader.election.enable",
)


def partition_view(p: dict) -> dict:
    """One partition with what the page colours: replicas missing from the ISR, no leader, a leader that is not the
    preferred one."""
    leader, replicas, isr = p["leader"], list(p["replicas"]), list(p["isr"])
    return {
        "partition": p["partition"],
        "leader": leader,
        "replicas": replicas,
        "isr": isr,
        "missing_from_isr": [r for r in replicas if r not in isr],
        "offline": leader < 0,
        "preferred_leader": replicas[0] if replicas else None,
        "non_preferred_leader": leader >= 0 and bool(replicas) and leader != replicas[0],
        "under_replicated": len(isr) < len(replicas),
        "under_min_isr": None,
    }


def topics_view(partitions: list[dict], configs: dict[str, dict[str, dict]]) -> list[dict]:
    """Topics sorted by name, internal ones flagged; ``configs``: topic -> name -> {"value", "source"} (what
    describe-configs read)."""
    by_topic: dict[str, list[dict]] = {}
    for p in partitions:
        by_topic.setdefault(p["topic"], []).append(p)
    out = []
    for name in sorted(by_topic):
        parts = [partition_view(p) for p in sorted(by_topic[name], key=lambda p: p["partition"])]
        topic_configs = configs.get(name, {})
        min_isr = _int_or_none(topic_configs.get("min.insync.replicas", {}).get("value"))
        if min_isr is not None:
            for part in parts:
                part["under_min_isr"] = len(part["isr"]) < min_isr
        out.append(
            {
                "name": name,
                "internal": name.startswith("__"),
                "partitions": parts,
                "replication_factor": len(parts[0]["replicas"]) if parts else 0,
                "under_replicated": sum(1 for p in parts if p["under_replicated"]),
                "offline": sum(1 for p in parts if p["offline"]),
                "configs": {k: topic_configs[k] for k in SHOWN_TOPIC_CONFIGS if k in topic_configs},
            }
        )
    return out


def broker_counts(partitions: list[dict], broker_ids: list[int]) -> dict[int, dict]:
    """Per broker: partitions it leads, those of them under-replicated (Kafka's UnderReplicatedPartitions metric counts
    on the leader), and partitions it is a replica of that have no leader at all (offline)."""
    counts = {b: {"leaders": 0, "under_replicated": 0, "offline": 0, "replicas": 0} for b in broker_ids}
    for p in partitions:
        for r in p["replicas"]:
            counts.setdefault(r, {"leaders": 0, "under_replicated": 0, "offline": 0, "replicas": 0})["replicas"] += 1
            if p["leader"] < 0:
                counts[r]["offline"] += 1
        if p["leader"] >= 0:
            c = counts.setdefault(p["leader"], {"leaders": 0, "under_replicated": 0, "offline": 0, "replicas": 0})
            c["leaders"] += 1
            if len(p["isr"]) < len(p["replicas"]):
                c["under_replicated"] += 1
    return counts


# What the nodes table shows of a node's metrics (cluster/observe/metrics.py names): key -> (metric, labels).
NODE_METRICS = {
    "under_replicated": ("kafka_server_replicamanager_underreplicatedpartitions", ""),
    "produce_p99_ms": ("kafka_network_requestmetrics_totaltimems", 'quantile="0.99",request="Produce"'),
    "request_queue": ("kafka_network_requestchannel_requestqueuesize", ""),
    "network_idle": ("kafka_network_socketserver_networkprocessoravgidlepercent", ""),
    "active_controller": ("kafka_controller_kafkacontroller_activecontrollercount", ""),
    "fenced_brokers": ("kafka_controller_kafkacontroller_fencedbrokercount", ""),
    "offline_partitions": ("kafka_controller_kafkacontroller_offlinepartitionscount", ""),
}


def metrics_view(url: str, samples: list[dict] | None, error: str | None) -> dict:
    """One node's metrics as the nodes table shows them: its endpoint, the NODE_METRICS it served (a controller's only
    while it is the active one), or why it could not be read."""
    if samples is None:
        return {"url": url, "error": error}
    by_key = {(s["metric"], s["labels"]): s["value"] for s in samples}
    shown = {key: by_key[wanted] for key, wanted in NODE_METRICS.items() if wanted in by_key}
    if shown.pop("active_controller", 0) != 1:
        shown.pop("fenced_brokers", None)
        shown.pop("offline_partitions", None)
    return {"url": url, **shown}


def cluster_view(
    facts: dict,
    nodes: list[dict],
    partitions: list[dict],
    registered: list[int] | None,
    metadata_error: str | None,
    metrics: dict[str, dict] | None = None,
) -> dict:
    """``facts``: mode, versions, ids and addresses; ``nodes``: one dict per node (id, role, pid, ports, state,
    active_controller); ``registered``: the brokers the metadata lists (None when no broker answered); ``metrics``: each
    node's metrics_view, by node name (server-N, zookeeper-N)."""
    broker_ids = [n["id"] for n in nodes if n["role"] in ("broker", "broker,controller")]
    counts = broker_counts(partitions, broker_ids)
    shown = []
    for n in nodes:
        row = dict(n)
        if n["id"] in counts and "broker" in n["role"]:
            row.update(counts[n["id"]])
            row["registered"] = None if registered is None else n["id"] in registered
        if metrics and n.get("name") in metrics:
            row["metrics"] = metrics[n["name"]]
        shown.append(row)
    active = next((n["id"] for n in nodes if n.get("active_controller")), None)
    return {
        **facts,
        "active_controller": active,
        "nodes": shown,
        "under_replicated_partitions": sum(1 for p in partitions if len(p["isr"]) < len(p["replicas"])),
        "offline_partitions": sum(1 for p in partitions if p["leader"] < 0),
        "metadata_error": metadata_error,
    }


def _int_or_none(text: object) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None
