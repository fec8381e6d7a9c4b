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

import bisect
import itertools
from collections.abc import Mapping
from statistics import median
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, client_stops, read_options, result
from failsafe.checkers.evidence import bound_ns, clock_bounds, declared_as
from failsafe.checkers.group_protocol import (
    DEFAULT_SESSION_MS,
    JAVA,
    KEEPS_SURVIVORS,
    group_protocols,
    group_sessions_ms,
)
from failsafe.history.model import History
from failsafe.history.ops import NODE_TARGETS, PAUSE_CONSUMER, RESTART_CONSUMER, Op, Role, Target

# expect_survivors_kept: a departure must leave the survivors' partitions alone whatever the group's protocol (it must
# anyway when the protocol is incremental). session_timeout_ms_by_group: each group's session (a classic member's
# session.timeout.ms, a KIP-848 group's consumer.session.timeout.ms; absent: the session.timeout.ms every member's
# client-config op shows, else Kafka's 45 s), for judging a frozen member (pause-consumer).
DEFAULTS: dict[str, Any] = {"max_pause_ms": None, "expect_survivors_kept": False, "session_timeout_ms_by_group": {}}
VIOLATIONS = {
    "never-reassigned": Side.CONSUMERS,
    "slow-rebalance": Side.CONSUMERS,
    "survivors-interrupted": Side.CONSUMERS,
}
# A client's own crash/close record of a fault lands within this of the fault's start or stop.
_SAME_EVENT_NS = 30_000_000_000
_PARTITION = ["topic", "partition"]
# A frozen member is expelled at most its session after its last heartbeat, which came before the freeze: past that (and
# this, for the coordinator's timers) its partitions must move.
_SESSION_SLACK_MS = 2_000
# A survivor that stops within this of the handover's end revoked its partitions for its own reasons (a close revokes
# them all).
_SURVIVOR_STOP_GRACE_NS = 10_000_000_000
# What a consumer event is: a member leaves (killed, closed, frozen past its session) or joins (restarted as a new
# process).
LEAVE = "leave"
JOIN = "join"


