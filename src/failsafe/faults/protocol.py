"""Protocol faults: requests and answers between clients and brokers delayed, held, dropped, cut or sent twice, by API.

Each broker of a cluster made with protocol proxies (failsafe up --protocol-proxy; a scenario with such a
fault gets one) is reached through a Kafka-aware proxy (failsafe.proxy) that reads every request's header.
A protocol fault is a rule put on the proxies it aims at for its duration (proxy/rules.py says what each
does):

    delay-request      requests of ``api`` wait ``delay_ms`` (+ a uniform ``jitter_ms``) before the broker
    delay-response     their answers wait before the client
    hold               requests of ``api`` wait until the fault ends, then go on in order (the delayed commit)
    drop-response      the broker takes the request, its answer never comes; the connection then closes, or
                       stalls (``after = "stall"``) until the client's request.timeout.ms
    disconnect-on      the connection closes when such a request comes, before the broker sees it
    duplicate-request  the request reaches the broker twice (idempotence and transactions must absorb it)

Aim: ``api`` (Kafka's names, comma-separated: ``"EndTxn"``, ``"Produce,Fetch"``); ``clients``, a glob over the
request header's client id (failsafe's workers set theirs to their process name: ``idem``, ``member-0``,
``writer-*``; none: every client, failsafe's own admin and samplers too); the brokers: every broker's proxy by
default, or one as node faults choose it (``node``, ``role`` of ``partition``, ``txn-coordinator`` of
``transactional_id``).
``probability`` and ``limit`` take some of the requests only (seeded by ``seed``). When the fault ends, what it
took, by API and client on each broker, is recorded with its stop.
"""

from __future__ import annotations

import itertools
import os
import random
from dataclasses import asdict, dataclass
from typing import Any

import psutil
from confluent_kafka import KafkaError

from failsafe.errors import UserError
from failsafe.faults.base import AppliedFault, FaultContext, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.draw import Arena, Draw
from failsafe.faults.nodes import NodeChoice, Role, check_every_or_chosen, chosen
from failsafe.faults.registry import register
from failsafe.history.ops import Family, Target
from failsafe.proxy import rules
from failsafe.proxy.wire import api_key, api_name

EVERY_BROKER = "all"
NEEDS_PROXIES = "its brokers have no protocol proxy, and protocol faults act through one (failsafe up --protocol-proxy)"
# What a campaign aims each fault at: the APIs whose loss or lateness the field has seen matter.
DRAWN_APIS = {
    rules.DELAY_REQUEST: ("Produce", "Fetch", "Metadata", "FindCoordinator", "Heartbeat", "OffsetCommit", "EndTxn"),
    rules.DELAY_RESPONSE: ("Produce", "Fetch", "OffsetCommit", "EndTxn", "AddPartitionsToTxn", "TxnOffsetCommit"),
    rules.HOLD: ("EndTxn", "AddPartitionsToTxn", "TxnOffsetCommit", "Produce"),
    rules.DROP_RESPONSE: ("Produce", "EndTxn", "OffsetCommit", "InitProducerId", "TxnOffsetCommit"),
    rules.DISCONNECT_ON: ("EndTxn", "Produce", "JoinGroup", "SyncGroup", "OffsetCommit", "ConsumerGroupHeartbeat"),
    rules.DUPLICATE_REQUEST: ("Produce", "EndTxn", "TxnOffsetCommit"),
}
_rule_ids = itertools.count()


def _owner() -> tuple[int, float]:
    """This process, as a rule's owner: a proxy ends the rules of an owner that died (proxy/daemon.py)."""
    return os.getpid(), psutil.Process().create_time()


@dataclass(frozen=True)
class ProtocolAim(NodeChoice):
    """Which requests (``api``, ``clients``), on which brokers' proxies (every one: ``role = "all"``, the default; or
    one as node faults choose it), and how many of them (``probability``, ``limit``, ``seed``)."""

    role: str = EVERY_BROKER
    api: str = ""
    clients: str | None = None
    probability: float = 1.0
    limit: int | None = None
    seed: int = 0

    def api_keys(self) -> list[int]:
        return [api_key(a.strip()) for a in self.api.split(",") if a.strip()]


@dataclass(frozen=True)
class DelayAim(ProtocolAim):
    delay_ms: float = 1000.0
    jitter_ms: float = 0.0


@dataclass(frozen=True)
class DropAim(ProtocolAim):
    after: str = "close"


def check_aim(params: ProtocolAim, ctx: FaultContext) -> None:
    check_every_or_chosen(params, ctx, EVERY_BROKER)
    if not params.api.strip():
        raise ctx.fail("api", "missing: the API whose requests to act on, as Kafka names it (e.g. 'EndTxn')")
    try:
        params.api_keys()
    except ValueError as e:
        raise ctx.fail("api", str(e)) from e
    if params.clients is not None and not params.clients.strip():
        raise ctx.fail("clients", "an empty pattern: leave clients out for every client, or write one such as 'txn-*'")
    if not 0.0 < params.probability <= 1.0:
        raise ctx.fail("probability", f"{params.probability} is not in (0, 1]")
    if params.limit is not None and params.limit < 1:
        raise ctx.fail("limit", f"{params.limit}: at least 1 request, or leave it out for every one")
    if isinstance(params, DelayAim) and (params.delay_ms < 0 or params.jitter_ms < 0):
        raise ctx.fail("delay_ms", "delays are not negative")
    if isinstance(params, DropAim) and params.after not in rules.AFTER_DROP:
        raise ctx.fail("after", f"{params.after!r} is not one of {', '.join(rules.AFTER_DROP)}")


