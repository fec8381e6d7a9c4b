"""What a proxy does to requests and responses while protocol faults are in force: the rules, and their counts.

A rule is one protocol fault on one proxy: an action, the APIs it takes (by key), the clients it takes
(a glob over the request header's client id; None: every client), and how: a delay (``delay_ms`` plus
a uniform ``jitter_ms``), a probability per request, a limit on how many requests it takes. Actions:

    delay-request      the request waits before it goes on to the broker (and the connection's later
                       requests wait behind it: Kafka answers a connection's requests in order)
    delay-response     the answer waits before it goes on to the client (and later answers behind it)
    hold               the request waits until the rule ends, then goes on, held requests in the order
                       they came; the broker gets it even if its client gave up and closed the connection
    drop-response      the request reaches the broker, its answer never reaches the client; then the
                       connection is closed (``after = "close"``) or answers nothing more (``"stall"``:
                       the client's request.timeout.ms ends it)
    disconnect-on      the connection is closed when such a request comes; the broker never sees it
    duplicate-request  the request goes to the broker twice; the second answer is swallowed

Pure: the proxy's daemon (daemon.py) asks ``on_request`` and ``on_response`` for each frame and acts on
the answer; every rule counts the requests it took, by API and client, for the fault's record.
"""

from __future__ import annotations

import fnmatch
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from failsafe.proxy.wire import RequestHeader, api_key, api_name

DELAY_REQUEST = "delay-request"
DELAY_RESPONSE = "delay-response"
HOLD = "hold"
DROP_RESPONSE = "drop-response"
DISCONNECT_ON = "disconnect-on"
DUPLICATE_REQUEST = "duplicate-request"
ACTIONS = (DELAY_REQUEST, DELAY_RESPONSE, HOLD, DROP_RESPONSE, DISCONNECT_ON, DUPLICATE_REQUEST)
REQUEST_ACTIONS = (DELAY_REQUEST, HOLD, DISCONNECT_ON, DUPLICATE_REQUEST)
AFTER_DROP = ("close", "stall")


@dataclass
class Rule:
    rule_id: str
    action: str
    apis: frozenset[int]
    clients: str | None = None
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    probability: float = 1.0
    limit: int | None = None
    after: str = "close"
    seed: int = 0
    # The process that put the rule (pid, creation time): the proxy ends the rule if it dies (daemon.py).
    owner: tuple[int, float] | None = None
    affected: Counter = field(default_factory=Counter)  # (api, client id) -> requests taken
    seen: int = 0  # requests that matched its APIs and clients, taken or not

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"{self.action!r} is not a protocol fault; one of {', '.join(ACTIONS)}")
        if not self.apis:
            raise ValueError("a rule takes at least one API")
        if not 0.0 < self.probability <= 1.0:
            raise ValueError(f"probability {self.probability} is not in (0, 1]")
        if self.delay_ms < 0 or self.jitter_ms < 0:
            raise ValueError("delays are not negative")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit {self.limit}: at least 1, or none for every request")
        if self.after not in AFTER_DROP:
            raise ValueError(f"after {self.after!r} is not one of {', '.join(AFTER_DROP)}")
        self._rng = random.Random(self.seed)

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> Rule:
        """A rule from a control request's fields; ValueError names the first that is wrong."""
        apis = message.get("apis") or []
        return cls(
            rule_id=str(message["rule_id"]),
            action=str(message["action"]),
            apis=frozenset(api_key(str(a)) for a in apis),
            clients=message.get("clients"),
            delay_ms=float(message.get("delay_ms", 0.0)),
            jitter_ms=float(message.get("jitter_ms", 0.0)),
            probability=float(message.get("probability", 1.0)),
            limit=message.get("limit"),
            after=str(message.get("after", "close")),
            seed=int(message.get("seed", 0)),
            owner=(int(message["owner"][0]), float(message["owner"][1])) if message.get("owner") else None,
        )

    @property
    def taken(self) -> int:
        return sum(self.affected.values())

    def takes(self, api: int, client_id: str | None) -> bool:
        """Whether this request is one the rule acts on now (counted when it is); draws its probability."""
        if api not in self.apis:
            return False
        if self.clients is not None and not fnmatch.fnmatchcase(client_id or "", self.clients):
            return False
        self.seen += 1
        if self.limit is not None and self.taken >= self.limit:
            return False
        if self.probability < 1.0 and self._rng.random() >= self.probability:
            return False
        self.affected[(api_name(api), client_id or "")] += 1
        return True

    def delay_s(self) -> float:
        jitter = self._rng.uniform(0.0, self.jitter_ms) if self.jitter_ms else 0.0
        return (self.delay_ms + jitter) / 1000.0

    def counts(self) -> dict[str, Any]:
        """What the rule took, for the fault's record: requests seen and taken, by API and client."""
        return {
            "rule_id": self.rule_id,
            "action": self.action,
            "seen": self.seen,
            "taken": self.taken,
            "by_api_client": [
                {"api": api, "client_id": client, "requests": n} for (api, client), n in sorted(self.affected.items())
            ],
        }


