"""Profiles: named, versioned sets of broker, topic and client settings, shipped as data (cluster/profiles/NAME.toml).

    version      a whole number, raised whenever a value changes: a cluster records the version it was made with
    description  what the profile is for, in a few sentences ('failsafe profiles' lists it)
    [broker]     server properties of every Kafka node, under the user's own --override
    [topic]      configs of the topics scenarios create, under the scenario's own configs
    [producer]   settings of every producer a scenario starts, under the scenario's own; [producer.librdkafka] and
    [consumer]   [producer.kafka-java] (and the same for [consumer]) hold what only one client library takes, or
                 takes under another name

Values are strings, whole numbers or booleans (written as Kafka's words: true, false). What failsafe itself sets to run
and verify a cluster or a client (listeners, log.dirs, bootstrap.servers, group.id, ...) is no profile's to set. How
each part reaches Kafka: the broker settings in cluster/properties.py, the topic and client settings in the scenario
engine (scenarios/engine/core.py, scenarios/engine/setup.py, workloads/client_defaults.py). docs/failover.md,
"Profiles"."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Protocol

from failsafe.errors import UserError

DEFAULT_PROFILE = "defaults"
SECTIONS = ("broker", "topic", "producer", "consumer")
CLIENT_SECTIONS = ("producer", "consumer")
# The client libraries a client section may name (scenarios/base.py CLIENT_LIBRARIES: failsafe's workers, Kafka's Java
# clients).
LIBRARIES = ("librdkafka", "kafka-java")
# What failsafe sets itself, on every node or client, so that the cluster runs and the history can be checked.
RESERVED = {
    "broker": frozenset(
        {
            "process.roles",
            "node.id",
            "broker.id",
            "controller.quorum.voters",
            "controller.quorum.bootstrap.servers",
            "controller.listener.names",
            "listeners",
            "advertised.listeners",
            "listener.security.protocol.map",
            "inter.broker.listener.name",
            "log.dirs",
            "log.dir",
            "zookeeper.connect",
            "broker.rack",
        }
    ),
    "topic": frozenset(),
    "producer": frozenset(
        {"bootstrap.servers", "client.id", "transactional.id", "debug", "key.serializer", "value.serializer"}
    ),
    "consumer": frozenset(
        {
            "bootstrap.servers",
            "client.id",
            "group.id",
            "group.instance.id",
            "group.protocol",
            "group.remote.assignor",
            "partition.assignment.strategy",
            "enable.auto.commit",
            "enable.auto.offset.store",
            "auto.offset.reset",
            "isolation.level",
            "debug",
            "key.deserializer",
            "value.deserializer",
            "share.acknowledgement.mode",
        }
    ),
}


class ProfiledSpec(Protocol):
    """What this module reads of a cluster spec (cluster/spec.py's ClusterSpec; not imported here: it imports nothing of
    ours)."""

    profile: str
    profile_version: int
    brokers: int
    overrides: dict[str, str]


@dataclass(frozen=True)
class Profile:
    name: str
    version: int
    description: str
    broker: dict[str, str] = field(default_factory=dict)
    topic: dict[str, str] = field(default_factory=dict)
    # Each client section: its settings for every library under "", and each library's own under its name.
    producer: dict[str, dict[str, str]] = field(default_factory=dict)
    consumer: dict[str, dict[str, str]] = field(default_factory=dict)

    def client(self, side: str, library: str) -> dict[str, str]:
        """The settings of a producer or consumer (``side``) of ``library``: the section's, then the library's own."""
        section = self.producer if side == "producer" else self.consumer
        return {**section.get("", {}), **section.get(library, {})}

    def settings(self) -> dict[str, dict[str, str]]:
        """Every setting by where it goes ("broker", "topic", "producer", "producer.librdkafka", ...): what 'show'
        prints."""
        out = {"broker": dict(self.broker), "topic": dict(self.topic)}
        for side in CLIENT_SECTIONS:
            section = self.producer if side == "producer" else self.consumer
            out[side] = dict(section.get("", {}))
            out.update({f"{side}.{library}": dict(section[library]) for library in LIBRARIES if section.get(library)})
        return out

    @property
    def label(self) -> str:
        return f"{self.name} (version {self.version})"


def profile_names() -> list[str]:
    """The profiles failsafe ships, by name."""
    return sorted(f.name.removesuffix(".toml") for f in _directory().iterdir() if f.name.endswith(".toml"))


def load_profile(name: str) -> Profile:
    """The profile ``name``; UserError naming the known ones when there is none."""
    return _load(name)


@cache
def _load(name: str) -> Profile:
    known = profile_names()
    if name not in known:
        raise UserError(f"unknown profile {name!r}: the profiles are {', '.join(known)} (failsafe profiles)")
    path = _directory() / f"{name}.toml"
    return parse_profile(path.read_text(), name, f"src/failsafe/cluster/profiles/{name}.toml")


def parse_profile(text: str, name: str, origin: str) -> Profile:
    """A profile from its TOML; UserError naming the file and what is wrong (a profile is data, validated whole)."""

    def bad(message: str) -> UserError:
        return UserError(f"profile {name} ({origin}): {message}")

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise bad(f"not valid TOML: {e}") from e
    unknown = sorted(set(data) - {"version", "description", *SECTIONS})
    if unknown:
        raise bad(f"unknown section {unknown[0]!r} (known: version, description, {', '.join(SECTIONS)})")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise bad(f"version is {version!r}: a whole number from 1, raised whenever a value changes")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise bad("description is missing: say what the profile is for")
    sections: dict[str, dict] = {}
    for section in SECTIONS:
        table = data.get(section, {})
        if not isinstance(table, dict):
            raise bad(f"[{section}] must be a table of setting = value")
        if section in CLIENT_SECTIONS:
            common = _settings({k: v for k, v in table.items() if not isinstance(v, dict)}, section, bad)
            libraries = {k: v for k, v in table.items() if isinstance(v, dict)}
            strange = sorted(set(libraries) - set(LIBRARIES))
            if strange:
                raise bad(f"[{section}.{strange[0]}] names no client library (known: {', '.join(LIBRARIES)})")
            sections[section] = {
                "": common,
                **{lib: _settings(libraries[lib], f"{section}.{lib}", bad) for lib in LIBRARIES if lib in libraries},
            }
        else:
            sections[section] = _settings(table, section, bad)
    return Profile(name, version, " ".join(description.split()), **sections)


def _settings(table: dict, where: str, bad: Callable[[str], UserError]) -> dict[str, str]:
    out = {}
    reserved = RESERVED[where.split(".")[0]]
    for key, value in table.items():
        if isinstance(value, dict | list) or value is None:
            raise bad(f"[{where}] {key} is {value!r}: a setting's value is a string, a whole number or true/false")
        if key in reserved:
            raise bad(
                f"[{where}] {key} is set by failsafe itself (it runs and checks the cluster and its clients "
                f"with it): no profile's to set"
            )
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _directory():
    return resources.files("failsafe.cluster") / "profiles"


# -- a cluster's profile ---------------------------------------------------------------------------------------------
def spec_fields(name: str) -> dict[str, str | int]:
    """The fields of a cluster spec made with profile ``name`` (its name and the version failsafe ships); UserError if
    unknown."""
    profile = load_profile(name)
    return {"profile": profile.name, "profile_version": profile.version}


def profile_of(spec: ProfiledSpec) -> Profile:
    """The profile a cluster was made with, as failsafe ships it now; UserError when the shipped version is another one
    (the cluster's brokers run the settings of the version they were made with)."""
    profile = load_profile(spec.profile)
    if profile.version != spec.profile_version:
        raise UserError(
            f"the cluster was made with version {spec.profile_version} of profile {spec.profile} and failsafe "
            f"now ships "
            f"version {profile.version}: make it again ('failsafe clean', then 'failsafe up --profile {spec.profile}')"
        )
    return profile


def broker_settings(spec: ProfiledSpec) -> dict[str, str]:
    """What every Kafka node of the cluster is given besides failsafe's own properties: the profile's broker settings,
    then the user's --override (which wins)."""
    return {**profile_of(spec).broker, **spec.overrides}


def check_cluster(spec: ProfiledSpec) -> None:
    """UserError when the cluster could not do what its profile is for (a min.insync.replicas above its broker
    count)."""
    settings = broker_settings(spec)
    wanted = settings.get("min.insync.replicas", "1")
    if wanted.isdigit() and int(wanted) > spec.brokers:
        source = "--override" if "min.insync.replicas" in spec.overrides else f"profile {spec.profile}"
        raise UserError(
            f"{source} sets min.insync.replicas={wanted}: a cluster of {spec.brokers} "
            f"broker{'s' if spec.brokers > 1 else ''} "
            f"could acknowledge no acks=all write (nor commit a consumer's offsets); use --brokers {wanted} or more"
        )
