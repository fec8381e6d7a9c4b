"""Share groups (KIP-932): every acknowledged write accepted, every redelivery explained. Pure.

A share group's consumers acquire records (each ``share-poll`` record, with the delivery count the broker gave it)
and acknowledge each one: accept (done), release (deliver it again) or reject (archive it). The broker also
delivers a record again when its acquisition lock runs out (``group.share.record.lock.duration.ms``, 30 s by
default, or the group's ``share.record.lock.duration.ms``), and archives one it has delivered
``delivery_count_limit`` times (``group.share.delivery.count.limit``, 5) without an accept. Delivery is at least
once and unordered: a redelivery is not a fault, an unexplained one is.

For each record (group, topic, partition, offset):

    accepted / rejected       an acknowledgement of it the broker took (share-ack ok)
    archived-at-limit         never accepted nor rejected, delivered with delivery_count >= delivery_count_limit
    lost (violation)          an acknowledged write to a topic the group read that was neither accepted, nor
                              rejected, nor archived at the limit (``lost-never-delivered``: and never delivered)
    accepted-twice (v.)       accepted by the broker again with no delivery of it in between
    redelivered-after-ack (v.)  delivered again after an accept or reject of its delivery was taken
    unexplained-redelivery (v.) a delivery after the first with none of the reasons below

A redelivery is explained by what happened to the delivery before it (its holder, from that poll until this one):
``released`` (the holder's release was taken), ``ack-failed`` (its acknowledgement was refused or unanswered),
``holder-stopped`` (it crashed or closed, or a consumer fault hit it), ``lock-expired`` (at least the lock duration,
less ``lock_slack_ms`` for the time between the broker's acquisition and the poll's record, passed with no
acknowledgement taken), or ``node-fault`` (a fault on Kafka's nodes began meanwhile: a new share-partition leader
does not keep acquisitions). ``unseen-deliveries`` counts delivery counts skipped between two recorded deliveries (an
acquisition no consumer recorded: one killed between the broker's answer and its op). Each redelivery's delay (from
the poll before it) is kept with its reason: for ``holder-stopped`` it is the time to take a dead consumer's records
back (the lock, when the consumer was killed).
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import median
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, allowed_loss, durable_writers, read_options, result
from failsafe.history.model import History
from failsafe.history.ops import NODE_TARGETS, OpType, Target

# lock_duration_ms and delivery_count_limit: the group's (Kafka's defaults: 30 s and 5).
DEFAULTS: dict[str, Any] = {"groups": None, "lossy_writers": None, "lock_duration_ms": 30_000, "lock_slack_ms": 2_000, "delivery_count_limit": 5}
VIOLATIONS = {"lost": Side.CLUSTER, "accepted-twice": Side.CLUSTER, "redelivered-after-ack": Side.CLUSTER,
              "unexplained-redelivery": Side.CLUSTER}
REASONS = ("released", "ack-failed", "holder-stopped", "lock-expired", "node-fault")
ACKNOWLEDGED = "acknowledged"
_KEY = ["group", "topic", "partition", "offset"]
_EXAMPLES = 5


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "share")
    deliveries = history.share_deliveries
    acks = history.share_acks
    if opts["groups"] is not None:
        deliveries = deliveries.filter(pl.col("group").is_in(opts["groups"]))
        acks = acks.filter(pl.col("group").is_in(opts["groups"]))
    if deliveries.height == 0:
        return result(UNKNOWN, {"deliveries": 0}, {}, groups=[])
    limit = opts["delivery_count_limit"]
    taken = acks.filter(pl.col("type") == OpType.OK)

    settled, archived, lost, lost_allowed = _fates(history, deliveries, taken, limit, opts["lossy_writers"])
    twice = _accepted_twice(deliveries, taken)
    after_ack = _redelivered_after_ack(deliveries, taken)
    redeliveries, unseen = _redeliveries(history, deliveries, acks, opts["lock_duration_ms"] - opts["lock_slack_ms"])
    unexplained = [r for r in redeliveries if r["reason"] is None]

    counts = {
        "deliveries": deliveries.height,
        "records-delivered": deliveries.select(_KEY).unique().height,
        "redeliveries": len(redeliveries),
        **{f"redeliveries-{reason}": sum(r["reason"] == reason for r in redeliveries) for reason in REASONS},
        "unseen-deliveries": unseen,
        "accepted": settled.filter(pl.col("ack") == "accept").height,
        "rejected": settled.filter(pl.col("ack") == "reject").height,
        "archived-at-limit": archived.height,
        "acks-failed": acks.filter(pl.col("type") != OpType.OK).height,
        "lost": lost.height,
        "lost-never-delivered": lost.join(deliveries.select(_KEY).unique(), on=_KEY, how="anti").height,
        "lost-allowed": lost_allowed.height,
        "accepted-twice": twice.height,
        "redelivered-after-ack": after_ack.height,
        "unexplained-redelivery": len(unexplained),
    }
    example_rows = {
        "lost": lost.head(_EXAMPLES).to_dicts(),
        "archived-at-limit": archived.head(_EXAMPLES).to_dicts(),
        "accepted-twice": twice.head(_EXAMPLES).to_dicts(),
        "redelivered-after-ack": after_ack.head(_EXAMPLES).to_dicts(),
        "unexplained-redelivery": unexplained[:_EXAMPLES],
    }
    violations = [name for name in VIOLATIONS if counts[name]]
    delays = {reason: [r["delay_ms"] for r in redeliveries if r["reason"] == reason] for reason in REASONS}
    return result(False if violations else True, counts, example_rows, violations,
                  groups=sorted(deliveries["group"].unique().to_list()),
                  redelivery_delay_ms={reason: {"n": len(d), "median": median(d), "max": max(d)} for reason, d in delays.items() if d})


def _fates(history: History, deliveries: pl.DataFrame, taken: pl.DataFrame, limit: int,
           lossy_writers: list[str] | None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(records accepted or rejected, records archived at the limit, acknowledged writes lost, the part of those a writer that
    promised nothing may lose)."""
    settled = taken.filter(pl.col("ack").is_in(["accept", "reject"])).sort("time_ns").unique(subset=_KEY, keep="first", maintain_order=True)
    settled = settled.select(*_KEY, "ack")
    most = deliveries.group_by(_KEY).agg(pl.col("delivery_count").max())
    archived = most.filter(pl.col("delivery_count") >= limit).join(settled, on=_KEY, how="anti").sort(_KEY)
    done = pl.concat([settled.select(_KEY), archived.select(_KEY)])
    topics = deliveries.select("group", "topic").unique()
    writes = history.sends.filter((pl.col("outcome") == OpType.OK) & pl.col("offset").is_not_null()).join(topics, on="topic", how="inner")
    missing = writes.join(done, on=_KEY, how="anti").sort(_KEY)
    allowed = missing.filter(allowed_loss(missing, lossy_writers, durable_writers(history)))
    lost = missing.join(allowed.select(_KEY), on=_KEY, how="anti").select(*_KEY, "process", "key", "value")
    return settled, archived, lost, allowed


