"""Rebalance: after a consumer dies or leaves, how long until its group owns every partition again.

A consumer event is a consumer fault (kill-consumer, close-consumer) or a client crash/close of a
group member that no such fault explains. The partitions its group owned at that moment must all
be assigned again to live members; pause_ms is how long that took, measured from the membership
events the consumers recorded (with the eager protocol even the survivors' partitions are revoked
and assigned again; with the cooperative one they are kept, and count as owned all along).

The survivors' partitions are the *kept* ones: with an incremental protocol (classic cooperative-sticky,
or KIP-848's group.protocol=consumer: checkers/group_protocol.py) a member's departure must not revoke
any of them, and one revoked during the handover is a `survivors-interrupted` violation (a revocation
the survivor reported as lost, its own session gone, is counted but not judged). For every partition
the group owned, moved or kept, gap_ms is its processing gap: from the group's last read of it before
the event to its first read after.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import median
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, client_stops, read_options, result
from failsafe.checkers.group_protocol import JAVA, KEEPS_SURVIVORS, group_protocols
from failsafe.history.model import History
from failsafe.history.ops import NODE_TARGETS, PAUSE_CONSUMER, Op, Target

# expect_survivors_kept: a departure must leave the survivors' partitions alone whatever the group's protocol (it must
# anyway when the protocol is incremental).
# session_timeout_ms_by_group: each group's session (a classic member's session.timeout.ms, a KIP-848 group's
# consumer.session.timeout.ms; absent: Kafka's 45 s), for judging a frozen member (pause-consumer).
DEFAULTS: dict[str, Any] = {"max_pause_ms": None, "expect_survivors_kept": False, "session_timeout_ms_by_group": {}}
VIOLATIONS = {"never-reassigned": Side.CONSUMERS, "slow-rebalance": Side.CONSUMERS, "survivors-interrupted": Side.CONSUMERS}
# A client's own crash/close record of a fault lands within this of the fault's start or stop.
_SAME_EVENT_NS = 30_000_000_000
_PARTITION = ["topic", "partition"]
# Kafka's session when none is set: both clients' session.timeout.ms and the broker's group.consumer.session.timeout.ms.
DEFAULT_SESSION_MS = 45_000
# A frozen member is expelled at most its session after its last heartbeat, which came before the freeze: past that (and
# this, for the coordinator's timers) its partitions must move.
_SESSION_SLACK_MS = 2_000
# A survivor that stops within this of the handover's end revoked its partitions for its own reasons (a close revokes them all).
_SURVIVOR_STOP_GRACE_NS = 10_000_000_000


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "rebalance")
    membership = history.membership.filter(pl.col("group").is_not_null()).sort("time_ns", maintain_order=True)
    events = consumer_events(history, membership)
    protocols = group_protocols(history)
    measured: list[dict[str, Any]] = []
    unmeasured_faults = 0
    # A share group's members (KIP-932) do not rebalance: a fault on them is the share checker's.
    share_members = set(history.share_deliveries["process"].to_list()) | set(history.share_acks["process"].to_list())
    for event in events:
        groups = membership.filter(pl.col("process").is_in(event["processes"]) & (pl.col("time_ns") <= event["start_ns"]))["group"].unique().to_list()
        if not groups:
            unmeasured_faults += event["source"] == "fault" and not set(event["processes"]) <= share_members
            continue
        for group in sorted(groups):
            event_measured = _measure(event, group, membership.filter(pl.col("group") == group), history)
            event_measured["protocol"] = protocols.get(group)
            event_measured["survivors_kept_expected"] = opts["expect_survivors_kept"] or protocols.get(group) in KEEPS_SURVIVORS
            measured.append(event_measured)
    _add_reads(measured, history.reads)

    limit_ms = opts["max_pause_ms"]
    for event in measured:
        # A member frozen for less than its session is never expelled: its group did not rebalance, and need not have.
        event["rebalanced"] = not _frozen_within_session(event, opts["session_timeout_ms_by_group"]) or any(
            moved["reassigned"] for moved in event["moved_partitions"])
    judged = [event for event in measured if event["rebalanced"]]
    stuck = [(event, moved) for event in measured for moved in event["moved_partitions"] if never_reassigned(event, moved)]
    slow = [event for event in judged if limit_ms is not None and event["members_alive_at_end"] and _slower(event["pause_ms"], limit_ms)]
    interrupted = [(event, kept) for event in measured for kept in event["kept_partitions"] if interrupted_survivor(kept)]
    needless = [(event, kept) for event, kept in interrupted if needlessly_interrupted(event, kept)]
    pauses = [event["pause_ms"] for event in measured if event["pause_ms"] is not None]
    counts = {
        "consumer-events": len(measured),
        "not-rebalanced": len(measured) - len(judged),
        "unmeasured-consumer-faults": unmeasured_faults,
        "moved-partitions": sum(len(event["moved_partitions"]) for event in measured),
        "never-reassigned": len(stuck),
        "slow-rebalance": len(slow),
        "kept-partitions": sum(len(event["kept_partitions"]) for event in measured),
        "interrupted-kept-partitions": len(interrupted),
        "lost-kept-partitions": sum(kept["lost"] for event in measured for kept in event["kept_partitions"]),
        "survivors-interrupted": len(needless),
    }
    example_rows = {
        "never-reassigned": [
            {"processes": event["processes"], "group": event["group"], "topic": moved["topic"], "partition": moved["partition"]} for event, moved in stuck[:5]
        ],
        "slow-rebalance": [{"processes": event["processes"], "group": event["group"], "pause_ms": event["pause_ms"]} for event in slow[:5]],
        "survivors-interrupted": [
            {"processes": event["processes"], "group": event["group"], "protocol": event["protocol"], "owner": kept["owner"],
             "topic": kept["topic"], "partition": kept["partition"], "revoked_ms": kept["revoked_ms"], "gap_ms": kept["gap_ms"]}
            for event, kept in needless[:5]
        ],
    }
    violations = [name for name, bad in (("never-reassigned", stuck), ("slow-rebalance", slow), ("survivors-interrupted", needless)) if bad]
    if violations:
        valid: bool | str = False
    elif unmeasured_faults and not measured:
        valid = UNKNOWN
    else:
        valid = True
    return result(
        valid,
        counts,
        example_rows,
        violations,
        events=measured,
        max_pause_ms=max(pauses) if pauses else None,
        median_pause_ms=float(median(pauses)) if pauses else None,
    )


def never_reassigned(event: Mapping[str, Any], moved: Mapping[str, Any]) -> bool:
    """A ``never-reassigned`` violation: a partition the event took that no member owned again while one lived, in a group
    that had to rebalance (not one whose member was frozen within its session)."""
    return bool(event["rebalanced"]) and not moved["reassigned"] and bool(event["members_alive_at_end"])


def interrupted_survivor(kept: Mapping[str, Any]) -> bool:
    """A kept partition (one of ``events[].kept_partitions``) its survivor gave up during the handover, not lost with its own session."""
    return bool(kept["revoked"]) and not kept["lost"]


def needlessly_interrupted(event: Mapping[str, Any], kept: Mapping[str, Any]) -> bool:
    """A ``survivors-interrupted`` violation: an interrupted survivor where the survivors were expected kept, and judged."""
    return interrupted_survivor(kept) and bool(event["survivors_kept_expected"]) and bool(kept["judged"])


def _frozen_within_session(event: dict[str, Any], sessions_ms: Mapping[str, float]) -> bool:
    """A pause-consumer that let its member go before the group's session could have run out."""
    if event["fault"] != PAUSE_CONSUMER or event["stop_ns"] is None:
        return False
    return (event["stop_ns"] - event["start_ns"]) / 1e6 < sessions_ms.get(event["group"], DEFAULT_SESSION_MS) + _SESSION_SLACK_MS


