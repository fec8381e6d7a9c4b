"""Explanations: for each anomaly example a checker reported, what happened around it, in one sentence.

``explain(history, results)`` reads only the history and the checkers' results (their examples);
it judges nothing. Each explanation names the anomaly, the write or the place it concerns, the
send and reads involved, the partition's leader and ISR changes and the faults within
``window_s`` of it, the phase, the client's settings that matter, and says it in a ``sentence``
(docs/checkers.md, "Explanations"). An example that cannot be explained (data that does not hold
together) gets ``error`` instead, and the others are still explained.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from failsafe.checkers.explain.context import Context
from failsafe.checkers.explain.words import client_words, context_words, fault_words, place, seconds
from failsafe.checkers.rebalance import JOIN, consumer_events
from failsafe.checkers.run import kinds_checkers
from failsafe.history.model import History
from failsafe.history.ops import Op

DEFAULT_WINDOW_S = 15.0
_LOST_BY_LOG = ("lost-not-in-log", "lost-in-log-not-consumed", "lost-unverified")
# Explained even when the scenario's options allowed them: loss and duplication are what a reader asks about.
ALWAYS = {"delivery": {*_LOST_BY_LOG, "lost-after-read", "duplicate"}, "availability": {"never-available-again"}}
# The examples that stand for a violation of another name (lost-write and unseen repeat the by-log lists).
_EXAMPLES_OF = {
    ("delivery", "lost"): _LOST_BY_LOG,
    ("delivery", "duplicate-acknowledged"): ("duplicate",),
    ("delivery", "duplicate-unacknowledged"): ("duplicate",),
}

Explanation = dict[str, Any]


def explain(history: History, results: Mapping, window_s: float = DEFAULT_WINDOW_S) -> list[Explanation]:
    """One explanation per example of every violated anomaly (and of every loss and duplicate)."""
    ctx = Context.of(history, window_s)
    out: list[Explanation] = []
    for checker, entry in (results.get("checkers") or {}).items():
        if not isinstance(entry, Mapping):
            continue
        examples = entry.get("examples") or {}
        wanted = set(ALWAYS.get(checker, ()))
        for violation in entry.get("violations") or []:
            wanted.update(_EXAMPLES_OF.get((checker, violation), (violation,)))
        for anomaly, rows in examples.items():
            if anomaly not in wanted:
                continue
            for row in rows:
                out.append(_explain_one(ctx, checker, anomaly, row, results))
    return out


def _explain_one(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    # A checker with words of its own first (a transaction's lost-write is not delivery's), then by the anomaly's name.
    explainer = _BY_CHECKER.get(checker) or _EXPLAINERS.get(anomaly, _generic)
    try:
        return {"checker": checker, "anomaly": anomaly, **explainer(ctx, checker, anomaly, row, results)}
    except Exception as e:  # noqa: BLE001 - like a checker's error: this example unexplained, never the check crashed
        return {
            "checker": checker,
            "anomaly": anomaly,
            "example": dict(row),
            "error": f"{type(e).__name__}: {e}",
            "sentence": f"{checker} {anomaly}: could not be explained ({type(e).__name__}: {e})",
        }


def _around(ctx: Context, ns: int, topic: str | None, partition: int | None, process: str | None) -> Explanation:
    """What every explanation carries about its moment: time, phase, leadership, faults, client."""
    leadership = ctx.leadership(topic, partition, ns) if topic is not None and partition is not None else []
    faults = ctx.faults_near(ns)
    if topic is not None and partition is not None:
        for f in faults:
            # What the faulted broker was to this partition: a follower's fault stalls acks=all too.
            f["partition_role"] = ctx.role_of(f, topic, partition)
            f["partition"] = place(topic, partition)
    return {
        "time_s": ctx.s(ns),
        "time_ns": ns,
        "phase": ctx.phase_at(ns),
        "leadership": leadership,
        "faults": faults,
        "client": ctx.client(process),
    }


def _tail(ctx: Context, ns: int, around: Explanation) -> str:
    """The sentence's ending: where this fell relative to leader changes and faults, then the client."""
    parts = [context_words(ctx, ns, around["leadership"], around["faults"], ctx.elections_near(ns))]
    if around["client"] is not None:
        parts.append(client_words(around["client"]))
    return "; ".join(p for p in parts if p)