def _declared_share_member(history: History, process: str) -> bool:
    """Whether the scenario declared ``process`` a share group's member (a share consumer killed before its first
    delivery has no delivery or ack to say so)."""
    return any(row["role"] == Role.SHARE_CONSUMER for row in declared_as(history, process))


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "rebalance")
    membership = history.membership.filter(pl.col("group").is_not_null()).sort("time_ns", maintain_order=True)
    events = consumer_events(history, membership)
    protocols = group_protocols(history)
    measured: list[dict[str, Any]] = []
    unmeasured_faults = 0
    # A share group's members (KIP-932) do not rebalance: a fault on them is the share checker's.
    share_members = set(history.share_deliveries["process"].to_list()) | set(history.share_acks["process"].to_list())
    for index, event in enumerate(events):
        # A join is what the group gave its joiner before the next consumer event: later assignments are that event's.
        event["until_ns"] = min(
            (e["start_ns"] for e in events[index + 1 :] if e["start_ns"] > event["start_ns"]), default=None
        )
        groups = (
            membership.filter(pl.col("process").is_in(event["processes"]) & (pl.col("time_ns") <= event["start_ns"]))[
                "group"
            ]
            .unique()
            .to_list()
        )
        if not groups:
            unmeasured_faults += event["source"] == "fault" and not all(
                p in share_members or _declared_share_member(history, p) for p in event["processes"]
            )
            continue
        for group in sorted(groups):
            measure = _measure_join if event["kind"] == JOIN else _measure
            event_measured = measure(event, group, membership.filter(pl.col("group") == group), history)
            event_measured["protocol"] = protocols.get(group)
            event_measured["survivors_kept_expected"] = (
                opts["expect_survivors_kept"] or protocols.get(group) in KEEPS_SURVIVORS
            )
            measured.append(event_measured)
    _add_reads(measured, history.reads)

    limit_ms = opts["max_pause_ms"]
    # The scenario's sessions, else the one its members' client-config ops show (a cluster profile's
    # session.timeout.ms).
    sessions = {**group_sessions_ms(history), **opts["session_timeout_ms_by_group"]}
    for event in measured:
        # A member frozen for less than its session is never expelled: its group did not rebalance, and need not have.
        event["rebalanced"] = not _frozen_within_session(event, sessions) or any(
            moved["reassigned"] for moved in event["moved_partitions"]
        )
    judged = [event for event in measured if event["rebalanced"]]
    stuck = [
        (event, moved) for event in measured for moved in event["moved_partitions"] if never_reassigned(event, moved)
    ]
    # The pause runs from the fault (failsafe's clock) to a member's assign (a client on a host reads another clock):
    # slow only by more than the members' clock bound; within it, undecided.
    bounds = clock_bounds(history)
    slow, undecided_slow = [], []
    for event in judged:
        if limit_ms is None or not event["members_alive_at_end"]:
            continue
        bound_ms = max((bounds.get(p, 0) for p in _group_members(membership, event["group"])), default=0) / 1e6
        if _slower(event["pause_ms"], limit_ms + bound_ms):
            slow.append(event)
        elif _slower(event["pause_ms"], limit_ms):
            undecided_slow.append(event)
    interrupted = [
        (event, kept) for event in measured for kept in event["kept_partitions"] if interrupted_survivor(kept)
    ]
    needless = [(event, kept) for event, kept in interrupted if needlessly_interrupted(event, kept)]
    # A revoke within a survivor's clock bound of the handover's start or end may have been in it: undecided.
    undecided_kept = [
        (event, kept)
        for event in measured
        for kept in event["kept_partitions"]
        if kept.get("revoke_undecided") and event["survivors_kept_expected"] and kept["judged"]
    ]
    pauses = [event["pause_ms"] for event in measured if event["pause_ms"] is not None]
    counts = {
        "consumer-events": len(measured),
        "joins": sum(event["kind"] == JOIN for event in measured),
        "joins-without-assignment": sum(event["kind"] == JOIN and not event["processes"] for event in measured),
        "not-rebalanced": len(measured) - len(judged),
        "unmeasured-consumer-faults": unmeasured_faults,
        "moved-partitions": sum(len(event["moved_partitions"]) for event in measured),
        "never-reassigned": len(stuck),
        "slow-rebalance": len(slow),
        "slow-rebalance-undecided": len(undecided_slow),
        "kept-partitions": sum(len(event["kept_partitions"]) for event in measured),
        "interrupted-kept-partitions": len(interrupted),
        "lost-kept-partitions": sum(kept["lost"] for event in measured for kept in event["kept_partitions"]),
        "survivors-interrupted": len(needless),
        "survivors-interrupted-undecided": len(undecided_kept),
    }
    example_rows = {
        "never-reassigned": [
            {
                "processes": event["processes"],
                "group": event["group"],
                "kind": event["kind"],
                "start_ns": event["start_ns"],
                "topic": moved["topic"],
                "partition": moved["partition"],
            }
            for event, moved in stuck[:5]
        ],
        "slow-rebalance": [
            {
                "processes": event["processes"],
                "group": event["group"],
                "kind": event["kind"],
                "start_ns": event["start_ns"],
                "pause_ms": event["pause_ms"],
            }
            for event in slow[:5]
        ],
        "survivors-interrupted": [
            {
                "processes": event["processes"],
                "group": event["group"],
                "protocol": event["protocol"],
                "owner": kept["owner"],
                "topic": kept["topic"],
                "partition": kept["partition"],
                "revoked_ms": kept["revoked_ms"],
                "gap_ms": kept["gap_ms"],
            }
            for event, kept in needless[:5]
        ],
    }
    violations = [
        name
        for name, bad in (("never-reassigned", stuck), ("slow-rebalance", slow), ("survivors-interrupted", needless))
        if bad
    ]
    if violations:
        valid: bool | str = False
    elif (unmeasured_faults and not measured) or undecided_slow or undecided_kept:
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
    """A ``never-reassigned`` violation: a partition the event took that no member owned again while one lived, in a
    group that had to rebalance (not one whose member was frozen within its session)."""
    return bool(event["rebalanced"]) and not moved["reassigned"] and bool(event["members_alive_at_end"])


