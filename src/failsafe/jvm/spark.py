"""Spark's Kafka source for the installed pyspark, resolved from Maven Central.

pyspark ships Spark's jars but not the Kafka connector. ``resolve_spark_kafka`` copies
``spark-sql-kafka-0-10_2.13`` of exactly the installed Spark version, with its dependencies,
into ``$FAILSAFE_CACHE/spark-kafka-<version>/jars`` and drops every jar whose artifact pyspark
already has (kafka-clients brings its own lz4, snappy and slf4j; the connector brings scala and
the hadoop client): two versions of one class on the classpath fail at run time, not at start.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from failsafe.errors import ProvisionError
from failsafe.jvm.kafka import MAVEN_HINT, cache_root, first_maven_error
from failsafe.supervisor import run_to_end

CONNECTOR = "spark-sql-kafka-0-10_2.13"
PYSPARK_HINT = "install it with 'make setup' (or: pip install 'failsafe[spark]')"
_RESOLVED_MARKER = ".resolved"
# The version starts at the first '-' followed by digits and a dot: spark-sql-kafka-0-10_2.13-4.0.0.jar,
# zstd-jni-1.5.6-9.jar.
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d+\..*)\.jar$")


@dataclass(frozen=True)
class SparkKafkaDist:
    """The installed pyspark and the connector jars that match it."""

    spark_version: str
    pyspark_jars_dir: Path
    jars: tuple[Path, ...]

    @property
    def spark_jars(self) -> str:
        """The value of ``spark.jars``: a comma-separated list of local paths."""
        return ",".join(str(j) for j in self.jars)


def installed_pyspark() -> tuple[str, Path]:
    """The installed pyspark's version and its jars directory, or a ProvisionError."""
    try:
        import pyspark
    except ImportError as e:
        raise ProvisionError(f"pyspark is not installed: {PYSPARK_HINT}") from e
    return pyspark.__version__, Path(pyspark.__file__).parent / "jars"


def artifact_of(jar_name: str) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients``; a name without a version is kept whole."""
    match = _VERSIONED_JAR.match(jar_name)
    return match.group("artifact") if match else jar_name.removesuffix(".jar")


def drop_shipped(jars: list[Path], shipped_jar_names: list[str]) -> tuple[list[Path], list[Path]]:
    """Split resolved jars into (kept, dropped): dropped are artifacts pyspark already ships."""
    shipped = {artifact_of(n) for n in shipped_jar_names}
    kept = [j for j in jars if artifact_of(j.name) not in shipped]
    dropped = [j for j in jars if artifact_of(j.name) in shipped]
    return kept, dropped


def spark_kafka_dist() -> SparkKafkaDist:
    """The connector for the installed pyspark, already resolved, or a ProvisionError saying how."""
    version, pyspark_jars = installed_pyspark()
    home = cache_root() / f"spark-kafka-{version}"
    if not (home / _RESOLVED_MARKER).is_file():
        raise ProvisionError(
            f"Spark's Kafka source for pyspark {version} is not resolved yet: run 'failsafe setup' (or 'make setup')"
        )
    return SparkKafkaDist(version, pyspark_jars, tuple(sorted((home / "jars").glob("*.jar"))))


def resolve_spark_kafka(*, quiet: bool = True) -> SparkKafkaDist:
    """Resolve the connector of the installed pyspark's version into the cache (idempotent)."""
    version, pyspark_jars = installed_pyspark()
    home = cache_root() / f"spark-kafka-{version}"
    if (home / _RESOLVED_MARKER).is_file():
        return spark_kafka_dist()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ProvisionError(f"Maven (mvn) is not on the PATH: {MAVEN_HINT}")
    staging = home / "jars.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    pom = resources.files("failsafe.jvm") / "spark-kafka-pom.xml"
    with resources.as_file(pom) as pom_path:
        cmd = [
            mvn,
            "-B",
            "-f",
            str(pom_path),
            f"-Dspark.version={version}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ]
        if quiet:
            cmd.insert(1, "-q")
        proc = run_to_end(cmd, name="mvn (Spark's Kafka source)", capture=quiet)
    if proc.returncode != 0:
        detail = first_maven_error(proc.output) if quiet else "see Maven's output above"
        raise ProvisionError(
            f"Maven could not resolve {CONNECTOR} {version} (the installed pyspark's version): {detail}"
        )
    _, dropped = drop_shipped(sorted(staging.glob("*.jar")), [p.name for p in pyspark_jars.glob("*.jar")])
    for jar in dropped:
        jar.unlink()
    jars = home / "jars"
    shutil.rmtree(jars, ignore_errors=True)
    staging.rename(jars)
    (home / _RESOLVED_MARKER).write_text(version + "\n")
    return spark_kafka_dist()
