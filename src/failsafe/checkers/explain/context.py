"""What surrounds an anomaly in the history: the send and reads of a value, leader changes, faults, phase, client
settings.

Pure lookups for checkers/explain/sentences.py. Times leave here as seconds since the run's first op,
rounded to 0.1 s, because that is how a reader places them on the report's plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from failsafe.checkers.measure.storage import AFTER_S as STORAGE_AFTER_S
from failsafe.history.model import History
from failsafe.history.ops import STORAGE_EVENTS, Family, Op, OpType, Target

# (name shown, librdkafka's name, Java's name, librdkafka's default, Java's default). librdkafka
# caps max.in.flight at 5 with idempotence; its own default is 1000000.
PRODUCER_SETTINGS = (
    ("acks", "acks", "acks", "all", "all"),
    ("enable.idempotence", "enable.idempotence", "enable.idempotence", "false", "true"),
    ("max.in.flight", "max.in.flight", "max.in.flight.requests.per.connection", "1000000", "5"),
    ("retries", "retries", "retries", "2147483647", "2147483647"),
    ("message.timeout.ms", "message.timeout.ms", "delivery.timeout.ms", "300000", "120000"),
    ("request.timeout.ms", "request.timeout.ms", "request.timeout.ms", "30000", "30000"),
    ("linger.ms", "linger.ms", "linger.ms", "5", "5"),
)
CONSUMER_SETTINGS = (
    ("group.protocol", "group.protocol", "group.protocol", "classic", "classic"),
    ("session.timeout.ms", "session.timeout.ms", "session.timeout.ms", "45000", "45000"),
    ("heartbeat.interval.ms", "heartbeat.interval.ms", "heartbeat.interval.ms", "3000", "3000"),
    (
        "partition.assignment.strategy",
        "partition.assignment.strategy",
        "partition.assignment.strategy",
        "range,roundrobin",
        "range,cooperative-sticky",
    ),
    ("enable.auto.commit", "enable.auto.commit", "enable.auto.commit", "true", "true"),
)
# librdkafka's aliases of the Java names: either spelling may be what a user set.
_ALIASES = {
    "max.in.flight": ("max.in.flight.requests.per.connection",),
    "message.timeout.ms": ("delivery.timeout.ms",),
    "linger.ms": ("queue.buffering.max.ms",),
    "retries": ("message.send.max.retries",),
    "acks": ("request.required.acks",),
}
MAX_READS = 20


@dataclass(frozen=True)
class Context:
    history: History
    window_ns: int
    t0_ns: int

    @classmethod
    def of(cls, history: History, window_s: float) -> Context:
        h = history
        firsts = [
            h.phases["time_ns"].min(),
            h.sends["invoke_ns"].min(),
            h.sends["complete_ns"].min(),
            h.topology["time_ns"].min(),
            h.faults["start_ns"].min(),
            h.reads["time_ns"].min(),
            h.clients["time_ns"].min(),
            h.membership["time_ns"].min(),
        ]
        present = [int(t) for t in firsts if t is not None]
        return cls(history, int(window_s * 1e9), min(present) if present else 0)

    def s(self, ns: int | None) -> float | None:
        return None if ns is None else round((ns - self.t0_ns) / 1e9, 1)

    # -- sends and reads ----------------------------------------------------------------------------
    def send_of_value(self, topic: str, value: str) -> dict[str, Any] | None:
        rows = self.history.sends.filter((pl.col("topic") == topic) & (pl.col("value") == value)).head(1).to_dicts()
        return rows[0] if rows else None

    def send_of_id(self, process: str, send_id: int) -> dict[str, Any] | None:
        rows = self.history.sends.filter((pl.col("process") == process) & (pl.col("id") == send_id)).head(1).to_dicts()
        return rows[0] if rows else None

    def reads_of_value(self, topic: str, value: str) -> list[dict[str, Any]]:
        reads = self.history.reads.filter((pl.col("topic") == topic) & (pl.col("value") == value)).head(MAX_READS)
        return reads.select("process", "group", "time_ns", "partition", "offset").to_dicts()

    def reads_at(self, topic: str, partition: int, offset: int) -> list[dict[str, Any]]:
        at = (pl.col("topic") == topic) & (pl.col("partition") == partition) & (pl.col("offset") == offset)
        return (
            self.history.reads.filter(at)
            .head(MAX_READS)
            .select("process", "group", "time_ns", "partition", "offset", "value")
            .to_dicts()
        )

    def in_log(self, topic: str, value: str) -> list[dict[str, Any]]:
        return (
            self.history.log.filter((pl.col("topic") == topic) & (pl.col("value") == value))
            .select("partition", "offset")
            .to_dicts()
        )

    def send_ops(self, send: dict[str, Any] | None) -> list[dict[str, Any]]:
        if send is None:
            return []
        ops = [
            {
                "f": Op.SEND,
                "type": OpType.INVOKE,
                "process": send["process"],
                "id": send["id"],
                "time_s": self.s(send["invoke_ns"]),
            }
        ]
        if send["outcome"] is not None:
            ops.append(
                {
                    "f": Op.SEND,
                    "type": send["outcome"],
                    "process": send["process"],
                    "id": send["id"],
                    "time_s": self.s(send["complete_ns"]),
                    "partition": send["partition"],
                    "offset": send["offset"],
                    "error": send["error"],
                }
            )
        return ops

    def read_ops(self, reads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "f": Op.POLL,
                "type": OpType.OK,
                "process": r["process"],
                "group": r["group"],
                "time_s": self.s(r["time_ns"]),
                "partition": r["partition"],
                "offset": r["offset"],
            }
            for r in reads
        ]

    # -- the cluster around a moment ------------------------------------------------------------------
    def leader_at(self, topic: str, partition: int, ns: int) -> dict[str, Any] | None:
        """The last topology sample of the partition at or before ns (the first one when none is)."""
        samples = self._samples(topic, partition)
        before = samples.filter(pl.col("time_ns") <= ns)
        rows = (before.tail(1) if before.height else samples.head(1)).to_dicts()
        return rows[0] if rows else None

    def leadership(self, topic: str, partition: int, ns: int) -> list[dict[str, Any]]:
        """Leader or ISR changes of the partition within the window around ns, each with the leader before it."""
        samples = self._samples(topic, partition).with_columns(
            pl.col("leader").shift(1).alias("previous_leader"), pl.col("isr").shift(1).alias("previous_isr")
        )
        changed = samples.filter(
            pl.col("previous_leader").is_null()
            | (pl.col("leader") != pl.col("previous_leader"))
            | (pl.col("isr") != pl.col("previous_isr"))
        )
        near = changed.filter(pl.col("time_ns").is_between(ns - self.window_ns, ns + self.window_ns))
        return [
            {
                "time_s": self.s(r["time_ns"]),
                "time_ns": r["time_ns"],
                "leader": r["leader"],
                "isr": r["isr"],
                "previous_leader": r["previous_leader"],
                "previous_isr": r["previous_isr"],
            }
            for r in near.to_dicts()
        ]

    def _samples(self, topic: str, partition: int) -> pl.DataFrame:
        topology = self.history.topology.filter((pl.col("topic") == topic) & (pl.col("partition") == partition))
        return topology.select("time_ns", "leader", "isr", "replicas").sort("time_ns", maintain_order=True)

    def role_of(self, fault: dict[str, Any], topic: str, partition: int) -> str | None:
        """What a broker fault's nodes were to the partition when it began: its leader, a follower (in the ISR or not),
        or none."""
        if fault["target"] != Target.BROKER:
            return None
        sample = self.leader_at(topic, partition, fault["start_ns"])
        if sample is None:
            return None
        nodes = {int(n) for n in fault["nodes"] if str(n).lstrip("-").isdigit()}
        if sample["leader"] in nodes:
            return "leader"
        followers = nodes & set(sample["replicas"] or [])
        if not followers:
            return "no replica"
        return "follower in the ISR" if followers & set(sample["isr"] or []) else "follower out of the ISR"

    def faults_near(self, ns: int) -> list[dict[str, Any]]:
        faults = self.history.faults.filter(
            (pl.col("start_ns") <= ns + self.window_ns)
            & (pl.col("stop_ns").is_null() | (pl.col("stop_ns") >= ns - self.window_ns))
        )
        return [
            {
                "id": r["fault_id"],
                "fault": r["fault"],
                "target": r["target"],
                "nodes": r["nodes"] or [],
                "role": r["role"],
                "start_s": self.s(r["start_ns"]),
                "stop_s": self.s(r["stop_ns"]),
                "start_ns": r["start_ns"],
                "stop_ns": r["stop_ns"],
                "said": self.storage_said(r),
            }
            for r in faults.to_dicts()
        ]

    def storage_said(self, fault: dict[str, Any]) -> str | None:
        """The first line in which one of a disk fault's nodes said what it found in its own files (a corruption, a
        log cut, an index rebuilt: history.ops.STORAGE_EVENTS), from the fault's start until STORAGE_AFTER_S after its
        stop, as checkers/measure/storage.py counts it."""
        if fault["family"] != Family.DISK:
            return None
        nodes = [int(n) for n in fault["nodes"] or [] if str(n).lstrip("-").isdigit()]
        until = (fault["stop_ns"] or fault["start_ns"]) + int(STORAGE_AFTER_S * 1e9)
        said = self.history.node_events.filter(
            pl.col("event").is_in([str(e) for e in STORAGE_EVENTS])
            & pl.col("node").is_in(nodes)
            & pl.col("time_ns").is_between(fault["start_ns"], until)
        ).sort("time_ns")
        return said["line"][0] if said.height else None

    def elections_near(self, ns: int) -> list[int]:
        events = self.history.events.filter(
            (pl.col("f") == Op.ELECT_LEADERS) & pl.col("time_ns").is_between(ns - self.window_ns, ns + self.window_ns)
        )
        return events["time_ns"].to_list()

    def phase_at(self, ns: int) -> str | None:
        phases = self.history.phases.filter(pl.col("time_ns") <= ns).sort("time_ns", maintain_order=True)
        return phases["phase"][-1] if phases.height else None

    def producers_of(self, topic: str) -> list[str]:
        return self.history.sends.filter(pl.col("topic") == topic)["process"].unique(maintain_order=True).to_list()

    # -- the client -----------------------------------------------------------------------------------
    def client(self, process: str | None) -> dict[str, Any] | None:
        """The process's client library and the settings that matter for its role, default ones marked."""
        if process is None:
            return None
        rows = self.history.clients.filter(pl.col("process") == process).head(1).to_dicts()
        if not rows:
            return None
        row = rows[0]
        config = {entry["name"]: entry["value"] for entry in row["config"] or []}
        is_producer = self.history.sends.filter(pl.col("process") == process).height > 0 or "acks" in config
        java = row["client"] == "kafka-java"
        settings = []
        for shown, rdkafka, java_name, rdkafka_default, java_default in (
            PRODUCER_SETTINGS if is_producer else CONSUMER_SETTINGS
        ):
            name = java_name if java else shown
            names = (java_name,) if java else (rdkafka, *_ALIASES.get(rdkafka, ()))
            value = next((config[n] for n in names if n in config), None)
            if value is None:
                default = java_default if java else rdkafka_default
                if not java and rdkafka == "max.in.flight" and config.get("enable.idempotence") == "true":
                    default = "5"
                settings.append({"name": name, "value": default, "default": True})
            else:
                settings.append(
                    {"name": name, "value": "all" if name == "acks" and value == "-1" else value, "default": False}
                )
        return {
            "process": process,
            "role": "producer" if is_producer else "consumer",
            "client": row["client"],
            "client_version": row["client_version"],
            "settings": settings,
            "log": row["log"],
        }