def _accepted_twice(deliveries: pl.DataFrame, taken: pl.DataFrame) -> pl.DataFrame:
    """Accepts the broker took of a record whose previous accept was taken with no delivery of it in between."""
    accepts = taken.filter(pl.col("ack") == "accept").select(*_KEY, "process", "time_ns").sort("time_ns")
    accepts = accepts.with_columns(pl.col("time_ns").shift(1).over(_KEY).alias("previous_ns")).drop_nulls("previous_ns")
    between = accepts.join(deliveries.select(*_KEY, pl.col("time_ns").alias("delivered_ns")), on=_KEY, how="left")
    between = between.with_columns(pl.col("delivered_ns").is_between(pl.col("previous_ns"), pl.col("time_ns")).fill_null(False).alias("redelivered"))
    flagged = between.group_by(*_KEY, "process", "time_ns", "previous_ns").agg(pl.col("redelivered").any())
    return flagged.filter(~pl.col("redelivered")).drop("redelivered").sort(_KEY)


def _redelivered_after_ack(deliveries: pl.DataFrame, taken: pl.DataFrame) -> pl.DataFrame:
    """Deliveries of a record with a delivery count above that of a delivery whose accept or reject the broker took."""
    acked = taken.filter(pl.col("ack").is_in(["accept", "reject"])).select(*_KEY, "process", pl.col("time_ns").alias("ack_ns"), "ack")
    # The delivery each acknowledgement was for: the holder's latest delivery of the record before it.
    held = deliveries.select(*_KEY, "process", pl.col("time_ns").alias("held_ns"), pl.col("delivery_count").alias("acked_count"))
    acked = acked.join(held, on=[*_KEY, "process"], how="inner").filter(pl.col("held_ns") <= pl.col("ack_ns"))
    acked = acked.sort("held_ns").group_by(*_KEY, "process", "ack_ns", "ack").agg(pl.col("acked_count").last())
    later = deliveries.select(*_KEY, pl.col("process").alias("to"), "time_ns", "delivery_count").join(acked, on=_KEY, how="inner")
    return later.filter(pl.col("delivery_count") > pl.col("acked_count")).unique(subset=[*_KEY, "delivery_count"]).sort(_KEY)