def _error_name(code: int | None) -> str | None:
    """Kafka's name of an answer's error code (NONE, INVALID_TXN_STATE, PRODUCER_FENCED, ...)."""
    return None if code is None else KafkaError(code).name()


def _fits(spec: Any) -> str | None:
    return None if getattr(spec, "protocol_proxy", False) else NEEDS_PROXIES


def _rule(action: str, params: ProtocolAim, rule_id: str) -> dict[str, Any]:
    fields = asdict(params)
    return {
        "rule_id": rule_id,
        "action": action,
        "apis": [api_name(k) for k in params.api_keys()],
        "clients": params.clients,
        "probability": params.probability,
        "limit": params.limit,
        "seed": params.seed,
        **{k: fields[k] for k in ("delay_ms", "jitter_ms", "after") if k in fields},
    }


def _proxied(action: str):
    def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
        params: ProtocolAim = spec.params
        cluster = targets.cluster
        if params.role == EVERY_BROKER and params.node is None:
            nodes, role = list(cluster.spec.brokers_nodes()), "every broker"
        else:
            cluster, nodes, role = chosen(params, targets)
        handles = [(node, cluster.protocol_proxy(node)) for node in nodes]
        bare = [node.name for node, handle in handles if handle is None]
        if bare:
            raise FaultError(f"{action}: {', '.join(bare)} has no protocol proxy running ({NEEDS_PROXIES})")
        rule_id = f"{action}-{next(_rule_ids)}-{spec.at_s:g}"
        rule = {**_rule(action, params, rule_id), "owner": _owner()}
        added = []
        try:
            for node, handle in handles:
                handle.add(rule)
                added.append((node, handle))
        except UserError as e:
            for _, handle in added:
                handle.clear(rule_id)
            raise FaultError(f"{action}: {e}") from e
        applied = AppliedFault(
            action,
            Target.BROKER,
            [n.node_id for n in nodes],
            role,
            label=f"{action} {','.join(rule['apis'])}" + (f" of {params.clients}" if params.clients else ""),
            details={"rule": {k: v for k, v in rule.items() if v is not None and k != "owner"}},
        )

        def undo() -> None:
            took = {}
            for node, handle in handles:
                counts = handle.clear(rule_id)
                if counts is not None:
                    for answer in counts.get("answers", []):
                        answer["error"] = _error_name(answer.get("error_code"))
                    took[str(node.node_id)] = counts
            applied.stop_details = {"took": took, "requests": sum(c["taken"] for c in took.values())}

        applied.undo_action = undo
        return applied

    return start


def _drawer(action: str):
    def draw(rng: random.Random, arena: Arena) -> Draw:
        fields: dict[str, Any] = {"api": rng.choice(DRAWN_APIS[action])}
        if arena.txn_clients and rng.random() < 0.5:
            fields["clients"] = rng.choice(arena.txn_clients)
        if rng.random() < 0.5:
            fields["node"] = rng.randrange(arena.brokers)
        if action in (rules.DELAY_REQUEST, rules.DELAY_RESPONSE):
            fields["delay_ms"] = rng.choice((100, 500, 2000, 10000))
        if action == rules.DROP_RESPONSE:
            fields["after"] = rng.choice(rules.AFTER_DROP)
        if action in (rules.DROP_RESPONSE, rules.DISCONNECT_ON, rules.DUPLICATE_REQUEST):
            fields["limit"] = rng.choice((1, 3, 10))
        fields["seed"] = rng.randrange(2**31)
        return Draw(fields)  # a proxy's rule takes no broker or controller away

    return draw


_SUMMARIES = {
    rules.DELAY_REQUEST: ("requests of an API wait before the broker (delay_ms, jitter_ms)", DelayAim),
    rules.DELAY_RESPONSE: ("answers to requests of an API wait before the client (delay_ms, jitter_ms)", DelayAim),
    rules.HOLD: ("requests of an API held until the fault ends, then sent on in order", ProtocolAim),
    rules.DROP_RESPONSE: ("the broker takes requests of an API, their answers never reach the client", DropAim),
    rules.DISCONNECT_ON: ("a client's connection closed when it sends a request of an API", ProtocolAim),
    rules.DUPLICATE_REQUEST: ("requests of an API reach the broker twice, the second answer swallowed", ProtocolAim),
}
_UNDOS = {
    rules.HOLD: "the rule ends: held requests go on to the broker in the order they came",
}

for _action, (_summary, _fields) in _SUMMARIES.items():
    register(
        FaultType(
            _action,
            Family.PROTOCOL,
            _summary,
            frozenset({Need.NODES}),
            _proxied(_action),
            _UNDOS.get(_action, "the rule ends on every proxy it was put on; what it took is recorded"),
            _fields,
            check_aim,
            fits=_fits,
            draw=_drawer(_action),
            cluster_needs=("protocol_proxy",),
        )
    )

__all__ = ["EVERY_BROKER", "ProtocolAim", "Role"]
