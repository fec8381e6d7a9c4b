"""A run's share groups (KIP-932) and their records in flight, per group and partition, for the console. Pure.

Read from the history's share_deliveries (one row per record a share-poll acquired) and share_acks (one row per record a
share-ack acknowledged), as of a moment (by default the history's last op: for a running scenario, about now):

    acquired                          deliveries (a record delivered three times counts three)
    records                           distinct records delivered
    accepted / released / rejected    acknowledgements the broker took (share-ack ok)
    acks_refused / acks_unknown       acknowledgements it refused (fail) or that got no answer (info)
    in_flight                         deliveries still held: acquired, and since then not acknowledged by their holder
                                      (whatever the answer), not delivered again, not held longer than the acquisition
                                      lock, and the holder has not stopped (crashed, closed, or a consumer fault hit it)
    max_delivery_count                the highest delivery count the broker gave a record of the partition
    holders                           the members holding records in flight now, and how many each

The lock is the groups' share.record.lock.duration.ms as the run recorded it (``group-config``), else Kafka's default 30
s. What the broker did with a record is the share checker's to judge (checkers/share/deliveries.py): this is what the
clients saw."""

from __future__ import annotations

from typing import Any

import polars as pl

from failsafe.checkers.common import client_stops
from failsafe.checkers.share import deliveries as share
from failsafe.history.model import History
from failsafe.history.ops import OpType

DEFAULT_LOCK_DURATION_MS: float = share.DEFAULT_LOCK_DURATION_MS
_PARTITION = ["group", "topic", "partition"]
_RECORD = [*_PARTITION, "offset"]
_COUNTS = ("acquired", "records", "accepted", "released", "rejected", "acks_refused", "acks_unknown", "in_flight")


def recorded_lock_ms(history: History) -> float:
    """The longest share.record.lock.duration.ms the run recorded for its groups, else Kafka's default."""
    values = history.group_configs.filter(pl.col("name") == share.LOCK_DURATION)["value"].to_list()
    numbers = [float(v) for v in values if v is not None and v.isdigit()]
    return max(numbers, default=DEFAULT_LOCK_DURATION_MS)


def share_groups_view(
    history: History, as_of_ns: int | None = None, lock_duration_ms: float | None = None
) -> dict[str, Any]:
    lock_duration_ms = recorded_lock_ms(history) if lock_duration_ms is None else lock_duration_ms
    as_of_ns = last_ns(history) if as_of_ns is None else as_of_ns
    out: dict[str, Any] = {
        "as_of_ms": None if as_of_ns is None else as_of_ns // 1_000_000,
        "lock_duration_ms": lock_duration_ms,
        "groups": [],
    }
    if as_of_ns is None:
        return out
    deliveries = history.share_deliveries.filter(pl.col("time_ns") <= as_of_ns)
    acks = history.share_acks.filter(pl.col("time_ns") <= as_of_ns)
    held = in_flight(history, deliveries, acks, as_of_ns, lock_duration_ms)
    partitions = _partitions(deliveries, acks, held)
    stopped = _stopped(history, deliveries, acks, as_of_ns)
    for group in sorted(set(deliveries["group"].to_list()) | set(acks["group"].to_list())):
        rows = [row for row in partitions if row["group"] == group]
        members = _members(group, deliveries, held, stopped)
        out["groups"].append(
            {
                "group": group,
                **{name: sum(row[name] for row in rows) for name in _COUNTS},
                "max_delivery_count": max(
                    (row["max_delivery_count"] for row in rows if row["max_delivery_count"] is not None), default=None
                ),
                "members": members,
                "holders": [m["member"] for m in members if m["in_flight"]],
                "partitions": [{k: v for k, v in row.items() if k != "group"} for row in rows],
            }
        )
    return out


