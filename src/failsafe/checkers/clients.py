"""Clients: every client the scenario declared is accounted for. Silence of a declared client is an answer, never an
absence to skip (kafkatest's streams_eos verifier does its bookkeeping from what was declared, not from what was seen).
Pure.

The ``declare`` op (history.declared) lists the scenario's clients: producers, consumers (in a group or on their own),
share consumers, transactional writers and processors, each with its first process and the pattern its later processes
match (restarts NAME.N, a DR pair's stints). For each:

    absent (v.)          no op at all by any of its processes: it never started, or its ops were lost
    never-wrote (v.)     a producer or transactional writer that never sent a write
    never-assigned (v.)  a consumer group (or a processors' group) whose members never got a partition
    never-read (v.)      a reader that read nothing although acknowledged writes were made to its topics: a group (its
                         members together), a consumer on its own, a share group (an acquired record is a read), a
                         processors' group (its input)

A reader whose topics got no acknowledged write has nothing to read, and is not judged by never-read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import CheckerResult, Side, read_options, result
from failsafe.history.model import History
from failsafe.history.ops import Op, OpType, Role

DEFAULTS: dict[str, Any] = {}
VIOLATIONS = {
    "absent": Side.CONSUMERS,
    "never-wrote": Side.PRODUCERS,
    "never-assigned": Side.CONSUMERS,
    "never-read": Side.CONSUMERS,
}
_WRITERS = (Role.PRODUCER, Role.TXN_WRITER)
_EXAMPLES = 5


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    read_options(options, DEFAULTS, "clients")
    declared = history.declared.to_dicts()
    seen = _processes_seen(history)
    senders = set(history.sends["process"].drop_nulls().to_list())
    written = _written_topics(history)
    found: dict[str, list[dict]] = {name: [] for name in VIOLATIONS}
    readers: dict[tuple[str, str], list[dict]] = {}  # (role, group) -> the declared clients reading as it
    named = {client["process"] for client in declared}
    for client in declared:
        mine = _incarnations(client, seen, named)
        if not mine:
            found["absent"].append(_row(client))
            continue
        if client["role"] in _WRITERS and not mine & senders:
            found["never-wrote"].append(_row(client))
        if client["role"] in (Role.CONSUMER, Role.SHARE_CONSUMER, Role.PROCESSOR):
            reader = client["group"] if client["group"] else f"process {client['process']}"
            readers.setdefault((client["role"], reader), []).append({**client, "incarnations": sorted(mine)})
    for (role, reader), members in readers.items():
        processes = {p for m in members for p in m["incarnations"]}
        topics = sorted({t for m in members for t in m["topics"] or ()})
        group = members[0]["group"]
        if role in (Role.CONSUMER, Role.PROCESSOR) and group and not _assigned(history, group, processes):
            found["never-assigned"].append(
                {"reader": reader, "role": role, "processes": sorted(processes), "topics": topics}
            )
        if set(topics) & set(written) and not _read(history, role, group, processes, topics):
            found["never-read"].append(
                {
                    "reader": reader,
                    "role": role,
                    "processes": sorted(processes),
                    "topics": topics,
                    "acknowledged_writes": sum(written.get(t, 0) for t in topics),
                }
            )
    counts = {"declared": len(declared), "readers": len(readers), **{name: len(rows) for name, rows in found.items()}}
    violations = [name for name, rows in found.items() if rows]
    processes = {
        name: sorted({p for row in rows for p in row.get("processes", [row.get("process")]) if p})
        for name, rows in found.items()
        if rows
    }
    return result(
        not violations,
        counts,
        {name: rows[:_EXAMPLES] for name, rows in found.items()},
        violations,
        processes=processes,
    )


def _row(client: dict) -> dict:
    return {"process": client["process"], "role": client["role"], "group": client["group"], "topics": client["topics"]}


def _processes_seen(history: History) -> set[str]:
    frames = [
        history.sends,
        history.reads,
        history.membership,
        history.commits,
        history.client_events,
        history.clients,
        history.txns,
        history.share_deliveries,
        history.share_acks,
    ]
    return {p for frame in frames for p in frame["process"].drop_nulls().unique().to_list()}


def _incarnations(client: dict, seen: set[str], named: set[str]) -> set[str]:
    """The processes seen that are ``client``: its own name, and each that matches its pattern and is not another
    declared client's name."""
    pattern = re.compile(client["matches"]) if client["matches"] else None
    return {
        p for p in seen if p == client["process"] or (p not in named and pattern is not None and pattern.fullmatch(p))
    }


def _written_topics(history: History) -> dict[str, int]:
    acked = history.sends.filter(pl.col("outcome") == OpType.OK).group_by("topic").agg(pl.len())
    return dict(zip(acked["topic"].to_list(), acked["len"].to_list(), strict=True))


def _assigned(history: History, group: str, processes: set[str]) -> bool:
    assigns = history.membership.filter(
        (pl.col("f") == Op.ASSIGN) & (pl.col("group") == group) & pl.col("process").is_in(sorted(processes))
    )
    return assigns.height > 0


def _read(history: History, role: str, group: str | None, processes: set[str], topics: list[str]) -> bool:
    frame = history.share_deliveries if role == Role.SHARE_CONSUMER else history.reads
    mine = frame.filter(pl.col("topic").is_in(topics))
    mine = mine.filter(pl.col("group") == group) if group else mine.filter(pl.col("process").is_in(sorted(processes)))
    return mine.height > 0
