"""Settings every client of a run is given under its own: a cluster profile's producer and consumer sections
(cluster/profiles.py).

The scenario engine hands them over as plain names and values by client library, so workloads know nothing of clusters
or profiles; the worker pool gives them to every client it starts (``ClientDefaults.apply``), and the worker's
client-config op then shows them like any other setting. For each client:

- a setting the client sets itself wins: its ``properties`` (a txn processor's ``consumer_properties``), or a field of
  its spec that stands for one (idempotence, retries, linger_ms, delivery_timeout_ms, session_timeout_ms; acks when it
  is not "all", failsafe's and Kafka's default; what a transactional client must run with), under either of librdkafka's
  names for it (request.required.acks and acks, message.timeout.ms and delivery.timeout.ms, ...);
- settings that are valid only together come all from the client or all from the defaults: a client that sets any of
  acks, enable.idempotence, retries and max.in.flight.requests.per.connection takes none of them from the defaults (an
  idempotent producer needs acks=all), and one that sets its delivery timeout keeps its own request timeout (the Java
  producer refuses a delivery.timeout.ms below linger.ms + request.timeout.ms);
- a member of a KIP-848 group (group.protocol=consumer) or of a share group is given no session.timeout.ms nor
  heartbeat.interval.ms: both libraries refuse them there, the session is the broker's (workloads/group_settings.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypeVar

from failsafe.workloads.group_settings import BROKER_SIDE, CONSUMER
from failsafe.workloads.share.consumer import ShareConsumerSpec
from failsafe.workloads.share.verifiable import VerifiableShareConsumerSpec
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec
from failsafe.workloads.txn.specs import KAFKA_JAVA, LIBRDKAFKA, CtpSpec, TxnProducerSpec
from failsafe.workloads.verifiable.clients import VerifiableConsumerSpec, VerifiableProducerSpec

# librdkafka's other names of a setting, by the name the Java client and the profiles use.
ALIASES = {
    "request.required.acks": "acks",
    "message.timeout.ms": "delivery.timeout.ms",
    "queue.buffering.max.ms": "linger.ms",
    "message.send.max.retries": "retries",
    "max.in.flight": "max.in.flight.requests.per.connection",
}
# Settings valid only together: taken all from the client, or all from the defaults.
COUPLED = (
    frozenset({"acks", "enable.idempotence", "retries", "max.in.flight.requests.per.connection"}),
    frozenset({"delivery.timeout.ms", "request.timeout.ms"}),
    # librdkafka refuses a retry.backoff.ms above retry.backoff.max.ms: a client setting one keeps its own other.
    frozenset({"retry.backoff.ms", "retry.backoff.max.ms"}),
)
# What a transactional producer runs with whatever it is given (Kafka requires acks=all and idempotence of it).
TRANSACTIONAL = frozenset({"acks", "enable.idempotence", "transactional.id", "transaction.timeout.ms"})
# What a member of a KIP-848 group or of a share group may not be given.
REFUSED_WITHOUT_CLASSIC = frozenset(name for name in BROKER_SIDE if name != "partition.assignment.strategy")

Spec = TypeVar("Spec")


@dataclass(frozen=True)
class ClientDefaults:
    """Producer and consumer settings by client library (librdkafka, kafka-java); empty: every client keeps its own."""

    producer: dict[str, dict[str, str]] = field(default_factory=dict)
    consumer: dict[str, dict[str, str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.producer.values()) or any(self.consumer.values())

    def apply(self, spec: Spec) -> Spec:
        """``spec`` with the defaults its library takes merged under its own settings (the rules above); ``spec`` itself
        when none applies. Applying twice changes nothing more: what the first gave is the client's own the second
        time."""
        if isinstance(spec, CtpSpec):
            library = spec.driver
            properties = self._merged(
                self.producer.get(library, {}), spec.properties, _canonical(spec.properties) | TRANSACTIONAL
            )
            consumer_defaults = self.consumer.get(library, {})
            if str(spec.consumer_properties.get("group.protocol", "")).lower() == CONSUMER:
                consumer_defaults = {k: v for k, v in consumer_defaults.items() if k not in REFUSED_WITHOUT_CLASSIC}
            # Its session.timeout.ms is always its own (CtpSpec.session_timeout_ms).
            consumer = self._merged(
                consumer_defaults,
                spec.consumer_properties,
                _canonical(spec.consumer_properties) | {"session.timeout.ms"},
            )
            return replace(spec, properties=properties, consumer_properties=consumer)  # type: ignore[return-value]
        if isinstance(spec, TxnProducerSpec):
            own = _canonical(spec.properties) | TRANSACTIONAL
            return replace(spec, properties=self._merged(self.producer.get(spec.driver, {}), spec.properties, own))  # type: ignore[return-value]
        if isinstance(spec, ProducerSpec):
            library = KAFKA_JAVA if isinstance(spec, VerifiableProducerSpec) else LIBRDKAFKA
            return replace(
                spec, properties=self._merged(self.producer.get(library, {}), spec.properties, _producer_own(spec))
            )  # type: ignore[return-value]
        if isinstance(spec, ShareConsumerSpec):
            library = KAFKA_JAVA if isinstance(spec, VerifiableShareConsumerSpec) else LIBRDKAFKA
            defaults = {k: v for k, v in self.consumer.get(library, {}).items() if k not in REFUSED_WITHOUT_CLASSIC}
            return replace(spec, properties=self._merged(defaults, spec.properties, _canonical(spec.properties)))  # type: ignore[return-value]
        if isinstance(spec, ConsumerSpec):
            library = KAFKA_JAVA if isinstance(spec, VerifiableConsumerSpec) else LIBRDKAFKA
            defaults = self.consumer.get(library, {})
            if _group_protocol(spec) == CONSUMER:
                defaults = {k: v for k, v in defaults.items() if k not in REFUSED_WITHOUT_CLASSIC}
            own = _canonical(spec.properties) | (
                {"session.timeout.ms"} if spec.session_timeout_ms is not None else set()
            )
            return replace(spec, properties=self._merged(defaults, spec.properties, own))  # type: ignore[return-value]
        return spec

    @staticmethod
    def _merged(
        defaults: dict[str, str], own_properties: dict[str, str], own: set[str] | frozenset[str]
    ) -> dict[str, str]:
        """The defaults not set by the client (nor coupled to what it sets), then the client's own properties."""
        taken = set(own)
        for group in COUPLED:
            if group & taken:
                taken |= group
        given = {k: v for k, v in defaults.items() if ALIASES.get(k, k) not in taken}
        return {**given, **own_properties}


def _canonical(properties: dict[str, str]) -> set[str]:
    return {ALIASES.get(name, name) for name in properties}


def _producer_own(spec: ProducerSpec) -> set[str]:
    """The settings a producer's spec sets itself: its properties and the fields that stand for a setting."""
    own = _canonical(spec.properties)
    fields = {
        "enable.idempotence": spec.idempotence,
        "retries": spec.retries,
        "linger.ms": spec.linger_ms,
        "delivery.timeout.ms": spec.delivery_timeout_ms,
    }
    own |= {name for name, value in fields.items() if value is not None}
    if spec.acks not in ("all", "-1"):
        own.add("acks")
    return own


def _group_protocol(spec: ConsumerSpec) -> str | None:
    if isinstance(spec, VerifiableConsumerSpec):
        return spec.group_protocol
    return str(spec.properties.get("group.protocol", "")).lower() or None