def _slower(pause_ms: float | None, limit_ms: float) -> bool:
    return pause_ms is None or pause_ms > limit_ms


def consumer_events(history: History, membership: pl.DataFrame) -> list[dict[str, Any]]:
    """Consumer faults, then crashes and closes of group members that no consumer fault explains."""
    faults = history.faults.filter(pl.col("target") == Target.CONSUMER)
    events = [
        {"source": "fault", "fault_id": row["fault_id"], "fault": row["fault"], "processes": sorted(row["nodes"] or []), "start_ns": row["start_ns"],
         "stop_ns": row["stop_ns"]}
        for row in faults.sort("start_ns").to_dicts()
    ]
    members = membership.group_by("process").agg(pl.col("time_ns").min().alias("joined_ns"))
    covered = faults.select(
        pl.col("nodes").alias("process"),
        (pl.col("start_ns") - _SAME_EVENT_NS).alias("from_ns"),
        (pl.max_horizontal("start_ns", "stop_ns") + _SAME_EVENT_NS).alias("to_ns"),
    ).explode("process")
    client = history.client_events.join(members, on="process", how="inner").filter(pl.col("time_ns") >= pl.col("joined_ns"))
    explained = client.join(covered, on="process", how="inner").filter(pl.col("time_ns").is_between(pl.col("from_ns"), pl.col("to_ns")))
    client = client.join(explained.select("process", "time_ns"), on=["process", "time_ns"], how="anti")
    events += [{"source": row["f"], "fault_id": None, "fault": None, "processes": [row["process"]], "start_ns": row["time_ns"], "stop_ns": None}
               for row in client.sort("time_ns").to_dicts()]
    return sorted(events, key=lambda event: event["start_ns"])


