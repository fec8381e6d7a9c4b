"""The app checker's anomalies in one sentence each: the input record (when its producer was told it was written,
where), what the output holds of it (how many copies, where, written by which instance when the output says so), and
the fault or leader change it fell near."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from failsafe.checkers.explain.context import Context
from failsafe.checkers.explain.words import context_words, place


def _writers(values: list[str] | None) -> list[str]:
    """The instances a JSON output names in its "by" field, when it does."""
    out = []
    for value in values or []:
        try:
            by = json.loads(value).get("by")
        except (TypeError, ValueError, AttributeError):
            continue
        if isinstance(by, str) and by not in out:
            out.append(by)
    return out


def _totals(anomaly: str, row: Mapping) -> dict[str, Any] | None:
    """A ``totals`` anomaly: the key, what its input holds and where its output ended, or where its total went back."""
    where = f"{place(row.get('topic'), row.get('partition'))} offset {row.get('offset')}"
    if anomaly in ("under-counted", "over-counted"):
        last = f"its last total ({where}) is {row.get('final')}" if row.get("offset") is not None else "it has no total"
        what = (
            f"key {row.get('key')}: the input holds {row.get('expected')} records of it "
            f"({row.get('acknowledged')} acknowledged), {last}"
        )
    elif anomaly == "went-back":
        what = (
            f"key {row.get('key')}: the total at {where} is {row.get('total')}, after {row.get('previous')} before it"
        )
    else:
        return None
    return {"value": row.get("key"), "topic": row.get("topic"), "sentence": what, "faults": []}


def explain_app(ctx: Context, checker: str, anomaly: str, row: Mapping, results: Mapping) -> dict[str, Any]:
    totals = _totals(anomaly, row)
    if totals is not None:
        return totals
    identity = row.get("identity")
    topic = row.get("input_topic") or (row.get("topic") if anomaly == "lost" else None)
    send = ctx.send_of_value(topic, identity) if topic and identity is not None else None
    ns = (send.get("complete_ns") or send.get("invoke_ns")) if send else None
    acked = (
        f"acknowledged at {ctx.s(ns)} s at {place(send['topic'], send['partition'])} offset {send['offset']}"
        if send
        else "never sent by a producer of the run"
    )
    if anomaly == "lost" and (row.get("copies") or 0) > 0:
        what = (
            f"input {identity}, {acked}, is {row['copies']} times in the output and {row['input_copies']} in the input"
        )
    elif anomaly == "lost":
        what = f"input {identity}, {acked}, is in no output record"
    elif anomaly == "duplicate":
        copies = ", ".join(
            f"{p}@{o}" for p, o in zip(row.get("partitions") or [], row.get("offsets") or [], strict=True)
        )
        by = _writers(row.get("values"))
        what = (
            f"input {identity}, {acked}, is {row.get('copies')} times in {row.get('topic')} (partition@offset {copies})"
            + (f", written by {' and '.join(by)}" if by else "")
            + (f"; the input holds it {row['input_copies']} times" if (row.get("input_copies") or 0) > 1 else "")
        )
    elif anomaly == "reordered":
        what = (
            f"input {identity} (key {row.get('input_key')}, {acked}) is at "
            f"{place(row.get('topic'), row.get('partition'))} offset {row.get('offset')}, "
            f"after the output of the same key's input at offset {row.get('after_input_offset')}"
        )
    elif anomaly == "phantom":
        what = f"output {place(row.get('topic'), row.get('partition'))} offset {row.get('offset')} carries " + (
            f"identity {identity}, which no producer of the run sent" if identity is not None else "no identity"
        )
    else:
        what = (
            f"{row.get('process', 'a read_committed reader')} was given {place(row.get('topic'), row.get('partition'))}"
            f" offset {row.get('offset')}, which the committed output does not hold"
        )
    if ns is not None and send is not None:
        around = context_words(
            ctx, ns, ctx.leadership(send["topic"], send["partition"], ns), ctx.faults_near(ns), ctx.elections_near(ns)
        )
        what += f"; {around}"
    return {"value": identity, "topic": topic, "sentence": what, "faults": ctx.faults_near(ns) if ns else []}
