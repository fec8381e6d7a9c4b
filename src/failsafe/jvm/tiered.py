"""Kafka's own remote storage for tests: ``LocalTieredStorage``, a RemoteStorageManager that keeps the remote tier in
a directory (KIP-405's reference store), from the ``test`` jar of ``kafka-storage`` on Maven Central.

A cluster made with ``failsafe up --tiered-storage`` puts the jar on its brokers' classpath (cluster/tiered.py). It is
resolved once per release into ``kafka-<version>/tiered-libs``. A release whose test jar Maven Central does not serve
takes the one ``NOT_SERVED`` names, and says so: the store is a plug-in of the broker's RemoteStorageManager
interface. When the broker's release moved a class that older store uses (``MOVED``), the store's release's own copy of
that class, taken from its ``kafka-clients`` jar, goes on the classpath beside it in a jar of its own.
"""

from __future__ import annotations

import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from failsafe.errors import ProvisionError
from failsafe.jvm.kafka import MAVEN_HINT, cache_root, check_supported, first_maven_error
from failsafe.supervisor import run_to_end

LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
# Checked on 2026-11-30: `mvn dependency:get -Dartifact=org.apache.kafka:kafka-storage:4.4.0:jar:test` answered "Could
# not find artifact" (kafka-storage-4.4.0.jar itself is served); 4.3.1's test jar is served.
NOT_SERVED = {"4.4.0": "4.3.1"}
# Classes the older store needs that the broker's release moved, by broker release: Kafka 4.4.0's kafka-clients has
# LogContext in org.apache.kafka.common.utils.internals, and 4.3.1's LocalTieredStorage, started in a 4.4.0 broker,
# failed with NoClassDefFoundError: org/apache/kafka/common/utils/LogContext. Its only missing class (its references
# checked with javap against 4.4.0's jars) apart from kafka-clients' test TestUtils, which LocalTieredStorage.configure
# calls only without a directory, absent beside 4.3.1's brokers too; LogContext's own references are all in 4.4.0.
MOVED = {"4.4.0": ("org/apache/kafka/common/utils/LogContext",)}
_MARKER = ".tiered-resolved"


@dataclass(frozen=True)
class RemoteStorageJar:
    """The jars that hold LocalTieredStorage for brokers of one release (the test jar, and the moved classes' jar when
    there is one), and the release they came from."""

    version: str
    paths: tuple[Path, ...]

    def note(self, broker_version: str) -> str:
        """What a report says of the store's release beside brokers of ``broker_version``."""
        if self.version == broker_version:
            return f"LocalTieredStorage of kafka-storage {self.version}"
        return (
            f"LocalTieredStorage of kafka-storage {self.version} "
            f"(its {broker_version} test jar is not on Maven Central)"
        )


def store_version(version: str) -> str:
    """The release whose LocalTieredStorage runs in brokers of ``version``."""
    return NOT_SERVED.get(version, version)


def resolve_remote_storage(version: str, *, quiet: bool = True) -> RemoteStorageJar:
    """The jars for brokers of ``version``, from Maven Central on first use (idempotent); a ProvisionError that names
    Maven's own error when they cannot be had."""
    check_supported(version)
    used = store_version(version)
    libs = cache_root() / f"kafka-{used}" / "tiered-libs"
    jar = libs / f"kafka-storage-{used}-test.jar"
    moved = MOVED.get(version, ())
    shim = libs / f"kafka-clients-{used}-moved-in-{version}.jar"
    paths = (jar, shim) if moved else (jar,)
    if (libs / _MARKER).is_file() and all(p.is_file() for p in paths):
        return RemoteStorageJar(used, paths)
    libs.mkdir(parents=True, exist_ok=True)
    _maven_copy(f"org.apache.kafka:kafka-storage:{used}:jar:test", libs, jar, quiet=quiet)
    if moved:
        staging = libs / "staging"
        clients = staging / f"kafka-clients-{used}.jar"
        _maven_copy(f"org.apache.kafka:kafka-clients:{used}", staging, clients, quiet=quiet)
        _extract(clients, moved, shim)
        shutil.rmtree(staging)
    (libs / _MARKER).write_text(used + "\n")
    return RemoteStorageJar(used, paths)


def _maven_copy(artifact: str, into: Path, expected: Path, *, quiet: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ProvisionError(f"Maven (mvn) is not on the PATH: {MAVEN_HINT}")
    into.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-B", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={into}"]
    if quiet:
        cmd.insert(1, "-q")
    proc = run_to_end(cmd, name=f"mvn ({artifact})", capture=quiet)
    if proc.returncode != 0 or not expected.is_file():
        detail = first_maven_error(proc.output) if quiet else "see Maven's output above"
        raise ProvisionError(f"Maven could not resolve {artifact} (for LocalTieredStorage): {detail}")


def _extract(source: Path, classes: tuple[str, ...], target: Path) -> None:
    """A jar of the ``classes`` of ``source`` (each with its nested classes); a ProvisionError when one is not in it."""
    with zipfile.ZipFile(source) as src:
        names = src.namelist()
        partial = target.with_suffix(".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for cls in classes:
                found = [n for n in names if n == f"{cls}.class" or n.startswith(f"{cls}$")]
                if not found:
                    raise ProvisionError(f"{source.name} has no {cls}")
                for name in found:
                    out.writestr(name, src.read(name))
    partial.rename(target)
