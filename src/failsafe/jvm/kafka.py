"""Kafka's own jars, resolved from Maven Central through the pom beside this file.

The jars land in ``$FAILSAFE_CACHE`` (default ``~/.cache/failsafe``) under
``kafka-<version>/libs``, outside git, and are resolved once per version.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from failsafe.errors import ProvisionError
from failsafe.supervisor import run_to_end

DEFAULT_KAFKA_VERSION = "4.3.1"
# The newest 3.9 release on Maven Central (3.9 is the last line with ZooKeeper mode).
DEFAULT_ZOOKEEPER_KAFKA_VERSION = "3.9.2"
_RESOLVED_MARKER = ".resolved"
_CLASS_INDEX = "classes.json"
MAVEN_HINT = "install Maven (Debian: apt-get install maven) or run 'make setup'"


def cache_root() -> Path:
    return Path(os.environ.get("FAILSAFE_CACHE", Path.home() / ".cache" / "failsafe"))


def check_supported(version: str) -> None:
    """Kafka 4.x runs in KRaft mode; 3.9.x is kept for the ZooKeeper-era seeds."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ProvisionError(f"Kafka version {version!r} is not of the form X.Y.Z: try {DEFAULT_KAFKA_VERSION}")
    major, minor, _ = (int(p) for p in version.split("."))
    if not (major == 4 or (major, minor) == (3, 9)):
        raise ProvisionError(
            f"Kafka {version} is not supported: use a 4.x release (default {DEFAULT_KAFKA_VERSION}) or 3.9.x"
        )


@dataclass(frozen=True)
class KafkaDist:
    """A resolved Kafka: its version and the directory of its jars."""

    version: str
    libs_dir: Path
    # Jars after the release's own (a tiered cluster's brokers: LocalTieredStorage, jvm/tiered.py).
    extra_jars: tuple[Path, ...] = ()

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def uses_log4j2(self) -> bool:
        return self.major >= 4

    @property
    def classpath(self) -> str:
        return os.pathsep.join([str(self.libs_dir / "*"), *(str(j) for j in self.extra_jars)])

    def has_class(self, class_name: str) -> bool:
        return class_name in self._class_index()

    def _class_index(self) -> frozenset[str]:
        """Main-class candidates present in the jars, cached next to them."""
        index_file = self.libs_dir.parent / _CLASS_INDEX
        if index_file.is_file():
            return frozenset(json.loads(index_file.read_text()))
        names: set[str] = set()
        for jar in sorted(self.libs_dir.glob("kafka*.jar")):
            with zipfile.ZipFile(jar) as zf:
                for entry in zf.namelist():
                    if entry.endswith(".class") and "$" not in entry:
                        names.add(entry[: -len(".class")].replace("/", "."))
        index_file.write_text(json.dumps(sorted(names)))
        return frozenset(names)


def kafka_dist(version: str = DEFAULT_KAFKA_VERSION) -> KafkaDist:
    """The already-resolved Kafka of that version, or a ProvisionError saying how to get it."""
    check_supported(version)
    home = cache_root() / f"kafka-{version}"
    if not (home / _RESOLVED_MARKER).is_file():
        raise ProvisionError(
            f"Kafka {version} is not resolved yet: run 'failsafe setup --kafka-version {version}' (or 'make setup')"
        )
    return KafkaDist(version=version, libs_dir=home / "libs")


def resolve_kafka(version: str = DEFAULT_KAFKA_VERSION, *, quiet: bool = True) -> KafkaDist:
    """Resolve Kafka's jars from Maven Central into the cache (idempotent)."""
    check_supported(version)
    home = cache_root() / f"kafka-{version}"
    if not (home / _RESOLVED_MARKER).is_file():
        resolve_artifacts(version, home, "libs", "Kafka", (), quiet=quiet)
        (home / _RESOLVED_MARKER).write_text(version + "\n")
    return KafkaDist(version=version, libs_dir=home / "libs")


def resolve_beside(version: str, artifacts: str, libs_name: str, label: str, jar: str, *, quiet: bool) -> KafkaDist:
    """Kafka's other artifacts of that version (the pom's ``-Dkafka.artifacts=ARTIFACTS`` profile: MirrorMaker 2, Kafka
    Streams), resolved once into ``kafka-VERSION/LIBS_NAME`` beside the broker's jars; a ProvisionError when Maven
    resolves no ``jar`` (a glob) among them."""
    check_supported(version)
    home = cache_root() / f"kafka-{version}"
    marker = home / f".{artifacts}-resolved"
    if not marker.is_file():
        libs = resolve_artifacts(version, home, libs_name, label, (f"-Dkafka.artifacts={artifacts}",), quiet=quiet)
        if not any(libs.glob(jar)):
            raise ProvisionError(f"Maven resolved no {jar} for Kafka {version} into {libs}")
        marker.write_text(version + "\n")
    return KafkaDist(version, home / libs_name)


def resolve_artifacts(
    version: str, home: Path, libs_name: str, label: str, profile_args: tuple[str, ...], *, quiet: bool
) -> Path:
    """``mvn dependency:copy-dependencies`` of kafka-pom.xml (with ``profile_args``) into ``home/libs_name``, replaced
    whole."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ProvisionError(f"Maven (mvn) is not on the PATH: {MAVEN_HINT}")
    staging = home / f"{libs_name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    pom = resources.files("failsafe.jvm") / "kafka-pom.xml"
    with resources.as_file(pom) as pom_path:
        cmd = [
            mvn,
            "-B",
            "-f",
            str(pom_path),
            f"-Dkafka.version={version}",
            *profile_args,
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ]
        if int(version.split(".")[0]) < 4:
            cmd.append("-Dkafka.legacy.logging")
        if quiet:
            cmd.insert(1, "-q")
        proc = run_to_end(cmd, name=f"mvn ({label})", capture=quiet)
    if proc.returncode != 0:
        detail = first_maven_error(proc.output) if quiet else "see Maven's output above"
        raise ProvisionError(f"Maven could not resolve {label} {version}: {detail}")
    libs = home / libs_name
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    return libs


def first_maven_error(output: str) -> str:
    for line in output.splitlines():
        if "[ERROR]" in line:
            return re.sub(r"\x1b\[[0-9;]*m", "", line).replace("[ERROR]", "").strip()[:300]
    return "mvn failed without an [ERROR] line; run it with -X to see why"