def interrupted_survivor(kept: Mapping[str, Any]) -> bool:
    """A kept partition (one of ``events[].kept_partitions``) its survivor gave up during the handover, not lost with
    its own session."""
    return bool(kept["revoked"]) and not kept["lost"]


def needlessly_interrupted(event: Mapping[str, Any], kept: Mapping[str, Any]) -> bool:
    """A ``survivors-interrupted`` violation: an interrupted survivor where the survivors were expected kept, and
    judged."""
    return interrupted_survivor(kept) and bool(event["survivors_kept_expected"]) and bool(kept["judged"])


def _frozen_within_session(event: dict[str, Any], sessions_ms: Mapping[str, float]) -> bool:
    """A pause-consumer that let its member go before the group's session could have run out."""
    if event["fault"] != PAUSE_CONSUMER or event["stop_ns"] is None:
        return False
    return (event["stop_ns"] - event["start_ns"]) / 1e6 < sessions_ms.get(
        event["group"], DEFAULT_SESSION_MS
    ) + _SESSION_SLACK_MS


def _group_members(membership: pl.DataFrame, group: str | None) -> list[str]:
    return membership.filter(pl.col("group") == group)["process"].drop_nulls().unique().to_list()


def _slower(pause_ms: float | None, limit_ms: float) -> bool:
    return pause_ms is None or pause_ms > limit_ms


def consumer_events(history: History, membership: pl.DataFrame) -> list[dict[str, Any]]:
    """Consumer faults (a restart-consumer twice: its leave, and its member's join when it ends), then crashes and
    closes of group members that no consumer fault explains."""
    faults = history.faults.filter(pl.col("target") == Target.CONSUMER)
    events = [
        {
            "source": "fault",
            "kind": LEAVE,
            "fault_id": row["fault_id"],
            "fault": row["fault"],
            "processes": sorted(row["nodes"] or []),
            "start_ns": row["start_ns"],
            "stop_ns": row["stop_ns"],
        }
        for row in faults.sort("start_ns").to_dicts()
    ]
    # A restarted member joins again as a new process when its fault ends: its group's second rebalance.
    events += [
        {**event, "kind": JOIN, "left": event["processes"], "start_ns": event["stop_ns"], "stop_ns": None}
        for event in list(events)
        if event["fault"] == RESTART_CONSUMER and event["stop_ns"] is not None
    ]
    members = membership.group_by("process").agg(pl.col("time_ns").min().alias("joined_ns"))
    covered = faults.select(
        pl.col("nodes").alias("process"),
        (pl.col("start_ns") - _SAME_EVENT_NS).alias("from_ns"),
        (pl.max_horizontal("start_ns", "stop_ns") + _SAME_EVENT_NS).alias("to_ns"),
    ).explode("process")
    client = history.client_events.join(members, on="process", how="inner").filter(
        pl.col("time_ns") >= pl.col("joined_ns")
    )
    explained = client.join(covered, on="process", how="inner").filter(
        pl.col("time_ns").is_between(pl.col("from_ns"), pl.col("to_ns"))
    )
    client = client.join(explained.select("process", "time_ns"), on=["process", "time_ns"], how="anti")
    events += [
        {
            "source": row["f"],
            "kind": LEAVE,
            "fault_id": None,
            "fault": None,
            "processes": [row["process"]],
            "start_ns": row["time_ns"],
            "stop_ns": None,
        }
        for row in client.sort("time_ns").to_dicts()
    ]
    return sorted(events, key=lambda event: event["start_ns"])


