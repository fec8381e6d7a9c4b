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


def _home(version: str) -> Path:
    return cache_root() / f"kafka-{version}"


def mirror_dist(version: str) -> KafkaDist:
    """The resolved MirrorMaker of that Kafka version, or a ProvisionError saying how to get it."""
    check_supported(version)
    home = _home(version)
    if not (home / _RESOLVED_MARKER).is_file():
        raise ProvisionError(
            f"MirrorMaker 2 of Kafka {version} is not resolved yet: run 'failsafe setup --kafka-version {version}' "
            "(or 'make setup')"
        )
    return KafkaDist(version, home / "mirror-libs")  # the same shape as the broker's: a version and a jar directory


def resolve_mirror(version: str, *, quiet: bool = True) -> KafkaDist:
    """Resolve connect-mirror and its runtime from Maven Central into the cache (idempotent)."""
    return resolve_beside(version, "mirror", "mirror-libs", "MirrorMaker 2", "connect-mirror-*.jar", quiet=quiet)
