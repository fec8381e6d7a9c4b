"""Share groups (KIP-932): every acknowledged write accepted, every redelivery explained. Pure.

A share group's consumers acquire records (each ``share-poll`` record, with the delivery count the broker gave it)
and acknowledge each one: accept (done), release (deliver it again) or reject (archive it). The broker also
delivers a record again when its acquisition lock runs out (``group.share.record.lock.duration.ms``, 30 s by
default, or the group's ``share.record.lock.duration.ms``), and archives one it has delivered
``delivery_count_limit`` times (``group.share.delivery.count.limit``, 5) without an accept. Delivery is at least
once and unordered: a redelivery is not a fault, an unexplained one is.

For each record (group, topic, partition, offset):

    accepted / rejected         an acknowledgement of it the broker took (share-ack ok)
    unknown-acks                its last accept or reject got no answer (share-ack info): judged neither way
    archived-at-limit           never accepted nor rejected, delivered with delivery_count >= the group's
                                share.delivery.count.limit
    lost (violation)            an acknowledged write to a topic the group read with none of the above
                                (``lost-never-delivered``: and never delivered); every write, or, for a group whose
                                share.auto.offset.reset is latest (Kafka's default) or by_duration, those at or after
                                the group's first delivered offset of the partition (evidence.share_starts)
    start-undecided             for such a group, a write of a partition it delivered nothing of: UNKNOWN
    accepted-twice (v.)         accepted by the broker again with no delivery of it in between
    redelivered-after-ack (v.)  delivered again after the delivery whose accept or reject the broker took
    unexplained-redelivery (v.) a delivery after the first with none of the reasons below

A redelivery is explained by what became of the delivery before it: ``released`` (its holder's release was taken,
whenever the answer was recorded), ``ack-failed`` (the holder's acknowledgement was refused or unanswered),
``holder-stopped`` (it crashed or closed, or a consumer fault other than a freeze hit it, up to 10 s after the
redelivery: a close is recorded once it returned), ``lock-expired`` (at least the group's share.record.lock.duration.ms,
less LOCK_SLACK_MS for the time between the broker's acquisition and the poll's record, passed), ``node-fault`` (a fault
on Kafka's nodes was in force) or ``leader-change`` (the partition's sampled leader changed): a new share-partition
leader does not keep acquisitions. ``unseen-deliveries`` counts delivery counts skipped between two recorded deliveries
(an acquisition no consumer recorded: one killed between the broker's answer and its op). Each redelivery's delay (from
the poll before it) is kept with its reason. A killed consumer's records need not wait for the lock: the broker may
release them when the consumer's connection drops.

A group's settings are those the cluster described for it (``group-config`` ops, recorded by the share kind after it
set them), never a checker option: no option can excuse a loss. A group whose settings were not recorded is judged by
the settings that excuse least: the highest delivery count limit and lock Kafka allows, and every write.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import median
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, client_stops, read_options, result
from failsafe.checkers.evidence import (
    SHARE_AUTO_OFFSET_RESET,
    allowed_loss,
    late_share_groups,
    lossy_writers,
    share_starts,
)
from failsafe.history.model import History
from failsafe.history.ops import NODE_TARGETS, OpType, Role

DEFAULTS: dict[str, Any] = {}
LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
# Kafka's defaults of a group's settings (group.share.record.lock.duration.ms, group.share.delivery.count.limit), and
# what a group whose settings were not recorded is judged by: the most Kafka allows
# (group.share.max.record.lock.duration.ms's default, group.share.delivery.count.limit's upper bound), which explain the
# fewest redeliveries and archive the least.
DEFAULT_LOCK_DURATION_MS = 30_000
UNRECORDED_LOCK_DURATION_MS = 60_000
UNRECORDED_DELIVERY_COUNT_LIMIT = 10
# The time between the broker's acquisition of a record and the consumer's op that records it, which a lock's expiry
# allows.
LOCK_SLACK_MS = 2_000
VIOLATIONS = {
    "lost": Side.CLUSTER,
    "accepted-twice": Side.CLUSTER,
    "redelivered-after-ack": Side.CLUSTER,
    "unexplained-redelivery": Side.CLUSTER,
}
REASONS = ("released", "ack-failed", "holder-stopped", "lock-expired", "node-fault", "leader-change")
ACKNOWLEDGED = "acknowledged"
_SETTLING = ("accept", "reject")
_KEY = ["group", "topic", "partition", "offset"]
_EXAMPLES = 5
# A close or a kill takes effect on the broker before the op that records it (a close op is written once close()
# returned).
_STOP_SLACK_NS = 10_000_000_000


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    read_options(options, DEFAULTS, "share")
    deliveries = history.share_deliveries
    acks = history.share_acks
    declared = history.declared.filter(pl.col("role") == Role.SHARE_CONSUMER)
    groups = sorted(set(deliveries["group"].drop_nulls().to_list()) | set(declared["group"].drop_nulls().to_list()))
    if not groups:
        return result(
            UNKNOWN, {"deliveries": 0}, {}, groups=[], reason="no share group was declared or delivered anything"
        )
    settings = {group: group_settings(history, group) for group in groups}
    taken = acks.filter(pl.col("type") == OpType.OK)

    settled, archived, unknown, lost, lost_allowed, undecided = _fates(history, deliveries, acks, declared, settings)
    twice = _accepted_twice(deliveries, taken)
    after_ack = _redelivered_after_ack(deliveries, taken)
    lock_ms = {group: s["lock_duration_ms"] - LOCK_SLACK_MS for group, s in settings.items()}
    redeliveries, unseen = _redeliveries(history, deliveries, acks, lock_ms)
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
        "unknown-acks": unknown.height,
        "lost": lost.height,
        "lost-never-delivered": lost.join(deliveries.select(_KEY).unique(), on=_KEY, how="anti").height,
        "lost-allowed": lost_allowed.height,
        "start-undecided": undecided.height,
        "accepted-twice": twice.height,
        "redelivered-after-ack": after_ack.height,
        "unexplained-redelivery": len(unexplained),
    }
    example_rows = {
        "lost": lost.head(_EXAMPLES).to_dicts(),
        "start-undecided": undecided.head(_EXAMPLES).to_dicts(),
        "archived-at-limit": archived.head(_EXAMPLES).to_dicts(),
        "unknown-acks": unknown.head(_EXAMPLES).to_dicts(),
        "accepted-twice": twice.head(_EXAMPLES).to_dicts(),
        "redelivered-after-ack": after_ack.head(_EXAMPLES).to_dicts(),
        "unexplained-redelivery": unexplained[:_EXAMPLES],
    }
    violations = [name for name in VIOLATIONS if counts[name]]
    delays = {reason: [r["delay_ms"] for r in redeliveries if r["reason"] == reason] for reason in REASONS}
    members = deliveries.group_by("group").agg(pl.col("process").n_unique().alias("n")).sort("group")
    # Writes of partitions a late-starting group delivered nothing of: whether it should have got them is unknown.
    return result(
        False if violations else UNKNOWN if undecided.height else True,
        counts,
        example_rows,
        violations,
        groups=groups,
        settings=settings,
        members_with_deliveries=dict(zip(members["group"].to_list(), members["n"].to_list(), strict=True)),
        redelivery_delay_ms={
            reason: {"n": len(d), "median": median(d), "max": max(d)} for reason, d in delays.items() if d
        },
    )


def group_settings(history: History, group: str) -> dict[str, Any]:
    """A share group's lock duration, delivery count limit and auto offset reset, as the cluster described them for the
    run (its last ``group-config`` op); what excuses least when they were not recorded (``recorded`` false)."""
    configs = history.group_configs.filter(pl.col("group") == group).sort("time_ns", maintain_order=True)
    found = dict(zip(configs["name"].to_list(), configs["value"].to_list(), strict=True))

    def number(name: str, unrecorded: int) -> int:
        value = found.get(name)
        return int(value) if value is not None and value.isdigit() else unrecorded

    return {
        "lock_duration_ms": number(LOCK_DURATION, UNRECORDED_LOCK_DURATION_MS),
        "delivery_count_limit": number(DELIVERY_COUNT_LIMIT, UNRECORDED_DELIVERY_COUNT_LIMIT),
        "auto_offset_reset": found.get(SHARE_AUTO_OFFSET_RESET, "earliest"),
        "recorded": bool(found),
    }


def _fates(
    history: History,
    deliveries: pl.DataFrame,
    acks: pl.DataFrame,
    declared: pl.DataFrame,
    settings: dict[str, dict[str, Any]],
) -> tuple[pl.DataFrame, ...]:
    """(records accepted or rejected, records archived at the limit, records whose last accept or reject has no known
    answer, acknowledged writes lost, the part of those a writer that promised nothing may lose, durable writes whose
    group's start is unknown)."""
    limits = pl.DataFrame(
        {"group": list(settings), "limit": [s["delivery_count_limit"] for s in settings.values()]},
        schema={"group": pl.String, "limit": pl.Int64},
    )
    settling = acks.filter(pl.col("ack").is_in(_SETTLING)).sort("time_ns")
    settled = (
        settling.filter(pl.col("type") == OpType.OK)
        .unique(subset=_KEY, keep="first", maintain_order=True)
        .select(*_KEY, "ack")
    )
    # An accept the broker may or may not have taken (its answer never came): not judged either way.
    unknown = settling.filter(pl.col("type") == OpType.INFO).join(settled, on=_KEY, how="anti")
    unknown = unknown.unique(subset=_KEY, keep="last", maintain_order=True).select(*_KEY, "process", "ack", "error")
    most = deliveries.group_by(_KEY).agg(pl.col("delivery_count").max()).join(limits, on="group", how="left")
    archived = (
        most.filter(pl.col("delivery_count") >= pl.col("limit"))
        .drop("limit")
        .join(settled, on=_KEY, how="anti")
        .sort(_KEY)
    )
    done = pl.concat([settled.select(_KEY), archived.select(_KEY), unknown.select(_KEY)])
    declared_topics = declared.select("group", pl.col("topics").alias("topic")).explode("topic").drop_nulls()
    topics = pl.concat([deliveries.select("group", "topic"), declared_topics]).unique()
    writes = history.sends.filter((pl.col("outcome") == OpType.OK) & pl.col("offset").is_not_null()).join(
        topics, on="topic", how="inner"
    )
    late = late_share_groups(history)
    undecided = writes.clear()
    if late.height:
        # A group that began at the log's end (latest) or at a time (by_duration) was never meant to get what came
        # before: judged from its first delivery of each partition on; a partition it delivered nothing of leaves its
        # writes undecided.
        mine = writes.join(late, on=["group", "topic"], how="semi").join(
            share_starts(history), on=["group", "topic", "partition"], how="left"
        )
        undecided = mine.filter(pl.col("first").is_null()).drop("first")
        writes = pl.concat(
            [
                writes.join(late, on=["group", "topic"], how="anti"),
                mine.filter(pl.col("offset") >= pl.col("first")).drop("first"),
            ]
        )
    lossy = allowed_loss(lossy_writers(history))
    missing = writes.join(done, on=_KEY, how="anti").sort(_KEY)
    allowed = missing.filter(lossy)
    lost = missing.join(allowed.select(_KEY), on=_KEY, how="anti").select(*_KEY, "process", "key", "value")
    return (
        settled,
        archived,
        unknown,
        lost,
        allowed,
        undecided.filter(~lossy).select(*_KEY, "process", "key", "value").sort(_KEY),
    )


def _accepted_twice(deliveries: pl.DataFrame, taken: pl.DataFrame) -> pl.DataFrame:
    """Accepts the broker took of a record whose previous accept was taken with no delivery of it in between."""
    accepts = taken.filter(pl.col("ack") == "accept").select(*_KEY, "process", "time_ns").sort("time_ns")
    accepts = accepts.with_columns(pl.col("time_ns").shift(1).over(_KEY).alias("previous_ns")).drop_nulls("previous_ns")
    between = accepts.join(deliveries.select(*_KEY, pl.col("time_ns").alias("delivered_ns")), on=_KEY, how="left")
    between = between.with_columns(
        pl.col("delivered_ns")
        .is_between(pl.col("previous_ns"), pl.col("time_ns"))
        .fill_null(False)
        .alias("redelivered")
    )
    flagged = between.group_by(*_KEY, "process", "time_ns", "previous_ns").agg(pl.col("redelivered").any())
    return flagged.filter(~pl.col("redelivered")).drop("redelivered").sort([*_KEY, "time_ns"])


def _redelivered_after_ack(deliveries: pl.DataFrame, taken: pl.DataFrame) -> pl.DataFrame:
    """Deliveries of a record after the delivery whose accept or reject the broker took: once its holder acquired it, no
    one else can have it until the lock is gone, and then that holder's acknowledgement is refused. By time, not
    delivery count (the count may be unknown, and Kafka 4.1 did not raise it for records released when a share session
    closed)."""
    acked = taken.filter(pl.col("ack").is_in(_SETTLING)).select(
        *_KEY, "process", pl.col("time_ns").alias("ack_ns"), "ack"
    )
    # The delivery each acknowledgement was for: the holder's latest delivery of the record before it.
    held = deliveries.select(*_KEY, "process", pl.col("time_ns").alias("held_ns"))
    acked = acked.join(held, on=[*_KEY, "process"], how="inner").filter(pl.col("held_ns") <= pl.col("ack_ns"))
    acked = acked.group_by(*_KEY, "process", "ack_ns", "ack").agg(pl.col("held_ns").max())
    later = deliveries.select(*_KEY, pl.col("process").alias("to"), "time_ns", "delivery_count").join(
        acked, on=_KEY, how="inner"
    )
    later = later.filter(pl.col("time_ns") > pl.col("held_ns"))
    return later.sort(*_KEY, "time_ns").unique(subset=[*_KEY, "time_ns", "to"], keep="first", maintain_order=True)


def _redeliveries(
    history: History, deliveries: pl.DataFrame, acks: pl.DataFrame, lock_ms: dict[str, float]
) -> tuple[list[dict], int]:
    """Each delivery after a record's first, in time order, with the reason the one before it ended (None:
    unexplained)."""
    repeated = deliveries.filter(pl.len().over(_KEY) > 1).sort(*_KEY, "time_ns")
    if repeated.height == 0:
        return [], 0
    stops = _holder_stops(history)
    node_faults = (
        history.faults.filter(pl.col("target").is_in([str(t) for t in NODE_TARGETS]))
        .select("start_ns", "stop_ns")
        .rows()
    )
    leaders = _leaders(history)
    by_key: dict[tuple, list[dict]] = {}
    for row in acks.join(repeated.select(_KEY).unique(), on=_KEY, how="semi").sort("time_ns").iter_rows(named=True):
        by_key.setdefault(tuple(row[k] for k in _KEY), []).append(row)
    out, unseen = [], 0
    rows = repeated.to_dicts()
    # For each row, when the same holder next got the same record (rows are by record, then time): one pass from the
    # end.
    next_same: list[int | None] = [None] * len(rows)
    latest: dict[tuple, int] = {}
    for index in range(len(rows) - 1, -1, -1):
        holder = (*(rows[index][k] for k in _KEY), rows[index]["process"])
        next_same[index] = latest.get(holder)
        latest[holder] = rows[index]["time_ns"]
    for index, (before, after) in enumerate(zip(rows, rows[1:], strict=False)):
        key = tuple(before[k] for k in _KEY)
        if key != tuple(after[k] for k in _KEY):
            continue
        if before["delivery_count"] and after["delivery_count"]:
            unseen += max(0, after["delivery_count"] - before["delivery_count"] - 1)
        start, end = before["time_ns"], after["time_ns"]
        # The holder's acknowledgements of this delivery: from it until the holder's next delivery of the record,
        # whenever their answer was recorded (a release takes effect before the holder writes the answer down).
        until = next_same[index]
        held = [
            a
            for a in by_key.get(key, [])
            if a["process"] == before["process"] and a["time_ns"] >= start and (until is None or a["time_ns"] < until)
        ]
        reason = _reason(
            held,
            stops.get(before["process"], []),
            node_faults,
            leaders.get((key[1], key[2]), []),
            start,
            end,
            lock_ms.get(key[0], UNRECORDED_LOCK_DURATION_MS - LOCK_SLACK_MS),
        )
        out.append(
            {
                "group": key[0],
                "topic": key[1],
                "partition": key[2],
                "offset": key[3],
                "from": before["process"],
                "to": after["process"],
                "delivery_count": after["delivery_count"],
                "delay_ms": (end - start) / 1e6,
                "reason": reason,
            }
        )
    return out, unseen


def _reason(
    acks: list[dict],
    stops: list[int],
    node_faults: list[tuple],
    leaders: list[tuple[int, int | None]],
    start: int,
    end: int,
    lock_ms: float,
) -> str | None:
    if any(a["type"] == OpType.OK and a["ack"] in _SETTLING and a["time_ns"] <= end for a in acks):
        return ACKNOWLEDGED  # no explanation: redelivered-after-ack says so
    # An accept the broker took only after the redelivery does not explain it (accepted-twice and redelivered-after-ack
    # report it): what came before the redelivery does.
    if any(a["type"] == OpType.OK and a["ack"] == "release" for a in acks):
        return "released"
    if any(a["type"] != OpType.OK for a in acks):
        return "ack-failed"
    # The lock first: a redelivery at least the lock after the acquisition needs nothing else to explain it, whatever
    # its holder did afterwards (a close recorded soon after would otherwise claim it).
    if (end - start) / 1e6 >= lock_ms:
        return "lock-expired"
    if any(start <= t <= end + _STOP_SLACK_NS for t in stops):
        return "holder-stopped"
    if any(f_start <= end and (f_stop is None or f_stop >= start) for f_start, f_stop in node_faults):
        return "node-fault"
    # The partition's leader (as sampled) changed between the last sample before the delivery and the redelivery.
    last_before = max((t for t, _ in leaders if t <= start), default=None)
    if len({leader for t, leader in leaders if (last_before is None or t >= last_before) and t <= end}) > 1:
        return "leader-change"
    return None


def _leaders(history: History) -> dict[tuple[str, int], list[tuple[int, int | None]]]:
    """(time, leader) of each topology sample, per partition."""
    out: dict[tuple[str, int], list[tuple[int, int | None]]] = {}
    for row in history.topology.sort("time_ns").iter_rows(named=True):
        out.setdefault((row["topic"], row["partition"]), []).append((row["time_ns"], row["leader"]))
    return out


def _holder_stops(history: History) -> dict[str, list[int]]:
    """When each consumer crashed or closed, or a consumer fault stopped it (not a freeze: checkers/common.py
    client_stops)."""
    stops: dict[str, list[int]] = {}
    for process, stop_ns in client_stops(history).iter_rows():
        stops.setdefault(process, []).append(stop_ns)
    return stops