def _measure(event: dict[str, Any], group: str, membership: pl.DataFrame, history: History) -> dict[str, Any]:
    start_ns = event["start_ns"]
    faulted = event["processes"]
    after = membership.filter(pl.col("time_ns") > start_ns)
    stops = client_stops(history)
    owned = _owned(membership, stops, start_ns, faulted)
    moved = owned.filter(pl.col("process").is_in(faulted))
    kept = owned.filter(~pl.col("process").is_in(faulted))
    assigns = after.filter(pl.col("f") == Op.ASSIGN).select(
        pl.col("process").alias("new_owner"), *_PARTITION, pl.col("time_ns").alias("assigned_ns")
    )
    first_assign = assigns.sort("assigned_ns").group_by(_PARTITION).first()

    moved = moved.join(first_assign, on=_PARTITION, how="left")
    moved_rows = moved.to_dicts()
    reassigned_all = all(row["assigned_ns"] is not None for row in moved_rows)
    handover_end_ns = max((row["assigned_ns"] for row in moved_rows), default=start_ns) if reassigned_all else None

    return _handover(
        event, group, faulted, membership, history, stops, kept, moved_rows, assigns, handover_end_ns, reassigned_all
    )


def _measure_join(event: dict[str, Any], group: str, membership: pl.DataFrame, history: History) -> dict[str, Any]:
    """A restarted member's join: the partitions the group gives the joiner (a new process, first seen in the group
    within _SAME_EVENT_NS of the restart) before the next consumer event (``until_ns``) are the moved ones, every other
    partition owned at the restart a kept one."""
    start_ns = event["start_ns"]
    until_ns = (
        start_ns + _SAME_EVENT_NS
        if event.get("until_ns") is None
        else min(event["until_ns"], start_ns + _SAME_EVENT_NS)
    )
    first_seen = membership.group_by("process").agg(pl.col("time_ns").min().alias("first_ns"))
    joiners = sorted(
        first_seen.filter((pl.col("first_ns") >= start_ns) & (pl.col("first_ns") < until_ns))["process"].to_list()
    )
    after = membership.filter((pl.col("time_ns") > start_ns) & (pl.col("time_ns") < until_ns))
    stops = client_stops(history)
    owned = _owned(membership, stops, start_ns, [])
    assigns = after.filter(pl.col("f") == Op.ASSIGN).select(
        pl.col("process").alias("new_owner"), *_PARTITION, pl.col("time_ns").alias("assigned_ns")
    )
    given = assigns.filter(pl.col("new_owner").is_in(joiners)).sort("assigned_ns").group_by(_PARTITION).first()
    # A partition nobody owned when the member came back (its own, not yet handed over) has no previous owner.
    moved_rows = given.join(owned, on=_PARTITION, how="left").sort(_PARTITION).to_dicts()
    kept = owned.join(given.select(_PARTITION), on=_PARTITION, how="anti")
    handover_end_ns = max((row["assigned_ns"] for row in moved_rows), default=start_ns)
    measured = _handover(
        event, group, joiners, membership, history, stops, kept, moved_rows, assigns, handover_end_ns, bool(joiners)
    )
    measured["left"] = event.get("left", [])
    return measured


def _owned(membership: pl.DataFrame, stops: pl.DataFrame, start_ns: int, faulted: list[str]) -> pl.DataFrame:
    """(process, topic, partition) each member owned at start_ns by its own last assign or revoke. A member that
    crashed, closed or was faulted before then, after its last assign or revoke, owns nothing any more (a killed one
    never records a revoke); the faulted ones are kept, as what the event takes."""
    before = membership.filter(pl.col("time_ns") <= start_ns)
    latest = before.group_by("process", *_PARTITION).agg(pl.col("f").last(), pl.col("time_ns").last())
    owned = latest.filter(pl.col("f") == Op.ASSIGN).select("process", *_PARTITION).sort(_PARTITION)
    seen = before.group_by("process").agg(pl.col("time_ns").max().alias("seen_ns"))
    gone = stops.join(seen, on="process").filter(
        (pl.col("stop_ns") >= pl.col("seen_ns")) & (pl.col("stop_ns") < start_ns)
    )["process"]
    return owned.filter(~pl.col("process").is_in(sorted(set(gone.to_list()) - set(faulted))))