def _measure(event: dict[str, Any], group: str, membership: pl.DataFrame, history: History) -> dict[str, Any]:
    start_ns = event["start_ns"]
    faulted = event["processes"]
    before = membership.filter(pl.col("time_ns") <= start_ns)
    after = membership.filter(pl.col("time_ns") > start_ns)
    latest = before.group_by("process", *_PARTITION).agg(pl.col("f").last(), pl.col("time_ns").last())
    owned = latest.filter(pl.col("f") == Op.ASSIGN).select("process", *_PARTITION).sort(_PARTITION)
    # A member that crashed, closed or was faulted before the event, after its last assign or revoke, owns nothing any more
    # (a killed one never records a revoke); one restarted under the same name records an assign again.
    stops = client_stops(history)
    seen = before.group_by("process").agg(pl.col("time_ns").max().alias("seen_ns"))
    gone = stops.join(seen, on="process").filter((pl.col("stop_ns") >= pl.col("seen_ns")) & (pl.col("stop_ns") < start_ns))["process"]
    owned = owned.filter(~pl.col("process").is_in(sorted(set(gone.to_list()) - set(faulted))))
    moved = owned.filter(pl.col("process").is_in(faulted))
    kept = owned.filter(~pl.col("process").is_in(faulted))
    assigns = after.filter(pl.col("f") == Op.ASSIGN).select(pl.col("process").alias("new_owner"), *_PARTITION, pl.col("time_ns").alias("assigned_ns"))
    first_assign = assigns.sort("assigned_ns").group_by(_PARTITION).first()

    moved = moved.join(first_assign, on=_PARTITION, how="left")
    moved_rows = moved.to_dicts()
    reassigned_all = all(row["assigned_ns"] is not None for row in moved_rows)
    handover_end_ns = max((row["assigned_ns"] for row in moved_rows), default=start_ns) if reassigned_all else None

    # Survivors' partitions taken away during the handover must also be given back.
    revokes = after.filter(pl.col("f") == Op.REVOKE)
    if handover_end_ns is not None:
        revokes = revokes.filter(pl.col("time_ns") <= handover_end_ns)
    revoked = kept.join(revokes.select("process", *_PARTITION, pl.col("time_ns").alias("revoked_ns"), "lost"), on=["process", *_PARTITION], how="inner")
    revoked = revoked.sort("revoked_ns").group_by(_PARTITION).agg(pl.col("revoked_ns").first(), pl.col("lost").first().fill_null(False))
    kept_rows = kept.join(revoked, on=_PARTITION, how="left").sort(_PARTITION).to_dicts()
    revoked = revoked.select(*_PARTITION, "revoked_ns")
    # What survivors-interrupted may judge: a handover that completed, a survivor that did not stop itself soon after (a
    # close revokes everything), and not the Java consumer's revokes while a node was down (VerifiableConsumer reports a
    # lost partition as revoked, so its own expired session would look like the assignor's doing).
    judged_until = None if handover_end_ns is None else handover_end_ns + _SURVIVOR_STOP_GRACE_NS
    stopped_soon = set() if judged_until is None else set(
        stops.filter(pl.col("stop_ns").is_between(start_ns, judged_until))["process"].to_list())
    node_down = judged_until is not None and _node_fault_between(history, start_ns, judged_until)
    java = set(history.clients.filter(pl.col("client") == JAVA)["process"].to_list())
    regained = (
        revoked.join(assigns, on=_PARTITION, how="left")
        .group_by(_PARTITION)
        .agg(pl.col("assigned_ns").filter(pl.col("assigned_ns") >= pl.col("revoked_ns")).min())
    )
    all_back = reassigned_all and regained["assigned_ns"].null_count() == 0
    back_ns = [row["assigned_ns"] for row in moved_rows] + regained["assigned_ns"].drop_nulls().to_list()
    pause_ms = (max(back_ns, default=start_ns) - start_ns) / 1e6 if all_back else None

    return {
        "source": event["source"],
        "fault_id": event["fault_id"],
        "fault": event["fault"],
        "stop_ns": event["stop_ns"],
        "processes": faulted,
        "group": group,
        "start_ns": start_ns,
        "pause_ms": pause_ms,
        "all_reassigned": all_back,
        "members_alive_at_end": _members_alive_at_end(membership, faulted, start_ns, history),
        "moved_partitions": [
            {
                "topic": row["topic"],
                "partition": row["partition"],
                "previous_owner": row["process"],
                "new_owner": row["new_owner"],
                "reassigned": row["assigned_ns"] is not None,
                "reassigned_ms": None if row["assigned_ns"] is None else (row["assigned_ns"] - start_ns) / 1e6,
                "first_poll_after_ms": None,
                "gap_ms": None,
            }
            for row in moved_rows
        ],
        "kept_partitions": [
            {
                "topic": row["topic"],
                "partition": row["partition"],
                "owner": row["process"],
                "revoked": row["revoked_ns"] is not None,
                "lost": bool(row["lost"]),
                "revoked_ms": None if row["revoked_ns"] is None else (row["revoked_ns"] - start_ns) / 1e6,
                "judged": judged_until is not None and row["process"] not in stopped_soon and not (node_down and row["process"] in java),
                "gap_ms": None,
            }
            for row in kept_rows
        ],
    }


