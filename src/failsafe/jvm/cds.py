"""Class-data sharing for Kafka's JVMs: an archive of the classes a node loads, made once per Kafka and Java.

A Kafka node loads some 6,000 classes before it serves a request; on two busy cores that is a
good part of a restart, and the seed lab restarts nodes about ten times. Java 17's dynamic
archive (JEP 350) keeps those classes parsed and verified in a file the next JVMs map:
``-XX:ArchiveClassesAtExit`` writes it when a JVM exits normally, ``-XX:SharedArchiveFile``
uses it. ``failsafe setup`` makes it (cluster/nodes/cds.py) in the cache, named after the Kafka
version, the Java runtime and the jars, so a different Java or classpath never meets a stale
archive; a JVM that cannot use an archive says so in its log and starts without it (the
default ``-Xshare:auto``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from failsafe.jvm.java import Java
from failsafe.jvm.kafka import KafkaDist, cache_root

ARCHIVE_DIR = "cds"


def archive_path(java: Java, dist: KafkaDist) -> Path:
    """Where the archive for this Java and these jars lives (it may not exist yet)."""
    digest = hashlib.sha256()
    digest.update(str(java.executable.resolve()).encode())
    for jar in sorted(dist.libs_dir.glob("*.jar")):
        digest.update(f"{jar.name}:{jar.stat().st_size}\n".encode())
    return cache_root() / ARCHIVE_DIR / f"kafka-{dist.version}-java{java.major}-{digest.hexdigest()[:12]}.jsa"


def share_options(java: Java, dist: KafkaDist) -> list[str]:
    """The JVM options that map the archive, or none while there is no archive."""
    path = archive_path(java, dist)
    return [f"-XX:SharedArchiveFile={path}"] if path.is_file() and path.stat().st_size > 0 else []


def dump_option(path: Path) -> str:
    """The JVM option that writes a dynamic archive to ``path`` when the JVM exits normally."""
    return f"-XX:ArchiveClassesAtExit={path}"
