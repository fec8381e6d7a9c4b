"""The loaded history: one polars DataFrame per kind of op, every time an Int64 of nanoseconds.

The format of the file these frames come from is docs/history.md. Rows are in file order (the
order the recorder received them, which is time order within one process only), except sends,
which are in id order when ids are unique. Every frame has its columns and dtypes even when
empty, so a checker never has to ask whether a column exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl


class HistoryFormatError(ValueError):
    """A history line that is not an op: not a JSON object, a missing field, a wrong type."""


SENDS_SCHEMA = {
    "id": pl.Int64,
    "process": pl.String,
    "topic": pl.String,
    "key": pl.String,
    "value": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "outcome": pl.String,
    "error": pl.String,
    "invoke_ns": pl.Int64,
    "complete_ns": pl.Int64,
    # The transaction the write was part of (the writer's txn number; null: not transactional).
    "txn": pl.Int64,
}
READS_SCHEMA = {
    "process": pl.String,
    "group": pl.String,
    "time_ns": pl.Int64,
    "poll_seq": pl.Int64,
    "topic": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "key": pl.String,
    "value": pl.String,
    # The reader's transaction the record was consumed into (consume-transform-produce); null otherwise.
    "txn": pl.Int64,
    # As the log's (below), when the reader recorded them; the verifying consumers do not.
    "timestamp_ms": pl.Int64,
    "timestamp_type": pl.String,
    "headers": pl.String,
}
# ``cluster``: the alias of the cluster the final read read (a DR pair's primary or backup); null for a run on one
# cluster.
LOG_SCHEMA = {
    "topic": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "key": pl.String,
    "value": pl.String,
    "cluster": pl.String,
    # The record's timestamp in ms since the epoch, who set it (CreateTime: its producer; LogAppendTime: the broker),
    # and its headers as a JSON object of name to text (null: none).
    "timestamp_ms": pl.Int64,
    "timestamp_type": pl.String,
    "headers": pl.String,
}
LOG_FAILURES_SCHEMA = {"topic": pl.String, "partition": pl.Int64, "error": pl.String, "cluster": pl.String}
# One row per log-read op: which partition the final read was asked to read and what it read of it. ``ok``: read
# completely (``records`` of them, none included), from ``log_start_offset`` to ``high_watermark`` as the partition
# reported them when the read began (null in histories before they were recorded); else ``error`` says why not.
LOG_READS_SCHEMA = {
    "time_ns": pl.Int64,
    "cluster": pl.String,
    "topic": pl.String,
    "partition": pl.Int64,
    "ok": pl.Boolean,
    "records": pl.Int64,
    "log_start_offset": pl.Int64,
    "high_watermark": pl.Int64,
    "error": pl.String,
    # The topic's retention as the cluster described it at the read (retention.ms, retention.bytes, cleanup.policy; null
    # when it could not be described, and in histories before they were recorded).
    "retention_ms": pl.Int64,
    "retention_bytes": pl.Int64,
    "cleanup_policy": pl.String,
}
# One row per client the scenario declared (a ``declare`` op): its first process, its role (ops.Role), its topics and
# group, whether the scenario lets it lose acknowledged writes, and the pattern all its processes match (restarts, DR
# stints).
DECLARED_SCHEMA = {
    "time_ns": pl.Int64,
    "process": pl.String,
    "role": pl.String,
    "topics": pl.List(pl.String),
    "group": pl.String,
    "may_lose": pl.Boolean,
    "matches": pl.String,
}
# One row per phase the engine finished (``phase-end``).
PHASE_ENDS_SCHEMA = {"phase": pl.String, "time_ns": pl.Int64}
# One row per config of a group as the cluster described it (``group-config``).
GROUP_CONFIGS_SCHEMA = {"time_ns": pl.Int64, "group": pl.String, "name": pl.String, "value": pl.String}
MEMBERSHIP_SCHEMA = {
    "process": pl.String,
    "group": pl.String,
    "time_ns": pl.Int64,
    "f": pl.String,
    "topic": pl.String,
    "partition": pl.Int64,
    "lost": pl.Boolean,
}
COMMITS_SCHEMA = {
    "process": pl.String,
    "group": pl.String,
    "time_ns": pl.Int64,
    "type": pl.String,
    "topic": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "error": pl.String,
}
CLIENT_EVENTS_SCHEMA = {"process": pl.String, "time_ns": pl.Int64, "f": pl.String}
# What a fault-start op says of its fault: read from the op (history/load.py) and kept in the faults table, declared
# once here.
FAULT_START_FIELDS = {
    "fault_id": pl.Int64,
    "fault": pl.String,
    "target": pl.String,
    # broker ids are JSON ints, consumer names strings: a String list makes both strings.
    "nodes": pl.List(pl.String),
    "role": pl.String,
    # The fault type's family (ops.Family); how reports name it (null: by its nodes); a network fault's sides
    # (node labels and "clients"), whether one way only, and its drop probability.
    "family": pl.String,
    "label": pl.String,
    "sides": pl.List(pl.List(pl.String)),
    "one_way": pl.Boolean,
    "loss": pl.Float64,
}
FAULTS_SCHEMA = {
    **FAULT_START_FIELDS,
    "start_ns": pl.Int64,
    # When the fault's action was done (null in histories before it was recorded: the start stands in).
    "in_force_ns": pl.Int64,
    "stop_ns": pl.Int64,
    "ok": pl.Boolean,
    "error": pl.String,
    "undo_attempts": pl.UInt32,
}
TOPOLOGY_SCHEMA = {
    "time_ns": pl.Int64,
    "topic": pl.String,
    "partition": pl.Int64,
    "leader": pl.Int64,
    "replicas": pl.List(pl.Int64),
    "isr": pl.List(pl.Int64),
}
TOPOLOGY_ERRORS_SCHEMA = {"time_ns": pl.Int64, "error": pl.String}
PHASES_SCHEMA = {"phase": pl.String, "time_ns": pl.Int64}
ADMIN_SCHEMA = {
    "process": pl.String,
    "id": pl.Int64,
    "f": pl.String,
    "type": pl.String,
    "time_ns": pl.Int64,
    "topic": pl.String,
    "error": pl.String,
}
# Ops about the run itself (ops.EVENTS): recover-timeout, elect-leaders, pipeline-start/-exit/-stop, drained, ...
# ``leaderless`` / ``under_replicated``: a recover-timeout's partitions still without a leader, or with one but not a
# full ISR ("topic-N").
EVENTS_SCHEMA = {
    "time_ns": pl.Int64,
    "process": pl.String,
    "f": pl.String,
    "ok": pl.Boolean,
    "exit_code": pl.Int64,
    "error": pl.String,
    "drain_s": pl.Float64,
    "leaderless": pl.List(pl.String),
    "under_replicated": pl.List(pl.String),
    # fault-not-started: which fault of the schedule, and when it was due.
    "fault": pl.String,
    "at_s": pl.Float64,
    # feature-level: a Kafka feature (transaction.version) and the level the cluster had finalized for the run.
    "feature": pl.String,
    "level": pl.Int64,
    # pipeline-start: how the pipeline publishes its totals to Kafka (exactly-once or at-least-once).
    "publish": pl.String,
}
# One row per controller op: the active controller as the engine saw it (null: none known), at each change.
CONTROLLERS_SCHEMA = {"time_ns": pl.Int64, "controller": pl.Int64}
# One row per metric sample a scrape of a node's JMX exporter returned: the Prometheus name, its labels as the exporter
# wrote them (``request="Produce",quantile="0.99"``; empty when none) and the value.
METRICS_SCHEMA = {
    "time_ns": pl.Int64,
    "node": pl.Int64,
    "node_name": pl.String,
    "metric": pl.String,
    "labels": pl.String,
    "value": pl.Float64,
}
# One row per scrape that failed (a node down, paused, or cut off): which node and why.
METRICS_ERRORS_SCHEMA = {"time_ns": pl.Int64, "node": pl.Int64, "node_name": pl.String, "error": pl.String}
# One row per node-event op: what a node's log said (``fenced``, ``unfenced``, ...) about which broker or partition, and
# when.
NODE_EVENTS_SCHEMA = {
    "time_ns": pl.Int64,
    "node": pl.Int64,
    "event": pl.String,
    "broker": pl.Int64,
    "topic": pl.String,
    "partition": pl.Int64,
    "line": pl.String,
}
CONFIG_ENTRY = pl.Struct({"name": pl.String, "value": pl.String})
# One row per client-config op: which client library a worker ran, with which settings, and its own log.
OFFSET_ENTRY = pl.Struct({"topic": pl.String, "partition": pl.Int64, "offset": pl.Int64})
# One row per transaction a transactional producer began (``txn`` ops): its writer and number, what the writer asked for
# at its end (``end``: commit or abort; null: it never got there), how that ended (``outcome``: ok, fail, info; null:
# never completed, the writer was killed), and the input offsets a consume-transform-produce worker sent into it.
TXNS_SCHEMA = {
    "process": pl.String,
    "txn": pl.Int64,
    "transactional_id": pl.String,
    "end": pl.String,
    "outcome": pl.String,
    "error": pl.String,
    "invoke_ns": pl.Int64,
    "end_ns": pl.Int64,
    "complete_ns": pl.Int64,
    "offsets": pl.List(OFFSET_ENTRY),
}
# A client run on a host (workloads/verifiable/on_host.py) names it, with its clock's offset from failsafe's, taken off
# its times, and that offset's error bound: how far one of its times may still be from failsafe's clock (null: it ran
# where failsafe runs).
CLIENTS_SCHEMA = {
    "process": pl.String,
    "time_ns": pl.Int64,
    "client": pl.String,
    "client_version": pl.String,
    "config": pl.List(CONFIG_ENTRY),
    "log": pl.String,
    "host": pl.String,
    "clock_offset_ns": pl.Int64,
    "clock_error_ns": pl.Int64,
}
# One row per record a share-poll acquired (delivery_count: 1 the first time the group delivered it, then one more each
# time).
SHARE_DELIVERIES_SCHEMA = {
    "process": pl.String,
    "group": pl.String,
    "time_ns": pl.Int64,
    "topic": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "key": pl.String,
    "value": pl.String,
    "delivery_count": pl.Int64,
}
# One row per record a share-ack acknowledged: ack is accept, release or reject; type ok (the broker took it), fail (it
# refused it: error) or info (no answer known).
SHARE_ACKS_SCHEMA = {
    "process": pl.String,
    "group": pl.String,
    "time_ns": pl.Int64,
    "type": pl.String,
    "error": pl.String,
    "topic": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
    "ack": pl.String,
}

FRAME_SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "sends": SENDS_SCHEMA,
    "reads": READS_SCHEMA,
    "log": LOG_SCHEMA,
    "log_failures": LOG_FAILURES_SCHEMA,
    "membership": MEMBERSHIP_SCHEMA,
    "commits": COMMITS_SCHEMA,
    "client_events": CLIENT_EVENTS_SCHEMA,
    "faults": FAULTS_SCHEMA,
    "topology": TOPOLOGY_SCHEMA,
    "topology_errors": TOPOLOGY_ERRORS_SCHEMA,
    "phases": PHASES_SCHEMA,
    "admin": ADMIN_SCHEMA,
    "events": EVENTS_SCHEMA,
    "clients": CLIENTS_SCHEMA,
    "controllers": CONTROLLERS_SCHEMA,
    "txns": TXNS_SCHEMA,
    "share_deliveries": SHARE_DELIVERIES_SCHEMA,
    "share_acks": SHARE_ACKS_SCHEMA,
    "metrics": METRICS_SCHEMA,
    "metrics_errors": METRICS_ERRORS_SCHEMA,
    "node_events": NODE_EVENTS_SCHEMA,
    "log_reads": LOG_READS_SCHEMA,
    "declared": DECLARED_SCHEMA,
    "phase_ends": PHASE_ENDS_SCHEMA,
    "group_configs": GROUP_CONFIGS_SCHEMA,
}


def empty_frame(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=FRAME_SCHEMAS[name])


@dataclass(frozen=True)
class History:
    """One run's history, split by kind of op (columns: the *_SCHEMA constants above).

    sends: one row per send id (invoke joined with its completion; outcome null when the send
        never completed). reads: one row per record returned by a poll ok, poll_seq numbering a
        process's polls 0, 1, 2... in file order; null values filled from the log where the log
        has that offset. log: records of log-read ok. membership: one row per partition of an
        assign or revoke. commits: one row per committed offset. faults: one row per fault_id
        (start joined with its first successful stop; stop_ns null while no undo succeeded;
        undo_attempts counts every fault-stop). topology: one row per partition per sample.
        events: the run's own ops (pipeline start, exit and stop, simulator exit, drained, ...).
        clients: one row per client-config op (client library, version, settings, log path).
        controllers: one row per controller op (the active controller's node id, null while none is known).
        txns: one row per transaction (invoke of a txn op joined with its completion, if any).
        share_deliveries: one row per record of a share-poll; share_acks: one row per record of a share-ack.
        metrics: one row per sample of a node's metrics scrape; metrics_errors: one row per scrape that failed.
        node_events: one row per node-event op (what a node's log said, read after the run).
        log_reads: one row per log-read op (a partition the final read read, completely or not, empty ones included).
        declared: one row per client the scenario declared. phase_ends: one row per phase the engine finished.
        group_configs: one row per config of a group, as the cluster described it.
    """

    sends: pl.DataFrame
    reads: pl.DataFrame
    log: pl.DataFrame
    log_failures: pl.DataFrame
    membership: pl.DataFrame
    commits: pl.DataFrame
    client_events: pl.DataFrame
    faults: pl.DataFrame
    topology: pl.DataFrame
    topology_errors: pl.DataFrame
    phases: pl.DataFrame
    admin: pl.DataFrame
    op_count: int
    events: pl.DataFrame = field(default_factory=lambda: empty_frame("events"))
    clients: pl.DataFrame = field(default_factory=lambda: empty_frame("clients"))
    controllers: pl.DataFrame = field(default_factory=lambda: empty_frame("controllers"))
    txns: pl.DataFrame = field(default_factory=lambda: empty_frame("txns"))
    share_deliveries: pl.DataFrame = field(default_factory=lambda: empty_frame("share_deliveries"))
    share_acks: pl.DataFrame = field(default_factory=lambda: empty_frame("share_acks"))
    metrics: pl.DataFrame = field(default_factory=lambda: empty_frame("metrics"))
    metrics_errors: pl.DataFrame = field(default_factory=lambda: empty_frame("metrics_errors"))
    node_events: pl.DataFrame = field(default_factory=lambda: empty_frame("node_events"))
    log_reads: pl.DataFrame = field(default_factory=lambda: empty_frame("log_reads"))
    declared: pl.DataFrame = field(default_factory=lambda: empty_frame("declared"))
    phase_ends: pl.DataFrame = field(default_factory=lambda: empty_frame("phase_ends"))
    group_configs: pl.DataFrame = field(default_factory=lambda: empty_frame("group_configs"))

    @classmethod
    def empty(cls) -> History:
        return cls(**{name: empty_frame(name) for name in FRAME_SCHEMAS}, op_count=0)