def in_flight(
    history: History, deliveries: pl.DataFrame, acks: pl.DataFrame, as_of_ns: int, lock_duration_ms: float
) -> pl.DataFrame:
    """The deliveries still held at ``as_of_ns`` (see the module's docstring), with the columns of share_deliveries."""
    if deliveries.height == 0:
        return deliveries
    rows = deliveries.sort([*_RECORD, "time_ns"]).with_columns(
        pl.col("time_ns").shift(-1).over(_RECORD).alias("next_ns")
    )
    acked = acks.select(*_RECORD, "process", pl.col("time_ns").alias("ack_ns")).sort("ack_ns")
    rows = rows.sort("time_ns").join_asof(
        acked,
        left_on="time_ns",
        right_on="ack_ns",
        by=[*_RECORD, "process"],
        strategy="forward",
        check_sortedness=False,
    )
    stops = client_stops(history).filter(pl.col("stop_ns") <= as_of_ns).sort("stop_ns")
    rows = rows.join_asof(
        stops, left_on="time_ns", right_on="stop_ns", by="process", strategy="forward", check_sortedness=False
    )
    lock_ns = int(lock_duration_ms * 1_000_000)
    ended = pl.min_horizontal("next_ns", "ack_ns", "stop_ns", pl.col("time_ns") + lock_ns)
    return rows.filter(ended > as_of_ns).select(deliveries.columns).sort(_RECORD)


def _partitions(deliveries: pl.DataFrame, acks: pl.DataFrame, held: pl.DataFrame) -> list[dict[str, Any]]:
    taken = pl.col("type") == OpType.OK
    delivered = deliveries.group_by(_PARTITION).agg(
        pl.len().alias("acquired"),
        pl.col("offset").n_unique().alias("records"),
        pl.col("delivery_count").max().alias("max_delivery_count"),
    )
    acknowledged = acks.group_by(_PARTITION).agg(
        *[
            (taken & (pl.col("ack") == kind)).sum().alias(name)
            for kind, name in (("accept", "accepted"), ("release", "released"), ("reject", "rejected"))
        ],
        (pl.col("type") == OpType.FAIL).sum().alias("acks_refused"),
        (pl.col("type") == OpType.INFO).sum().alias("acks_unknown"),
    )
    holding = held.group_by(*_PARTITION, "process").agg(pl.len().alias("in_flight")).sort("process")
    holders = holding.group_by(_PARTITION).agg(
        pl.col("in_flight").sum(), pl.struct(pl.col("process").alias("member"), "in_flight").alias("holders")
    )
    table = (
        delivered.join(acknowledged, on=_PARTITION, how="full", coalesce=True)
        .join(holders, on=_PARTITION, how="left")
        .with_columns(pl.col(name).fill_null(0) for name in _COUNTS)
        .with_columns(pl.col("holders").fill_null([]))
        .sort(_PARTITION)
    )
    return table.select(*_PARTITION, *_COUNTS, "max_delivery_count", "holders").to_dicts()


def _stopped(history: History, deliveries: pl.DataFrame, acks: pl.DataFrame, as_of_ns: int) -> set[str]:
    """Members that stopped after their last share op, by ``as_of_ns``."""
    last = (
        pl.concat([deliveries.select("process", "time_ns"), acks.select("process", "time_ns")])
        .group_by("process")
        .agg(pl.col("time_ns").max())
    )
    stops = client_stops(history).filter(pl.col("stop_ns") <= as_of_ns)
    return set(last.join(stops, on="process").filter(pl.col("stop_ns") >= pl.col("time_ns"))["process"].to_list())


def _members(group: str, deliveries: pl.DataFrame, held: pl.DataFrame, stopped: set[str]) -> list[dict[str, Any]]:
    acquired = dict(deliveries.filter(pl.col("group") == group).group_by("process").len().iter_rows())
    holding = dict(held.filter(pl.col("group") == group).group_by("process").len().iter_rows())
    return [
        {"member": m, "acquired": acquired.get(m, 0), "in_flight": holding.get(m, 0), "stopped": m in stopped}
        for m in sorted(acquired)
    ]


def last_ns(history: History) -> int | None:
    """The time of the history's last op (of the kinds that say when a run ended or what a share group did)."""
    times = [
        history.share_deliveries["time_ns"],
        history.share_acks["time_ns"],
        history.client_events["time_ns"],
        history.phases["time_ns"],
        history.events["time_ns"],
        history.faults["start_ns"],
        history.faults["stop_ns"],
        history.membership["time_ns"],
        history.reads["time_ns"],
        history.sends["invoke_ns"],
        history.sends["complete_ns"],
        history.topology["time_ns"],
    ]
    found = [t.max() for t in times if t.drop_nulls().len()]
    return max(found) if found else None  # type: ignore[type-var]
