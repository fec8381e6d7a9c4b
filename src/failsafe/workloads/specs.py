"""What a worker is asked to do: small frozen dataclasses that travel to the worker as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

DEFAULT_RATE_PER_S = 200.0
# librdkafka's debug contexts when its log goes to a file. eos shows the idempotent producer's PID,
# epoch bumps and drains; broker shows request timeouts, retries and reconnects; topic shows leader
# changes. msg is left out: it logs every ProduceRequest's message set, about one line per record
# at 200 records/s with the default linger, and a message's timeout is already in the history as
# its send's info op (_MSG_TIMED_OUT).
PRODUCER_DEBUG = "eos,broker,topic"
# cgrp alone: joins, assignments, revocations, heartbeat failures; fetch would log every fetch.
CONSUMER_DEBUG = "cgrp"


@dataclass(frozen=True, kw_only=True)
class ProducerSettings:
    """What a scenario says of a verifying producer's client and what its worker is given: declared once, here.

    ``rate_per_s`` 0 means as fast as the client allows. ``keys`` 0 means unkeyed records; otherwise keys ``k0`` ..
    ``k{keys-1}`` in turn. ``idempotence`` None keeps librdkafka's default for the acks (failsafe turns it on for
    acks=all, as Kafka's Java client does). ``properties`` are the client's own configs, given last.
    """

    rate_per_s: float = DEFAULT_RATE_PER_S
    keys: int = 16
    acks: str = "all"
    idempotence: bool | None = None
    retries: int | None = None
    linger_ms: int | None = None
    delivery_timeout_ms: int | None = None
    record_size: int = 0
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ConsumerSettings:
    """What a scenario says of a verifying consumer's client and what its worker is given: declared once, here."""

    session_timeout_ms: int | None = None
    properties: dict[str, str] = field(default_factory=dict)


def settings_of(value: object, cls: type) -> dict[str, object]:
    """The fields of ``cls`` (a settings dataclass ``value`` extends), to build another of its extensions from."""
    return {f.name: getattr(value, f.name) for f in fields(cls)}


@dataclass(frozen=True)
class ProducerSpec(ProducerSettings):
    """A verifying producer: every value unique, every attempt recorded, with its settings (ProducerSettings).

    ``count`` writes, None: until stopped. ``client_log``: where the client library's own log goes (filled in by the
    worker pool); empty means discarded, without debug contexts.
    """

    process: str
    topic: str
    bootstrap_servers: str = ""
    count: int | None = None
    flush_timeout_s: float = 30.0
    client_log: str = ""

    def producer_config(self) -> dict[str, object]:
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap_servers,
            "acks": self.acks,
            "client.id": self.process,
        }
        idempotent = self.idempotence if self.idempotence is not None else self.acks in ("all", "-1")
        config["enable.idempotence"] = idempotent
        if self.retries is not None:
            config["retries"] = self.retries
        if self.linger_ms is not None:
            config["linger.ms"] = self.linger_ms
        if self.delivery_timeout_ms is not None:
            config["delivery.timeout.ms"] = self.delivery_timeout_ms
        if self.client_log:
            config["debug"] = PRODUCER_DEBUG
        # Last, so a user's own debug contexts win.
        config.update(self.properties)
        return config


@dataclass(frozen=True)
class ConsumerSpec(ConsumerSettings):
    """A verifying consumer in ``group``, or with manual assignment of every partition when group is None."""

    process: str
    topics: tuple[str, ...]
    bootstrap_servers: str = ""
    group: str | None = None
    auto_commit_interval_ms: int = 1000
    client_log: str = ""
    # Manual assignment only: start every partition at its first offset instead of asking the group for a committed one.
    from_beginning: bool = False

    def consumer_config(self) -> dict[str, object]:
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": self.process,
            "auto.offset.reset": "earliest",
            # Offsets are stored only after the poll is written to the history pipe: a killed
            # consumer never commits a record the history does not show it read.
            "enable.auto.offset.store": False,
            "enable.auto.commit": self.group is not None,
            "auto.commit.interval.ms": self.auto_commit_interval_ms,
            "group.id": self.group or f"failsafe-manual-{self.process}",
        }
        if self.session_timeout_ms is not None:
            config["session.timeout.ms"] = self.session_timeout_ms
        if self.client_log:
            config["debug"] = CONSUMER_DEBUG
        config.update(self.properties)
        return config


def spec_to_json(spec: ProducerSpec | ConsumerSpec) -> dict:
    # The specs of Kafka's verifiable clients subclass these and name their own kind.
    kind = getattr(spec, "KIND", None) or ("producer" if isinstance(spec, ProducerSpec) else "consumer")
    return {"kind": kind, **asdict(spec)}


def spec_from_json(data: dict) -> ProducerSpec | ConsumerSpec:
    """A failsafe producer's or consumer's spec (the worker dispatches Kafka's verifiable kinds itself)."""
    data = dict(data)
    kind = data.pop("kind")
    cls = ProducerSpec if kind == "producer" else ConsumerSpec
    known = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in known}
    if cls is ConsumerSpec:
        values["topics"] = tuple(values["topics"])
    return cls(**values)