# -- one write ------------------------------------------------------------------------------------
def _duplicate(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    topic, value = row["topic"], row["value"]
    copies = list(zip(row["partition"], row["offset"], strict=True))
    if len(copies) < 2:
        raise ValueError(f"a duplicate of {value!r} with {len(copies)} copies")
    send = ctx.send_of_value(topic, value)
    acked = (row.get("acked_partition"), row.get("acked_offset"))
    ns = _moment(send) if send is not None else min(r["time_ns"] for r in ctx.reads_of_value(topic, value))
    around = _around(ctx, ns, topic, copies[0][0], send["process"] if send else None)
    latency = (
        seconds((send["complete_ns"] - send["invoke_ns"]) / 1e9) if send and send["complete_ns"] is not None else None
    )
    words = []
    one_partition = len({p for p, _ in copies}) == 1
    for p, o in copies:
        where = f"{o}" if one_partition else f"{o} of {place(topic, p)}"
        note = f"acknowledged {latency} s after it was sent" if (p, o) == acked else "never acknowledged"
        words.append(f"{where} ({note})")
    times = {2: "twice", 3: "three times"}.get(len(copies), f"{len(copies)} times")
    target = f" to {place(topic, copies[0][0])}" if one_partition else ""
    sentence = f"value {value} was written {times}{target}, at offsets {_and(words)}"
    if send is None:
        sentence += " (no send of it is in the history)"
    return {
        "value": value,
        "topic": topic,
        "partition": copies[0][0],
        "offsets": [o for _, o in copies],
        "ops": ctx.send_ops(send) + ctx.read_ops(ctx.reads_of_value(topic, value)),
        **around,
        "sentence": f"{sentence}, {_tail(ctx, ns, around)}",
    }


def _lost(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    send = _send_of_row(ctx, row)
    topic, partition, value = send["topic"], send["partition"], send["value"]
    ns = _moment(send)
    around = _around(ctx, ns, topic, partition, send["process"])
    leader = ctx.leader_at(topic, partition, ns) if partition is not None else None
    at = (
        f"at offset {send['offset']} of {place(topic, partition)}"
        if send["offset"] is not None
        else f"to {place(topic, partition)} (no offset: acks=0)"
    )
    led = f" (leader broker {leader['leader']})" if leader is not None and leader["leader"] >= 0 else ""
    now = row.get("log_value")
    fate = {
        "lost-not-in-log": "was never read and is not in any broker's log",
        "lost-in-log-not-consumed": "is in the log but no consumer read it",
        "lost-unverified": "was never read, and the log could not be read to tell whether a broker lost it",
        "lost-after-read": "was read, and is no longer in the log: it was truncated after it was read"
        + (f" (the offset now holds {now})" if now is not None else ""),
    }.get(anomaly, "was never read")
    sentence = f"value {value} acknowledged {at} at {ctx.s(ns)} s{led} {fate}"
    return {
        "value": value,
        "topic": topic,
        "partition": partition,
        "offsets": [send["offset"]],
        "ops": ctx.send_ops(send),
        **around,
        "in_log": ctx.in_log(topic, value),
        "sentence": f"{sentence}; {_loss_context(ctx, ns, around, topic, partition)}",
    }


def _durability(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    """A durable writer's acknowledged write absent from a complete final read of its partition: as delivery words it
    (read and then truncated, or never read), or, for a write the history does not hold (the pipeline's ledger), from
    the row."""
    if row.get("id") is not None and ctx.send_of_id(row["process"], row["id"]) is not None:
        read = bool(ctx.reads_of_value(row["topic"], row["value"]))
        explained = _lost(ctx, checker, "lost-after-read" if read else "lost-not-in-log", row, results)
        return {
            **explained,
            "sentence": explained["sentence"].replace("any broker's log", "the final read of its partition", 1),
        }
    at = f"offset {row['offset']} of " if row.get("offset") is not None else ""
    now = f" (the offset now holds {row['log_value']})" if row.get("log_value") is not None else ""
    return {
        "value": row.get("value"),
        "topic": row.get("topic"),
        "partition": row.get("partition"),
        "offsets": [row.get("offset")],
        "sentence": f"value {row.get('value')} that {row.get('process')} recorded as acknowledged at "
        f"{at}{place(row['topic'], row['partition'])} "
        f"is not in the final read of its partition, which was read completely{now}",
    }


_CLIENT_FATES = {
    "absent": "has no op at all in the history: it never started, or its ops were lost",
    "never-wrote": "never sent a write",
    "never-assigned": "never got a partition from its group",
    "never-read": "read nothing",
}


def _clients(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    """A declared client the run does not account for: which, what it was declared to do, and what it did not."""
    who = row.get("reader") or f"{row.get('role')} {row.get('process')}"
    processes = row.get("processes") or [row.get("process")]
    topics = ", ".join(row.get("topics") or [])
    writes = (
        f", though {row['acknowledged_writes']} writes were acknowledged to them"
        if row.get("acknowledged_writes")
        else ""
    )
    return {
        "processes": processes,
        "topics": row.get("topics"),
        "sentence": f"the scenario declared {who} ({', '.join(str(p) for p in processes)}) on {topics}; it "
        f"{_CLIENT_FATES[anomaly]}{writes}",
    }


def _loss_context(ctx: Context, ns: int, around: Explanation, topic: str, partition: int) -> str:
    """The fault window the write fell in (or nearest), and the first leader after that fault began."""
    faults = sorted(around["faults"], key=lambda f: abs(f["start_ns"] - ns))
    if not faults:
        return _tail(ctx, ns, around)
    fault = faults[0]
    ran = (
        f"ran {fault['start_s']}–{fault['stop_s']} s"
        if fault["stop_s"] is not None
        else f"began at {fault['start_s']} s and was never undone"
    )
    parts = [f"{fault_words(fault)} {ran}"]
    before = ctx.leader_at(topic, partition, fault["start_ns"])
    nodes = {str(n) for n in fault["nodes"]}
    new = next(
        (
            c
            for c in ctx.leadership(topic, partition, fault["start_ns"] + ctx.window_ns)
            if c["time_ns"] > fault["start_ns"]
            and c["leader"] >= 0
            and str(c["leader"]) not in nodes
            and c["leader"] != c["previous_leader"]
        ),
        None,
    )
    if new is not None:
        in_isr = before is not None and new["leader"] in (before["isr"] or [])
        parts.append(
            f"new leader broker {new['leader']} at {new['time_s']} s, {'in' if in_isr else 'not in'} the ISR "
            f"before the fault"
        )
    if around["client"] is not None:
        parts.append(client_words(around["client"]))
    return "; ".join(parts)


def _send_anomaly(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    """failed-but-present, unknown-not-recovered, missing, and an ack at another place than the read
    (inconsistent-offsets)."""
    if "id" not in row:
        return _conflict(ctx, checker, anomaly, row, results)
    send = _send_of_row(ctx, row)
    topic, value = send["topic"], send["value"]
    ns = _moment(send)
    reads = ctx.reads_of_value(topic, value)
    around = _around(ctx, ns, topic, send["partition"], send["process"])
    if anomaly == "failed-but-present":
        seen = [f"offset {r['offset']} of {place(topic, r['partition'])}" for r in reads]
        seen = seen or [
            f"offset {r['offset']} of {place(topic, r['partition'])} in the log" for r in ctx.in_log(topic, value)
        ]
        what = f"value {value}'s send failed with {send['error']} at {ctx.s(ns)} s, yet it is at {_and(seen)}"
    elif anomaly == "unknown-not-recovered":
        what = (
            f"value {value}'s send ended with unknown outcome ({send['error'] or 'never completed'}) at "
            f"{ctx.s(ns)} s and nobody read it"
        )
    elif anomaly == "missing":
        what = (
            f"group {row['group']} never read value {value}, acknowledged at offset {send['offset']} of "
            f"{place(topic, send['partition'])} at {ctx.s(ns)} s"
        )
    else:
        what = (
            f"value {value} was acknowledged at offset {row['offset']} of {place(topic, row['partition'])} "
            f"but read at offset {row['read_offset']} of {place(topic, row['read_partition'])}"
        )
    return {
        "value": value,
        "topic": topic,
        "partition": send["partition"],
        "offsets": [send["offset"]],
        "ops": ctx.send_ops(send) + ctx.read_ops(reads),
        **around,
        "sentence": f"{what}, {_tail(ctx, ns, around)}",
    }


def _conflict(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    topic, partition, offset = row["topic"], row["partition"], row["offset"]
    reads = ctx.reads_at(topic, partition, offset)
    ns = min(r["time_ns"] for r in reads) if reads else _moment(ctx.send_of_value(topic, row["value"][0]))
    values = list(row["value"])
    producer = next((s["process"] for v in values if (s := ctx.send_of_value(topic, v)) is not None), None)
    around = _around(ctx, ns, topic, partition, producer)
    what = f"offset {offset} of {place(topic, partition)} was seen holding {len(values)} values ({_and(values)})"
    return {
        "values": values,
        "topic": topic,
        "partition": partition,
        "offsets": [offset],
        "ops": ctx.read_ops(reads),
        **around,
        "sentence": f"{what}, {_tail(ctx, ns, around)}",
    }


# -- reads and sends in order -----------------------------------------------------------------------
def _order(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    topic, partition, process = row["topic"], row["partition"], row["process"]
    if anomaly == "nonmonotonic-send":
        send = _send_of_row(ctx, row)
        ns = _moment(send)
        what = (
            f"{process}'s send {row['id']} was acknowledged at offset {row['offset']} of {place(topic, partition)}, "
            f"at or below send {row['previous_id']}'s offset {row['previous_offset']}"
        )
        ops = ctx.send_ops(send) + ctx.send_ops(ctx.send_of_id(process, row["previous_id"]))
    else:
        reads = [r for r in ctx.reads_at(topic, partition, row["offset"]) if r["process"] == process]
        if not reads:
            raise ValueError(f"{process} has no read of offset {row['offset']} of {place(topic, partition)}")
        ns = reads[0]["time_ns"]
        ops = ctx.read_ops(reads)
        if anomaly == "poll-skip":
            what = (
                f"{process} jumped from offset {row['previous_offset']} to {row['offset']} of "
                f"{place(topic, partition)}, skipping offset {row['skipped_offset']}, which exists"
            )
        elif anomaly == "key-reordered":
            what = (
                f"{process} read key {row['key']} of {place(topic, partition)} at offset {row['offset']} after "
                f"offset {row['previous_offset']}"
            )
        else:
            what = (
                f"{process} read offset {row['offset']} of {place(topic, partition)} after offset "
                f"{row['previous_offset']}"
            )
        what += " in the same assignment"
    around = _around(ctx, ns, topic, partition, process)
    return {
        "topic": topic,
        "partition": partition,
        "offsets": [row["previous_offset"], row["offset"]],
        "ops": ops,
        **around,
        "sentence": f"{what} at {ctx.s(ns)} s, {_tail(ctx, ns, around)}",
    }


def _double_delivery(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    topic, partition, ns = row["topic"], row["partition"], row["time_ns"]
    around = _around(ctx, ns, topic, partition, row["process"])
    what = (
        f"offset {row['offset']} of {place(topic, partition)} reached {row['process']} of group {row['group']} "
        f"at {ctx.s(ns)} s "
        f"after {row['previous_process']} had it at {ctx.s(row['previous_ns'])} s, with no rebalance in between"
    )
    if anomaly == "stale-delivery":
        what += f"; {row['process']} reported the partition lost at {ctx.s(row['lost_ns'])} s (it had been expelled)"
    return {
        "topic": topic,
        "partition": partition,
        "offsets": [row["offset"]],
        "ops": ctx.read_ops(ctx.reads_at(topic, partition, row["offset"])),
        **around,
        "sentence": f"{what}, {_tail(ctx, ns, around)}",
    }


# -- failover and rebalance -------------------------------------------------------------------------
def _availability(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    faults = ctx.history.faults.filter(ctx.history.faults["fault_id"] == row["fault_id"]).to_dicts()
    if not faults:
        raise ValueError(f"no fault {row['fault_id']} in the history")
    ns = faults[0]["start_ns"]
    topic, partition = row.get("topic"), row.get("partition")
    producers = ctx.producers_of(topic) if topic is not None else []
    around = _around(ctx, ns, topic, partition, producers[0] if producers else None)
    fault = next((f for f in around["faults"] if f["id"] == row["fault_id"]), None)
    named = fault_words(fault) if fault is not None else f"fault {row['fault_id']}"
    if anomaly == "rebalance-during-fault":
        what = f"{named} at {ctx.s(ns)} s saw {row['rebalances_during']} consumer group rebalance event(s)"
    elif anomaly == "never-available-again":
        what = (
            f"{place(topic, partition)} took writes until {ctx.s(row['last_ok_before_ns'])} s and none after "
            f"{named} at {ctx.s(ns)} s"
        )
    else:
        took = f"{row['unavailable_ms']:.0f} ms" if row.get("unavailable_ms") is not None else "until the end"
        what = f"{place(topic, partition)} took no acknowledged write for {took} around {named} at {ctx.s(ns)} s"
    return {
        "topic": topic,
        "partition": partition,
        "ops": [],
        **around,
        "sentence": f"{what}, {_tail(ctx, ns, around)}",
    }


def _caught_up(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    topic, partition, ns = row["topic"], row["partition"], row["time_ns"]
    if ns is None:
        raise ValueError(f"{row['reader']} has no close in the history")
    around = _around(ctx, ns, topic, partition, row["process"])
    read = "nothing" if row["read_upto"] is None else f"up to offset {row['read_upto']}"
    drained = ctx.history.events.filter((pl.col("f") == Op.DRAINED) & (pl.col("time_ns") <= ns)).tail(1).to_dicts()
    waited = (
        f"; the drain gave up after {drained[0]['drain_s']:g} s"
        if drained and drained[0]["ok"] is False and drained[0]["drain_s"] is not None
        else ""
    )
    what = (
        f"{row['reader']} had read {read} of {place(topic, partition)} (last offset {row['last_offset']}, "
        f"{row['unread']} records unread) when it closed at {ctx.s(ns)} s{waited}"
    )
    return {
        "topic": topic,
        "partition": partition,
        "ops": [],
        **around,
        "sentence": f"{what}, {_tail(ctx, ns, around)}",
    }


def _rebalance(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    processes = sorted(row["processes"])
    if isinstance(row.get("start_ns"), int):
        ns = row["start_ns"]  # the event's own start (results written before joins were measured do not have it)
    else:
        events = [
            e for e in consumer_events(ctx.history, ctx.history.membership) if sorted(e["processes"]) == processes
        ]
        if not events:
            raise ValueError(f"no consumer event of {processes} in the history")
        ns = events[0]["start_ns"]
    topic, partition = row.get("topic"), row.get("partition")
    around = _around(ctx, ns, topic, partition, processes[0] if processes else None)
    who = _and(processes) if processes else "a restarted member"
    happened = "joined" if row.get("kind") == JOIN else "stopped"
    if anomaly == "never-reassigned":
        what = (
            f"{place(topic, partition)}, owned by {who} of group {row['group']}, was never assigned again after "
            f"{who} stopped at {ctx.s(ns)} s"
        )
    else:
        pause = f"for {row['pause_ms']:.0f} ms" if row.get("pause_ms") is not None else "until the end"
        what = f"group {row['group']} had a partition without an owner {pause} after {who} {happened} at {ctx.s(ns)} s"
    return {
        "topic": topic,
        "partition": partition,
        "ops": [],
        **around,
        "sentence": f"{what}, {_tail(ctx, ns, around)}",
    }


def _generic(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    ns = next((row[k] for k in ("time_ns", "start_ns", "complete_ns") if isinstance(row.get(k), int)), None)
    if ns is None:
        raise ValueError(f"{checker} {anomaly}: the example names no time to explain it by")
    topic, partition = row.get("topic"), row.get("partition")
    around = _around(ctx, ns, topic, partition, row.get("process"))
    return {
        "topic": topic,
        "partition": partition,
        "ops": [],
        **around,
        "sentence": f"{checker} {anomaly} at {ctx.s(ns)} s, {_tail(ctx, ns, around)}",
    }


def _transaction(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> Explanation:
    """One example of the transactions checker: the transaction (writer, number, transactional.id, how it ended), then
    the moment."""
    txn = f"transaction {row['txn']} of {row['process']}" if row.get("txn") is not None else None
    if txn and row.get("transactional_id"):
        ended = row.get("outcome") or "never completed"
        txn += f" (transactional.id {row['transactional_id']}, asked to {row.get('end') or 'do nothing'}, {ended})"
    what = {"kind": row.get("kind"), "input": row.get("input"), "cycle": row.get("cycle")}
    detail = ", ".join(f"{k} {v}" for k, v in what.items() if v is not None)
    explained = _generic(ctx, checker, anomaly, row, results)
    head = f"{checker} {anomaly}" + (f": {txn}" if txn else "") + (f", {detail}" if detail else "")
    return {**explained, "sentence": head + explained["sentence"].removeprefix(f"{checker} {anomaly}")}


# -- helpers ----------------------------------------------------------------------------------------
def _send_of_row(ctx: Context, row: Mapping) -> dict[str, Any]:
    send = ctx.send_of_id(row["process"], row["id"])
    if send is None:
        raise ValueError(f"no send {row['id']} of {row['process']} in the history")
    if row.get("value") is not None and send["value"] != row["value"]:
        raise ValueError(f"send {row['id']} of {row['process']} wrote {send['value']!r}, not {row['value']!r}")
    return send


def _moment(send: Mapping | None) -> int:
    if send is None:
        raise ValueError("no send to place the anomaly in time")
    return send["complete_ns"] if send["complete_ns"] is not None else send["invoke_ns"]


def _and(words: list[str]) -> str:
    words = [str(w) for w in words]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


_EXPLAINERS: dict[str, Callable[[Context, str, str, Mapping, Mapping], Explanation]] = {
    "duplicate": _duplicate,
    **{name: _lost for name in (*_LOST_BY_LOG, "lost-write", "unseen", "lost-after-read")},
    **{
        name: _send_anomaly
        for name in ("failed-but-present", "unknown-not-recovered", "missing", "inconsistent-offsets")
    },
    **{name: _order for name in ("nonmonotonic-poll", "poll-skip", "key-reordered", "nonmonotonic-send")},
    **{name: _double_delivery for name in ("double-delivery", "stale-delivery")},
    **{name: _availability for name in ("slow-failover", "never-available-again", "rebalance-during-fault")},
    **{name: _rebalance for name in ("never-reassigned", "slow-rebalance")},
    "never-caught-up": _caught_up,
}
_BY_CHECKER: dict[str, Callable[[Context, str, str, Mapping, Mapping], Explanation]] = {
    "transactions": _transaction,
    "durability": _durability,
    "clients": _clients,
    # A kind's checkers may bring words of their own (checkers/KIND/__init__.py: EXPLAINERS).
    **{name: fn for module in kinds_checkers() for name, fn in getattr(module, "EXPLAINERS", {}).items()},
}
