"""Which rebalance protocol each consumer group ran, read from its members' client-config ops. Pure.

    eager        the classic protocol with an eager assignor first in partition.assignment.strategy (range,
                 roundrobin, sticky): at each rebalance every member gives up every partition it owns
    cooperative  the classic protocol with cooperative-sticky first (KIP-429): only the partitions that move
                 are revoked
    consumer     KIP-848's protocol (group.protocol=consumer): the group coordinator assigns, and members
                 give up only the partitions that move

A classic group uses the first assignor in the list that every member supports (librdkafka refuses a list
that mixes eager and cooperative ones), so the first entry decides. Kafka's defaults when nothing is set:
librdkafka "range,roundrobin", the Java consumer "range, cooperative-sticky" (range: eager).
"""

from __future__ import annotations

import polars as pl

from failsafe.history.model import History

EAGER, COOPERATIVE, CONSUMER = "eager", "cooperative", "consumer"
# The protocols with which a member's departure takes nothing from the members that stay: the survivors' partitions
# are kept whole (KIP-429's cooperative-sticky and KIP-848's server-side uniform and range assignors are all sticky).
INCREMENTAL = frozenset({COOPERATIVE, CONSUMER})
DEFAULT_STRATEGY = {"librdkafka": "range,roundrobin", "kafka-java": "range,cooperative-sticky"}
_COOPERATIVE_NAMES = ("cooperative-sticky", "cooperativestickyassignor")


def member_protocol(client: str | None, settings: dict[str, str]) -> str | None:
    """The protocol of one member from its library and settings; None when its library's default is not known."""
    if settings.get("group.protocol", "classic").strip().lower() == CONSUMER:
        return CONSUMER
    strategy = settings.get("partition.assignment.strategy", DEFAULT_STRATEGY.get(client or ""))
    if strategy is None:
        return None
    first = strategy.split(",")[0].strip().rsplit(".", 1)[-1].lower()
    return COOPERATIVE if first in _COOPERATIVE_NAMES else EAGER


def group_protocols(history: History) -> dict[str, str | None]:
    """Each group's protocol: the one all its members (processes with an assign or revoke in it) ran; None when they
    disagree or one recorded no client-config."""
    settings: dict[str, tuple[str | None, dict[str, str]]] = {}
    for row in history.clients.sort("time_ns", maintain_order=True).iter_rows(named=True):
        settings[row["process"]] = (row["client"], {entry["name"]: entry["value"] for entry in row["config"] or []})
    members = history.membership.filter(pl.col("group").is_not_null()).group_by("group").agg(pl.col("process").unique())
    out: dict[str, str | None] = {}
    for row in members.iter_rows(named=True):
        protocols = {member_protocol(*settings[p]) if p in settings else None for p in row["process"]}
        out[row["group"]] = protocols.pop() if len(protocols) == 1 else None
    return out
