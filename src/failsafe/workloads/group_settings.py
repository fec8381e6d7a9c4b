"""A consumer group's rebalance protocol and assignor: checked once, then given to each client in its own words.

    group_protocol       classic (the default of both clients) or consumer (KIP-848, GA in Kafka 4.0 and
                         librdkafka 2.12)
    assignment_strategy  classic only: range, roundrobin or cooperative-sticky (librdkafka's names; the Java
                         consumer is given the assignor's class)
    remote_assignor      consumer only: uniform or range, the group coordinator's assignors (group.remote.assignor;
                         unset: the broker's first group.consumer.assignors, uniform by default)

With group.protocol=consumer the session and the heartbeat belong to the broker (group.consumer.session.timeout.ms,
group.consumer.heartbeat.interval.ms, each with a minimum of its own, group.consumer.min.session.timeout.ms ...), and
both clients refuse session.timeout.ms, heartbeat.interval.ms and partition.assignment.strategy: a scenario's
session_timeout_ms becomes the group's consumer.session.timeout.ms (group_configs) instead.
"""

from __future__ import annotations

from dataclasses import dataclass

CLASSIC, CONSUMER = "classic", "consumer"
PROTOCOLS = (CLASSIC, CONSUMER)
_JAVA_ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}
ASSIGNMENT_STRATEGIES = tuple(_JAVA_ASSIGNORS)
REMOTE_ASSIGNORS = ("uniform", "range")
# What a consumer-protocol member may not set, and where it went.
BROKER_SIDE = {
    "session.timeout.ms": "the broker's group.consumer.session.timeout.ms (a [cluster] override)",
    "heartbeat.interval.ms": "the broker's group.consumer.heartbeat.interval.ms (a [cluster] override)",
    "partition.assignment.strategy": "remote_assignor (uniform or range)",
}


@dataclass(frozen=True)
class GroupSettings:
    group_protocol: str | None = None
    assignment_strategy: str | None = None
    remote_assignor: str | None = None

    def problems(self, session_timeout_ms: int | None, properties: dict[str, str]) -> list[tuple[str, str]]:
        """(field, why) for each setting the clients would refuse or failsafe cannot pass; empty when they are fine."""
        out: list[tuple[str, str]] = []
        if self.group_protocol is not None and self.group_protocol not in PROTOCOLS:
            out.append(("group_protocol", f"{self.group_protocol!r} is not one of {', '.join(PROTOCOLS)}"))
        if self.assignment_strategy is not None and self.assignment_strategy not in ASSIGNMENT_STRATEGIES:
            out.append(
                (
                    "assignment_strategy",
                    f"{self.assignment_strategy!r} is not one of {', '.join(ASSIGNMENT_STRATEGIES)}",
                )
            )
        if self.remote_assignor is not None and self.remote_assignor not in REMOTE_ASSIGNORS:
            out.append(("remote_assignor", f"{self.remote_assignor!r} is not one of {', '.join(REMOTE_ASSIGNORS)}"))
        # In properties they would not reach Kafka's VerifiableConsumer: its command line (--group-protocol,
        # --assignment-strategy, with defaults of its own) is applied over its config file.
        for name in ("group.protocol", "group.remote.assignor", "partition.assignment.strategy"):
            if name in properties:
                out.append(
                    (
                        "properties",
                        f"{name} is set by group_protocol, assignment_strategy and remote_assignor, not in properties",
                    )
                )
        if self.group_protocol == CONSUMER:
            if self.assignment_strategy is not None:
                out.append(
                    (
                        "assignment_strategy",
                        f'not with group_protocol = "consumer": use {BROKER_SIDE["partition.assignment.strategy"]}',
                    )
                )
            out += [
                ("properties", f'{name} is refused with group_protocol = "consumer": it is {where}')
                for name, where in BROKER_SIDE.items()
                if name in properties and name != "partition.assignment.strategy"
            ]
        elif self.remote_assignor is not None:
            out.append(
                (
                    "remote_assignor",
                    'only with group_protocol = "consumer" (a classic group\'s assignor is assignment_strategy)',
                )
            )
        return out

    def group_configs(self, session_timeout_ms: int | None) -> dict[str, str]:
        """The group's dynamic configs (kafka-configs --entity-type groups): with group_protocol = "consumer" the
        session is the group's ``consumer.session.timeout.ms``, within the broker's
        group.consumer.min/max.session.timeout.ms."""
        if self.group_protocol == CONSUMER and session_timeout_ms is not None:
            return {"consumer.session.timeout.ms": str(session_timeout_ms)}
        return {}

    def client_session_timeout_ms(self, session_timeout_ms: int | None) -> int | None:
        """What the client is given as session.timeout.ms: nothing with group_protocol = "consumer" (it refuses it)."""
        return None if self.group_protocol == CONSUMER else session_timeout_ms

    def librdkafka_properties(self) -> dict[str, str]:
        return group_properties(self.group_protocol, self.assignment_strategy, self.remote_assignor)

    def java_assignor(self) -> str | None:
        """The class Kafka's VerifiableConsumer is given with --assignment-strategy."""
        return None if self.assignment_strategy is None else _JAVA_ASSIGNORS[self.assignment_strategy]


def group_properties(
    group_protocol: str | None, assignment_strategy: str | None, remote_assignor: str | None
) -> dict[str, str]:
    """The settings given, by their client config names (either client's words for the strategy: the caller's)."""
    named = {
        "group.protocol": group_protocol,
        "partition.assignment.strategy": assignment_strategy,
        "group.remote.assignor": remote_assignor,
    }
    return {name: value for name, value in named.items() if value is not None}