def _members_alive_at_end(membership: pl.DataFrame, faulted: list[str], start_ns: int, history: History) -> list[str]:
    """Other members of the group at start_ns that had not stopped for good by the end.

    A member stopped for good if it crashed, closed or was faulted after its last assign or revoke
    (a consumer restarted under the same name records an assign again).
    """
    others = membership.filter((pl.col("time_ns") <= start_ns) & ~pl.col("process").is_in(faulted))["process"].unique()
    last_seen = membership.group_by("process").agg(pl.col("time_ns").max().alias("seen_ns"))
    stopped = client_stops(history).join(last_seen, on="process", how="inner").filter(pl.col("stop_ns") >= pl.col("seen_ns"))["process"]
    return sorted(set(others.to_list()) - set(stopped.to_list()))


def _node_fault_between(history: History, start_ns: int, end_ns: int) -> bool:
    """A fault on Kafka's nodes in force at some moment of [start_ns, end_ns]."""
    faults = history.faults.filter(pl.col("target").is_in([str(t) for t in NODE_TARGETS]))
    return faults.filter((pl.col("start_ns") <= end_ns) & (pl.col("stop_ns").is_null() | (pl.col("stop_ns") >= start_ns))).height > 0


def _add_reads(measured: list[dict[str, Any]], reads: pl.DataFrame) -> None:
    """For each moved and kept partition of each event: first_poll_after_ms (moved only), its group's first read of it
    after the event by a member the event did not hit, and gap_ms, from the group's last read of it before the event to
    that first read after. The faulted members' own reads after the event are not the group's: a killed Java consumer's
    last reads are recorded as the JVM printed them, a few ms into the kill, and a frozen one's stale batch on waking."""
    rows = [
        {"event": index, "group": event["group"], "topic": p["topic"], "partition": p["partition"], "start_ns": event["start_ns"]}
        for index, event in enumerate(measured)
        for p in event["moved_partitions"] + event["kept_partitions"]
    ]
    if not rows:
        return
    schema = {"event": pl.Int64, "group": pl.String, "topic": pl.String, "partition": pl.Int64, "start_ns": pl.Int64}
    wanted = pl.DataFrame(rows, schema=schema).sort("start_ns")
    relevant = reads.join(wanted.select("group", *_PARTITION).unique(), on=["group", *_PARTITION], how="semi")
    relevant = relevant.select("group", "process", *_PARTITION, pl.col("time_ns").alias("read_ns")).sort("read_ns")
    found: dict[tuple[int, str, int], list[int | None]] = {}
    before = wanted.join_asof(relevant.drop("process"), left_on="start_ns", right_on="read_ns", by=["group", *_PARTITION], strategy="backward",
                              check_sortedness=False)
    for row in before.to_dicts():
        found.setdefault((row["event"], row["topic"], row["partition"]), [None, None])[0] = row["read_ns"]
    for index, event in enumerate(measured):
        others = relevant.filter(~pl.col("process").is_in(event["processes"])).drop("process")
        after = wanted.filter(pl.col("event") == index).join_asof(others, left_on="start_ns", right_on="read_ns", by=["group", *_PARTITION],
                                                                   strategy="forward", allow_exact_matches=False, check_sortedness=False)
        for row in after.to_dicts():
            found.setdefault((row["event"], row["topic"], row["partition"]), [None, None])[1] = row["read_ns"]
    for index, event in enumerate(measured):
        for p in event["moved_partitions"] + event["kept_partitions"]:
            before_ns, after_ns = found.get((index, p["topic"], p["partition"]), [None, None])
            if "first_poll_after_ms" in p:
                p["first_poll_after_ms"] = None if after_ns is None else (after_ns - event["start_ns"]) / 1e6
            p["gap_ms"] = None if before_ns is None or after_ns is None else (after_ns - before_ns) / 1e6
