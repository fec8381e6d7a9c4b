"""MirrorMaker 2 from Kafka's own jars: ``connect-mirror`` and the Connect runtime, resolved through the
same pom (its ``mirror`` profile) into ``kafka-<version>/mirror-libs`` beside the broker's jars.

MirrorMaker runs on its own classpath, as ``connect-mirror-maker.sh`` runs it from a Kafka
distribution: ``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties``. A resolved MirrorMaker is a
``KafkaDist`` whose jar directory is ``mirror-libs``.
"""

from __future__ import annotations

from pathlib import Path

from failsafe.errors import ProvisionError
from failsafe.jvm.kafka import KafkaDist, cache_root, check_supported, resolve_beside

MIRROR_MAKER_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
_RESOLVED_MARKER = ".mirror-resolved"
# Releases whose connect-mirror Maven Central does not serve, and the release MirrorMaker 2 is taken from instead (a
# client of the cluster, so an older one talks to the newer brokers): on 2026-11-29 connect-mirror's maven-metadata.xml
# listed nothing after 4.3.1 and its 4.4.0 jar answered 404, while connect-runtime, kafka-tools and kafka-streams 4.4.0
# were served.
NOT_SERVED = {"4.4.0": "4.3.1"}


def mirror_version(version: str) -> str:
    """The Kafka release whose MirrorMaker 2 runs beside brokers of ``version``."""
    return NOT_SERVED.get(version, version)


def _home(version: str) -> Path:
    return cache_root() / f"kafka-{version}"


def mirror_dist(version: str) -> KafkaDist:
    """The resolved MirrorMaker of that Kafka version, or a ProvisionError saying how to get it."""
    check_supported(version)
    version = mirror_version(version)
    home = _home(version)
    if not (home / _RESOLVED_MARKER).is_file():
        raise ProvisionError(
            f"MirrorMaker 2 of Kafka {version} is not resolved yet: run 'failsafe setup --kafka-version {version}' "
            "(or 'make setup')"
        )
    return KafkaDist(version, home / "mirror-libs")  # the same shape as the broker's: a version and a jar directory


def resolve_mirror(version: str, *, quiet: bool = True) -> KafkaDist:
    """Resolve connect-mirror and its runtime from Maven Central into the cache (idempotent); for a release whose
    connect-mirror is not served, the one ``mirror_version`` names."""
    return resolve_beside(
        mirror_version(version), "mirror", "mirror-libs", "MirrorMaker 2", "connect-mirror-*.jar", quiet=quiet
    )