@dataclass(frozen=True)
class OnRequest:
    """What to do with one request: wait ``delay_s``, wait for the rules in ``hold`` to end, close the connection
    without sending it, or send it twice."""

    delay_s: float = 0.0
    hold: tuple[str, ...] = ()
    disconnect: bool = False
    duplicate: bool = False


@dataclass(frozen=True)
class OnResponse:
    """What to do with one answer: wait ``delay_s``, or drop it and then close or stall the connection."""

    delay_s: float = 0.0
    drop: bool = False
    after: str = "close"


PASS_REQUEST = OnRequest()
PASS_RESPONSE = OnResponse()


class Rules:
    """The rules in force on one proxy, by id, in the order they were added."""

    def __init__(self) -> None:
        self._rules: dict[str, Rule] = {}

    def __bool__(self) -> bool:
        return bool(self._rules)

    def add(self, rule: Rule) -> None:
        if rule.rule_id in self._rules:
            raise ValueError(f"a rule {rule.rule_id!r} is in force already")
        self._rules[rule.rule_id] = rule

    def remove(self, rule_id: str) -> Rule | None:
        return self._rules.pop(rule_id, None)

    def ids(self) -> list[str]:
        return list(self._rules)

    def owners(self) -> dict[tuple[int, float], list[str]]:
        """The processes that put rules in force, with their rules' ids."""
        found: dict[tuple[int, float], list[str]] = {}
        for rule in self._rules.values():
            if rule.owner is not None:
                found.setdefault(rule.owner, []).append(rule.rule_id)
        return found

    def counts(self) -> list[dict[str, Any]]:
        return [r.counts() for r in self._rules.values()]

    def on_request(self, header: RequestHeader) -> OnRequest:
        if not self._rules:
            return PASS_REQUEST
        delay, hold, disconnect, duplicate = 0.0, [], False, False
        for rule in self._rules.values():
            if rule.action not in REQUEST_ACTIONS or not rule.takes(header.api_key, header.client_id):
                continue
            if rule.action == DELAY_REQUEST:
                delay += rule.delay_s()
            elif rule.action == HOLD:
                hold.append(rule.rule_id)
            elif rule.action == DISCONNECT_ON:
                disconnect = True
            else:
                duplicate = True
        return OnRequest(delay, tuple(hold), disconnect, duplicate)

    def on_response(self, api: int, client_id: str | None) -> OnResponse:
        if not self._rules:
            return PASS_RESPONSE
        delay, drop, after = 0.0, False, "close"
        for rule in self._rules.values():
            if rule.action not in (DELAY_RESPONSE, DROP_RESPONSE) or not rule.takes(api, client_id):
                continue
            if rule.action == DELAY_RESPONSE:
                delay += rule.delay_s()
            else:
                drop, after = True, rule.after
        return OnResponse(delay, drop, after)
