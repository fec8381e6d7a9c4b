"""Which rebalance protocol each consumer group ran, read from its members' client-config ops. Pure.

    eager             the classic protocol with an eager assignor (range, roundrobin, sticky): at each rebalance
                      every member gives up every partition it owns
    cooperative       the classic protocol with cooperative-sticky (KIP-429): only the partitions that move are
                      revoked
    consumer-ASSIGNOR KIP-848's protocol (group.protocol=consumer): the group coordinator assigns with its
                      server-side ASSIGNOR (group.remote.assignor; the broker's default, the first of
                      group.consumer.assignors, is uniform), and members give up only the partitions that move

A classic group is cooperative only when every assignor a member lists is: librdkafka refuses a list that mixes eager
and cooperative ones, and the Java consumer runs the eager protocol when any listed assignor supports only that.
Kafka's defaults when nothing is set: librdkafka "range,roundrobin"; the Java consumer
"range, cooperative-sticky" (eager: range first; Kafka's VerifiableConsumer passes RangeAssignor itself).

Which protocols leave the members that stay alone when a member leaves (KEEPS_SURVIVORS): cooperative-sticky and
KIP-848's uniform assignor are sticky, and a departure leaves every survivor at or under its new share. KIP-848's
range assignor is not: since KAFKA-16944 (Kafka 3.9) it recomputes contiguous ranges in member order at every
assignment, so a departure can move a survivor's partitions.
"""

from __future__ import annotations

import polars as pl

from failsafe.history.model import History

EAGER, COOPERATIVE, CONSUMER = "eager", "cooperative", "consumer"
JAVA = "kafka-java"
DEFAULT_STRATEGY = {"librdkafka": "range,roundrobin", JAVA: "range,cooperative-sticky"}
DEFAULT_REMOTE_ASSIGNOR = "uniform"
# Kafka's session when none is set: both clients' session.timeout.ms and the broker's group.consumer.session.timeout.ms.
DEFAULT_SESSION_MS = 45_000
KEEPS_SURVIVORS = frozenset({COOPERATIVE, f"{CONSUMER}-uniform"})
_COOPERATIVE_NAMES = ("cooperative-sticky", "cooperativestickyassignor")


def member_protocol(client: str | None, settings: dict[str, str]) -> str | None:
    """The protocol of one member from its library and settings; None when its library's default is not known."""
    if settings.get("group.protocol", "classic").strip().lower() == CONSUMER:
        return f"{CONSUMER}-{settings.get('group.remote.assignor', DEFAULT_REMOTE_ASSIGNOR).strip().lower()}"
    strategy = settings.get("partition.assignment.strategy", DEFAULT_STRATEGY.get(client or ""))
    if strategy is None:
        return None
    names = [name.strip().rsplit(".", 1)[-1].lower() for name in strategy.split(",") if name.strip()]
    return COOPERATIVE if names and all(name in _COOPERATIVE_NAMES for name in names) else EAGER


def group_protocols(history: History) -> dict[str, str | None]:
    """Each group's protocol: the one all its members (processes with an assign or revoke in it) ran; None when they
    disagree or one recorded no client-config."""
    settings = _client_settings(history)
    out: dict[str, str | None] = {}
    for group, processes in _members(history).items():
        protocols = {member_protocol(*settings[p]) if p in settings else None for p in processes}
        out[group] = protocols.pop() if len(protocols) == 1 else None
    return out


def group_sessions_ms(history: History) -> dict[str, float]:
    """Each classic group's session.timeout.ms, where every member's client-config op gave it the same one (a cluster
    profile's, or the scenario's); a KIP-848 group's session is the broker's and is not in its members' settings."""
    settings = _client_settings(history)
    out: dict[str, float] = {}
    for group, processes in _members(history).items():
        sessions = {settings[p][1].get("session.timeout.ms") if p in settings else None for p in processes}
        session = sessions.pop() if len(sessions) == 1 else None
        if session is not None and session.isdigit():
            out[group] = float(session)
    return out


def _client_settings(history: History) -> dict[str, tuple[str | None, dict[str, str]]]:
    settings: dict[str, tuple[str | None, dict[str, str]]] = {}
    for row in history.clients.sort("time_ns", maintain_order=True).iter_rows(named=True):
        settings[row["process"]] = (row["client"], {entry["name"]: entry["value"] for entry in row["config"] or []})
    return settings


def _members(history: History) -> dict[str, list[str]]:
    members = history.membership.filter(pl.col("group").is_not_null()).group_by("group").agg(pl.col("process").unique())
    return {row["group"]: row["process"] for row in members.iter_rows(named=True)}