def _handover(
    event: dict[str, Any],
    group: str,
    faulted: list[str],
    membership: pl.DataFrame,
    history: History,
    stops: pl.DataFrame,
    kept: pl.DataFrame,
    moved_rows: list[dict[str, Any]],
    assigns: pl.DataFrame,
    handover_end_ns: int | None,
    reassigned_all: bool,
) -> dict[str, Any]:
    """The measured event: the survivors' (kept) partitions revoked until the moved ones were all owned again and
    whether they were given back, the pause until all were, and what survivors-interrupted may judge."""
    start_ns = event["start_ns"]
    # Survivors' partitions taken away during the handover must also be given back; a revoke counts as in it by more
    # than its consumer's clock bound (a consumer on a host reads another clock than the fault's).
    bound = bound_ns("process", clock_bounds(history))
    revokes = membership.filter((pl.col("time_ns") - bound > start_ns) & (pl.col("f") == Op.REVOKE))
    # Within the bound of the handover's start or end: maybe in it, maybe not (undecided).
    possible = membership.filter(
        (pl.col("time_ns") + bound > start_ns) & (pl.col("f") == Op.REVOKE) & ~pl.col("lost").fill_null(False)
    )
    if handover_end_ns is not None:
        revokes = revokes.filter(pl.col("time_ns") + bound <= handover_end_ns)
        possible = possible.filter(pl.col("time_ns") - bound <= handover_end_ns)
    maybe = {
        (r["topic"], r["partition"])
        for r in kept.join(possible.select("process", *_PARTITION), on=["process", *_PARTITION], how="semi").to_dicts()
    }
    revoked = kept.join(
        revokes.select("process", *_PARTITION, pl.col("time_ns").alias("revoked_ns"), "lost"),
        on=["process", *_PARTITION],
        how="inner",
    )
    revoked = (
        revoked.sort("revoked_ns")
        .group_by(_PARTITION)
        .agg(pl.col("revoked_ns").first(), pl.col("lost").first().fill_null(False))
    )
    kept_rows = kept.join(revoked, on=_PARTITION, how="left").sort(_PARTITION).to_dicts()
    revoked = revoked.select(*_PARTITION, "revoked_ns")
    # What survivors-interrupted may judge: a handover that completed, a survivor that did not stop itself soon after (a
    # close revokes everything), and not the Java consumer's revokes while a node was down (VerifiableConsumer reports a
    # lost partition as revoked, so its own expired session would look like the assignor's doing).
    judged_until = None if handover_end_ns is None else handover_end_ns + _SURVIVOR_STOP_GRACE_NS
    stopped_soon = (
        set()
        if judged_until is None
        else set(stops.filter(pl.col("stop_ns").is_between(start_ns, judged_until))["process"].to_list())
    )
    node_down = judged_until is not None and _node_fault_between(history, start_ns, judged_until)
    java = set(history.clients.filter(pl.col("client") == JAVA)["process"].to_list())
    regained = (
        revoked.join(assigns, on=_PARTITION, how="left")
        .group_by(_PARTITION)
        .agg(pl.col("assigned_ns").filter(pl.col("assigned_ns") >= pl.col("revoked_ns")).min())
    )
    all_back = reassigned_all and regained["assigned_ns"].null_count() == 0
    back_ns = [row["assigned_ns"] for row in moved_rows] + regained["assigned_ns"].drop_nulls().to_list()
    settled_ns = max(back_ns, default=start_ns) if all_back else None

    return {
        "source": event["source"],
        "kind": event["kind"],
        "fault_id": event["fault_id"],
        "fault": event["fault"],
        "stop_ns": event["stop_ns"],
        "processes": faulted,
        "group": group,
        "start_ns": start_ns,
        "settled_ns": settled_ns,
        "pause_ms": None if settled_ns is None else (settled_ns - start_ns) / 1e6,
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
                "revoke_undecided": row["revoked_ns"] is None and (row["topic"], row["partition"]) in maybe,
                "lost": bool(row["lost"]),
                "revoked_ms": None if row["revoked_ns"] is None else (row["revoked_ns"] - start_ns) / 1e6,
                "judged": judged_until is not None
                and row["process"] not in stopped_soon
                and not (node_down and row["process"] in java),
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
    stopped = (
        client_stops(history)
        .join(last_seen, on="process", how="inner")
        .filter(pl.col("stop_ns") >= pl.col("seen_ns"))["process"]
    )
    return sorted(set(others.to_list()) - set(stopped.to_list()))


def _node_fault_between(history: History, start_ns: int, end_ns: int) -> bool:
    """A fault on Kafka's nodes in force at some moment of [start_ns, end_ns]."""
    faults = history.faults.filter(pl.col("target").is_in([str(t) for t in NODE_TARGETS]))
    return (
        faults.filter(
            (pl.col("start_ns") <= end_ns) & (pl.col("stop_ns").is_null() | (pl.col("stop_ns") >= start_ns))
        ).height
        > 0
    )


def _add_reads(measured: list[dict[str, Any]], reads: pl.DataFrame) -> None:
    """For each moved and kept partition of each event, its processing gap (gap_ms): the longest stretch with no read of
    it by its group, from the group's last read of it before the event to its first read after the event settled (every
    partition it moved owned again and every survivor's partition it revoked given back: settled_ns; when it never
    settled, the first read after the event). So a survivor's partition that an eager rebalance revoked and gave back
    has the pause between, however long the survivor read on before the revoke. A leaving member's own reads after the
    event are not its group's: a killed Java consumer's last reads are recorded as the JVM printed them, a few ms into
    the kill, and a frozen one's stale batch on waking. first_poll_after_ms (moved partitions): the first read after the
    event by the partition's new owner (a join), or by any member the event did not take away (a leave)."""
    if not any(event["moved_partitions"] or event["kept_partitions"] for event in measured):
        return
    wanted = pl.DataFrame(
        [
            {"group": event["group"], "topic": p["topic"], "partition": p["partition"]}
            for event in measured
            for p in event["moved_partitions"] + event["kept_partitions"]
        ]
    ).unique()
    relevant = reads.join(wanted, on=["group", *_PARTITION], how="semi").select(
        "group", "process", *_PARTITION, "time_ns"
    )
    for event in measured:
        start_ns, settled_ns = event["start_ns"], event["settled_ns"]
        own = relevant.filter(pl.col("group") == event["group"])
        if event["kind"] == LEAVE:
            own = own.filter(~(pl.col("process").is_in(event["processes"]) & (pl.col("time_ns") > start_ns)))
        by_partition = {
            (row["topic"], row["partition"]): (row["time_ns"], row["process"])
            for row in own.sort("time_ns").group_by(_PARTITION).agg("time_ns", "process").to_dicts()
        }
        for p in event["moved_partitions"] + event["kept_partitions"]:
            times, processes = by_partition.get((p["topic"], p["partition"]), ([], []))
            after = bisect.bisect_right(times, start_ns)
            if "first_poll_after_ms" in p:
                owner = p["new_owner"] if event["kind"] == JOIN else None
                first = next(
                    (
                        t
                        for t, who in zip(times[after:], processes[after:], strict=True)
                        if owner is None or who == owner
                    ),
                    None,
                )
                p["first_poll_after_ms"] = None if first is None else (first - start_ns) / 1e6
            p["gap_ms"] = _longest_gap_ms(times, after, settled_ns)


def _longest_gap_ms(times: list[int], after: int, settled_ns: int | None) -> float | None:
    """The longest interval between consecutive reads from the last one before the event (times[after - 1]) to the first
    one at or after settled_ns (the first after the event when it never settled); None without a read on either side."""
    if after == 0 or after == len(times):
        return None
    end = after if settled_ns is None else bisect.bisect_left(times, settled_ns, lo=after)
    if end == len(times):
        return None
    return max(b - a for a, b in itertools.pairwise(times[after - 1 : end + 1])) / 1e6
