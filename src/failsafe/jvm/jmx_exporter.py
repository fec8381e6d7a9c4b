"""Prometheus's JMX exporter, the Java agent every node runs with so its metrics can be read over HTTP.

The agent (``io.prometheus.jmx:jmx_prometheus_javaagent``) is resolved from Maven Central once, into
``$FAILSAFE_CACHE/jmx-exporter-<version>/``, outside every classpath: it is a shaded jar that must be
loaded with ``-javaagent`` only. What it exports and under which names is the configuration
failsafe writes beside a cluster's configs (cluster/observe/metrics.py).
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from failsafe.errors import ProvisionError
from failsafe.jvm.kafka import MAVEN_HINT, cache_root, first_maven_error
from failsafe.supervisor import run_to_end

# The newest release Maven Central serves (1.0.1, 2024); its maven-metadata.xml lists none later.
JMX_EXPORTER_VERSION = "1.0.1"
ARTIFACT = "io.prometheus.jmx:jmx_prometheus_javaagent"


def _home(version: str) -> Path:
    return cache_root() / f"jmx-exporter-{version}"


def _jar(version: str) -> Path:
    return _home(version) / f"jmx_prometheus_javaagent-{version}.jar"


def exporter_agent(version: str = JMX_EXPORTER_VERSION) -> Path:
    """The resolved agent jar, or a ProvisionError saying how to get it."""
    jar = _jar(version)
    if not jar.is_file():
        raise ProvisionError(
            f"Prometheus's JMX exporter {version} is not resolved yet: run 'failsafe setup' (or 'make setup'), "
            "or start the cluster with --no-metrics"
        )
    return jar


def resolve_exporter(version: str = JMX_EXPORTER_VERSION, *, quiet: bool = True) -> Path:
    """Resolve the agent jar from Maven Central into the cache (idempotent)."""
    jar = _jar(version)
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ProvisionError(f"Maven (mvn) is not on the PATH: {MAVEN_HINT}")
    staging = _home(version).with_name(_home(version).name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    pom = resources.files("failsafe.jvm") / "kafka-pom.xml"
    with resources.as_file(pom) as pom_path:
        # dependency:copy needs a project to run in: the Kafka pom, whose own dependencies it leaves alone.
        cmd = [
            mvn,
            "-B",
            "-f",
            str(pom_path),
            "dependency:copy",
            f"-Dartifact={ARTIFACT}:{version}",
            f"-DoutputDirectory={staging}",
        ]
        if quiet:
            cmd.insert(1, "-q")
        proc = run_to_end(cmd, name="mvn (JMX exporter)", capture=quiet)
    if proc.returncode != 0 or not (staging / jar.name).is_file():
        detail = first_maven_error(proc.output) if quiet else "see Maven's output above"
        raise ProvisionError(f"Maven could not resolve {ARTIFACT}:{version}: {detail}")
    shutil.rmtree(_home(version), ignore_errors=True)
    staging.rename(_home(version))
    return jar


def agent_option(jar: Path, address: str, port: int, config: Path) -> str:
    """The JVM option that starts the agent serving ``http://address:port/metrics`` with ``config``."""
    return f"-javaagent:{jar}={address}:{port}:{config}"
