"""Builders of hand-written history ops for the checker tests, and tests that they load as meant.

Times are small integers of nanoseconds from T0; helpers take milliseconds where a test reads
better in them.
"""

from __future__ import annotations

from collections.abc import Iterable

from failsafe.history.load import history_from_ops
from failsafe.history.model import History

T0 = 1_000_000_000_000
MS = 1_000_000
TOPIC = "t"


def at(ms: float) -> int:
    return T0 + int(ms * MS)


def rec(offset: int | None, value: str | None, partition: int = 0, key: str | None = None, topic: str = TOPIC) -> dict:
    return {"topic": topic, "partition": partition, "offset": offset, "key": key, "value": value}


def send(
    process: str,
    send_id: int,
    value: str,
    offset: int | None,
    *,
    ms: float = 0,
    partition: int = 0,
    outcome: str | None = "ok",
    key: str | None = None,
    error: str | None = None,
    latency_ms: float = 1,
    topic: str = TOPIC,
) -> list[dict]:
    """A send's invoke and, unless outcome is None, its completion."""
    base = {"process": process, "f": "send", "id": send_id, "topic": topic, "key": key, "value": value}
    ops = [{**base, "time_ns": at(ms), "type": "invoke"}]
    if outcome is not None:
        done = {**base, "time_ns": at(ms + latency_ms), "type": outcome, "partition": partition}
        if outcome == "ok":
            done["offset"] = offset
        else:
            done["error"] = error or ("NOT_ENOUGH_REPLICAS" if outcome == "fail" else "_MSG_TIMED_OUT")
        ops.append(done)
    return ops


def poll(process: str, records: list[dict], *, ms: float = 0, group: str | None = "g") -> dict:
    return {"time_ns": at(ms), "process": process, "type": "ok", "f": "poll", "group": group, "records": records}


def membership(
    f: str, process: str, partitions: Iterable[int], *, ms: float = 0, group: str = "g", lost: bool = False
) -> dict:
    op = {
        "time_ns": at(ms),
        "process": process,
        "type": "info",
        "f": f,
        "group": group,
        "partitions": [{"topic": TOPIC, "partition": p} for p in partitions],
    }
    if lost:
        op["lost"] = True
    return op


def assign(process: str, partitions: Iterable[int], *, ms: float = 0, group: str = "g") -> dict:
    return membership("assign", process, partitions, ms=ms, group=group)


def revoke(process: str, partitions: Iterable[int], *, ms: float = 0, group: str = "g") -> dict:
    return membership("revoke", process, partitions, ms=ms, group=group)


def log_read(records: list[dict], *, ms: float = 100_000) -> dict:
    """A log-read op that names no partition: it stands for each partition its records are in (an empty one: see
    read)."""
    return {"time_ns": at(ms), "process": "log-reader", "type": "ok", "f": "log-read", "records": records}


def read(
    partition: int,
    records: list[dict] | None = None,
    *,
    topic: str = TOPIC,
    ms: float = 100_000,
    start: int = 0,
    error: str | None = None,
    cluster: str | None = None,
) -> dict:
    """The final read of one partition: ok with ``records`` (none: read, and empty), from log start ``start`` to the
    high watermark after the last record; with ``error``, failed."""
    records = records or []
    high = max((r["offset"] for r in records if r.get("offset") is not None), default=start - 1) + 1
    op = {
        "time_ns": at(ms),
        "process": "log-reader",
        "type": "fail" if error else "ok",
        "f": "log-read",
        "topic": topic,
        "partition": partition,
        "cluster": cluster,
    }
    return (
        {**op, "error": error}
        if error
        else {**op, "records": records, "log_start_offset": start, "high_watermark": high}
    )


def declared(
    process: str,
    role: str = "producer",
    *,
    topics: list[str] | None = None,
    group: str | None = None,
    may_lose: bool = False,
) -> dict:
    return {
        "process": process,
        "role": role,
        "topics": topics if topics is not None else [TOPIC],
        "group": group,
        "may_lose": may_lose,
        "matches": None,
    }


def declare(*clients: dict, ms: float = 0) -> dict:
    """The declare op of a run whose scenario declared ``clients`` (``declared``)."""
    return {"time_ns": at(ms), "process": "runner", "type": "info", "f": "declare", "clients": list(clients)}


PHASES = ("setup", "warm-up", "chaos", "heal", "recover", "drain", "final-read")


def finished(*clients: dict, ms: float = 200_000) -> list[dict]:
    """What makes a hand-written history a complete run (checkers/completeness.py): the clients its scenario declared
    and the end of every phase."""
    ends = [
        {"time_ns": at(ms), "process": "runner", "type": "info", "f": "phase-end", "phase": phase} for phase in PHASES
    ]
    return [declare(*clients), *ends]


def client_config(process: str, client: str = "librdkafka", **config: str) -> dict:
    """A worker's client-config op: its library and settings (``enable_idempotence`` for ``enable.idempotence``)."""
    return {
        "time_ns": at(0),
        "process": process,
        "type": "info",
        "f": "client-config",
        "client": client,
        "client_version": "2.12.0",
        "config": [{"name": k.replace("_", "."), "value": v} for k, v in config.items()],
        "log": f"logs/{process}.client.log",
    }


def client_event(f: str, process: str, *, ms: float) -> dict:
    return {"time_ns": at(ms), "process": process, "type": "info", "f": f}


def fault(
    fault_id: int,
    *,
    start_ms: float,
    stop_ms: float | None,
    nodes: list,
    fault_name: str = "kill",
    target: str = "broker",
) -> list[dict]:
    start = {
        "time_ns": at(start_ms),
        "process": "nemesis",
        "type": "info",
        "f": "fault-start",
        "fault_id": fault_id,
        "fault": fault_name,
        "target": target,
        "nodes": nodes,
        "role": "any",
    }
    if stop_ms is None:
        return [start]
    return [
        start,
        {
            "time_ns": at(stop_ms),
            "process": "nemesis",
            "type": "info",
            "f": "fault-stop",
            "fault_id": fault_id,
            "ok": True,
        },
    ]


def topology(ms: float, partitions: list[tuple[int, int, list[int], list[int]]]) -> dict:
    """partitions: (partition, leader, replicas, isr)."""
    return {
        "time_ns": at(ms),
        "process": "topology",
        "type": "info",
        "f": "topology",
        "partitions": [
            {"topic": TOPIC, "partition": p, "leader": leader, "replicas": replicas, "isr": isr}
            for p, leader, replicas, isr in partitions
        ],
        "brokers": [1, 2, 3],
        "controller": 1000,
    }


def history(*ops: dict | list[dict]) -> History:
    flat: list[dict] = []
    for op in ops:
        flat.extend(op if isinstance(op, list) else [op])
    return history_from_ops(flat)


def test_a_send_becomes_one_row_with_its_outcome() -> None:
    h = history(send("producer-0", 1, "v1", 7, ms=5, partition=2))
    row = h.sends.row(0, named=True)
    assert (row["outcome"], row["partition"], row["offset"], row["invoke_ns"], row["complete_ns"]) == (
        "ok",
        2,
        7,
        at(5),
        at(6),
    )


def test_a_send_without_completion_has_no_outcome() -> None:
    h = history(send("producer-0", 1, "v1", None, outcome=None))
    assert h.sends["outcome"].to_list() == [None]