def _redeliveries(history: History, deliveries: pl.DataFrame, acks: pl.DataFrame, lock_ms: float) -> tuple[list[dict], int]:
    """Each delivery after a record's first, with the reason the one before it ended (None: unexplained) and its delay."""
    repeated = deliveries.filter(pl.len().over(_KEY) > 1).sort(*_KEY, "delivery_count", "time_ns")
    if repeated.height == 0:
        return [], 0
    stops = _holder_stops(history)
    node_faults = history.faults.filter(pl.col("target").is_in([str(t) for t in NODE_TARGETS]))["start_ns"].to_list()
    by_key: dict[tuple, list[dict]] = {}
    for row in acks.filter(pl.col("ack").is_not_null()).join(repeated.select(_KEY).unique(), on=_KEY, how="semi").iter_rows(named=True):
        by_key.setdefault(tuple(row[k] for k in _KEY), []).append(row)
    out, unseen = [], 0
    rows = repeated.to_dicts()
    for before, after in zip(rows, rows[1:], strict=False):
        key = tuple(before[k] for k in _KEY)
        if key != tuple(after[k] for k in _KEY):
            continue
        unseen += max(0, after["delivery_count"] - before["delivery_count"] - 1)
        start, end = before["time_ns"], after["time_ns"]
        mine = [a for a in by_key.get(key, []) if a["process"] == before["process"] and start <= a["time_ns"] <= end]
        reason = _reason(mine, stops.get(before["process"], []), node_faults, start, end, lock_ms)
        out.append({"group": key[0], "topic": key[1], "partition": key[2], "offset": key[3], "from": before["process"], "to": after["process"],
                    "delivery_count": after["delivery_count"], "delay_ms": (end - start) / 1e6, "reason": reason})
    return out, unseen


def _reason(acks: list[dict], stops: list[int], node_faults: list[int], start: int, end: int, lock_ms: float) -> str | None:
    if any(a["type"] == OpType.OK and a["ack"] in ("accept", "reject") for a in acks):
        return ACKNOWLEDGED  # no explanation: redelivered-after-ack says so
    if any(a["type"] == OpType.OK and a["ack"] == "release" for a in acks):
        return "released"
    if any(a["type"] != OpType.OK for a in acks):
        return "ack-failed"
    if any(start <= t <= end for t in stops):
        return "holder-stopped"
    if (end - start) / 1e6 >= lock_ms:
        return "lock-expired"
    if any(start <= t <= end for t in node_faults):
        return "node-fault"
    return None


def _holder_stops(history: History) -> dict[str, list[int]]:
    """When each consumer crashed or closed, or a consumer fault hit it."""
    stops: dict[str, list[int]] = {}
    for row in history.client_events.iter_rows(named=True):
        stops.setdefault(row["process"], []).append(row["time_ns"])
    for row in history.faults.filter(pl.col("target") == Target.CONSUMER).iter_rows(named=True):
        for process in row["nodes"] or []:
            stops.setdefault(process, []).append(row["start_ns"])
    return stops
