"""failsafe's transactional writer and consume-transform-produce worker on Kafka's Java client (``driver =
"kafka-java"``).

The driver is a Java package of failsafe's own, ``failsafe.txn`` in ``driver/failsafe/txn/`` (main class ``TxnDriver``),
that writes exactly the ops of the librdkafka workers (txn_producer.py, ctp.py) under the same outcome rules
(txn_session.py). Its files are compiled together at first use with the JDK's javac against the Kafka distribution's
jars, into the cache (``txn-driver/kafka-VERSION-HASH``, keyed by the hash of every source file, in name order, and the
Kafka version), and need nothing else.

The worker process *becomes* the JVM (``exec``) once it has written its client-config op, rather than running it as a
child like Kafka's verifiable tools (verifiable.py): the transactional-client faults act on the worker's pid (SIGSTOP
freezes a zombie, SIGKILL crashes a writer), and a child JVM in a session of its own would go on untouched.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from failsafe.errors import ProvisionError, WorkloadFailed
from failsafe.jvm.java import MIN_JAVA_MAJOR, Java, find_java
from failsafe.jvm.jvm import TOOL_HEAP, tools_logging_option
from failsafe.jvm.kafka import KafkaDist, cache_root, kafka_dist
from failsafe.supervisor import run_to_end
from failsafe.tools.connections import CLIENT, command_config
from failsafe.workloads.txn.specs import CtpSpec, TxnProducerSpec, TxnSpec

MAIN_CLASS = "failsafe.txn.TxnDriver"
# The driver's package directory under failsafe/workloads/txn: every .java file in it is compiled, and hashed into
# the cache key.
SOURCE_DIR = ("driver", "failsafe", "txn")
SOURCE_LABEL = "failsafe's txn driver (driver/failsafe/txn/*.java)"
CACHE_DIR = "txn-driver"
_COMPILED_MARKER = ".compiled"
JAVAC_TIMEOUT_S = 300.0
JAVAC_HINT = "install a JDK 17 or later (Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME to one"
# Kafka's default (60 s) is how long one commitTransaction call may block: a commit that times out is called again until
# commit_timeout_s (30 s by default), as librdkafka's is, so each call is given a third of that.
JAVA_MAX_BLOCK_MS = 10_000
STRING_SERIALIZER = "org.apache.kafka.common.serialization.StringSerializer"
STRING_DESERIALIZER = "org.apache.kafka.common.serialization.StringDeserializer"
# The driver's log4j: the Java client's INFO lines (transaction state changes, epochs, coordinators) to the client log.
CLIENT_LOG_PROPERTY = "failsafe.client.log"
_LOG4J2 = f"""\
# failsafe's transactional driver (kafka-java): the Java client's log to the worker's client log.
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${{sys:{CLIENT_LOG_PROPERTY}}}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""
_LOG4J = f"""\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${{{CLIENT_LOG_PROPERTY}}}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


# -- the Java client's settings -------------------------------------------------------------------------------------
def java_producer_properties(spec: TxnSpec) -> dict[str, str]:
    """The transactional producer's configs, as transactional_config gives librdkafka's (idempotent, acks=all), then the
    spec's."""
    props = {
        "bootstrap.servers": spec.bootstrap_servers,
        "client.id": spec.process,
        "transactional.id": spec.transactional_id,
        "enable.idempotence": "true",
        "acks": "all",
        "transaction.timeout.ms": str(spec.transaction_timeout_ms),
        "max.block.ms": str(JAVA_MAX_BLOCK_MS),
        "key.serializer": STRING_SERIALIZER,
        "value.serializer": STRING_SERIALIZER,
    }
    props.update({k: str(v) for k, v in spec.properties.items()})
    return props


def java_consumer_properties(spec: CtpSpec) -> dict[str, str]:
    """The processor's consumer: read_committed, no auto commit (offsets travel in the transactions), ``batch`` records
    a poll."""
    props = {
        "bootstrap.servers": spec.bootstrap_servers,
        "client.id": f"{spec.process}-in",
        "group.id": spec.group,
        "isolation.level": "read_committed",
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
        "session.timeout.ms": str(spec.session_timeout_ms),
        "max.poll.records": str(spec.batch),
        "key.deserializer": STRING_DESERIALIZER,
        "value.deserializer": STRING_DESERIALIZER,
    }
    props.update({k: str(v) for k, v in spec.consumer_properties.items()})
    return props


def java_effective_properties(spec: TxnSpec) -> dict[str, str]:
    """What the client-config op reports: a processor's consumer settings (its isolation level) with its producer's."""
    if isinstance(spec, CtpSpec):
        return {**java_consumer_properties(spec), **java_producer_properties(spec)}
    return java_producer_properties(spec)


# -- compiling --------------------------------------------------------------------------------------------------------
def driver_sources() -> dict[str, bytes]:
    """The driver's source files, name to content, in name order."""
    package = resources.files("failsafe.workloads.txn").joinpath(*SOURCE_DIR)
    sources = {
        f.name: f.read_bytes()
        for f in sorted(package.iterdir(), key=lambda f: f.name)
        if f.name.endswith(".java") and f.is_file()
    }
    if not sources:
        raise ProvisionError(f"{SOURCE_LABEL} is missing from failsafe's installation: reinstall failsafe")
    return sources


def driver_dir(dist: KafkaDist, sources: Mapping[str, bytes] | None = None) -> Path:
    """Where the driver's classes for this Kafka live (they may not be compiled yet)."""
    h = hashlib.sha256()
    # Name and length before each content, in name order: the key changes with any file's name or content, never with
    # listing order.
    for name, text in sorted((sources if sources is not None else driver_sources()).items()):
        h.update(f"{name}\0{len(text)}\0".encode())
        h.update(text)
    h.update(dist.version.encode())
    return cache_root() / CACHE_DIR / f"kafka-{dist.version}-{h.hexdigest()[:12]}"


def find_javac(java: Java) -> Path:
    """javac beside the java that runs Kafka, else in $JAVA_HOME, else on the PATH."""
    candidates = [java.executable.resolve().parent / "javac"]
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "javac")
    found = shutil.which("javac")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ProvisionError(f'no javac found: driver = "kafka-java" compiles {SOURCE_LABEL} at first use; {JAVAC_HINT}')


def compiled_driver(java: Java, dist: KafkaDist) -> Path:
    """The driver's class directory for this Kafka, compiled now if it is not in the cache yet."""
    sources = driver_sources()
    home = driver_dir(dist, sources)
    classes = home / "classes"
    if (home / _COMPILED_MARKER).is_file():
        return classes
    javac = find_javac(java)
    home.parent.mkdir(parents=True, exist_ok=True)
    # Compiled aside and renamed into place: two workers starting at once each compile, and the first rename wins.
    staging = Path(tempfile.mkdtemp(prefix=f"{home.name}.", dir=home.parent))
    try:
        src = staging.joinpath("src", *SOURCE_DIR[1:])
        src.mkdir(parents=True)
        for name, text in sources.items():
            (src / name).write_bytes(text)
        cmd = [
            str(javac),
            "--release",
            str(MIN_JAVA_MAJOR),
            "-encoding",
            "UTF-8",
            "-nowarn",
            "-cp",
            dist.classpath,
            "-d",
            str(staging / "classes"),
            *(str(src / name) for name in sources),
        ]
        done = run_to_end(cmd, name="javac (TxnDriver)", timeout_s=JAVAC_TIMEOUT_S)
        if done.returncode != 0:
            raise ProvisionError(
                f"javac could not compile {SOURCE_LABEL} against Kafka {dist.version}'s jars: "
                f"{_first_error(done.output)}"
            )
        (staging / _COMPILED_MARKER).write_text(f"kafka {dist.version}\n")
        try:
            staging.rename(home)
        except OSError:
            if not (home / _COMPILED_MARKER).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return classes


def _first_error(output: str) -> str:
    for line in output.splitlines():
        if re.search(r"\berror\b", line):
            return line.strip()[:300]
    return output.strip().splitlines()[0][:300] if output.strip() else "javac failed without a message"


# -- running ----------------------------------------------------------------------------------------------------------
def logging_option(spec: TxnSpec, dist: KafkaDist) -> list[str]:
    """The Java client's log to the spec's client log; without one, warnings to stderr as Kafka's tools do."""
    if not spec.client_log:
        return [tools_logging_option(dist)]
    config_dir = cache_root() / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    name, text = (
        ("txn-driver-log4j2.properties", _LOG4J2) if dist.uses_log4j2 else ("txn-driver-log4j.properties", _LOG4J)
    )
    path = config_dir / name
    if not path.is_file() or path.read_text() != text:
        # Written aside and renamed: another worker's JVM may be reading it.
        tmp = config_dir / f".{name}.{os.getpid()}"
        tmp.write_text(text)
        tmp.replace(path)
    option = f"-Dlog4j2.configurationFile={path}" if dist.uses_log4j2 else f"-Dlog4j.configuration=file:{path}"
    return [option, f"-D{CLIENT_LOG_PROPERTY}={spec.client_log}"]


def _properties_args(flag: str, props: dict[str, str]) -> list[str]:
    return [a for name, value in props.items() for a in (flag, f"{name}={value}")]


def txn_driver_command(spec: TxnSpec, java: Java, dist: KafkaDist, classes: Path) -> list[str]:
    """The JVM command line of the driver for ``spec``."""
    jvm = [
        str(java.executable),
        f"-Xmx{TOOL_HEAP}",
        "-XX:+UseSerialGC",
        "-Djava.awt.headless=true",
        # The driver stops after its current transaction and halts; log4j2's own hook would stop the log before that.
        "-Dlog4j2.shutdownHookEnabled=false",
        *logging_option(spec, dist),
        "-cp",
        f"{classes}{os.pathsep}{dist.classpath}",
        MAIN_CLASS,
    ]
    common = [
        "--process",
        spec.process,
        "--seed",
        str(spec.seed),
        "--abort-probability",
        repr(spec.abort_probability),
        "--commit-timeout-s",
        repr(spec.commit_timeout_s),
        *_properties_args("--producer-property", java_producer_properties(spec)),
        *(("--superseded-file", spec.superseded_file) if spec.superseded_file else ()),
        # A secured cluster's settings, from its client user's file (tools/connections.py): no secret on the line.
        *command_config(spec.bootstrap_servers, CLIENT, option="--client-config"),
    ]
    if isinstance(spec, TxnProducerSpec):
        args = [
            "writer",
            *common,
            *[a for t in spec.topics for a in ("--topic", t)],
            "--rate-per-s",
            repr(spec.rate_per_s),
            "--count",
            str(spec.count if spec.count is not None else -1),
            "--min-writes",
            str(spec.min_writes),
            "--max-writes",
            str(spec.max_writes),
            "--keys",
            str(spec.keys),
        ]
    else:
        args = [
            "processor",
            *common,
            "--input",
            spec.input_topic,
            "--output",
            spec.output_topic,
            "--group",
            spec.group,
            "--batch",
            str(spec.batch),
            *_properties_args("--consumer-property", java_consumer_properties(spec)),
        ]
    return [*jvm, *args]


def exec_txn_driver(spec: TxnSpec) -> None:
    """Replace this worker process with the driver's JVM; returns only by raising (no Java, no javac, no jars)."""
    java = find_java()
    dist = kafka_dist(spec.kafka_version)
    cmd = txn_driver_command(spec, java, dist, compiled_driver(java, dist))
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(cmd[0], cmd)
    except OSError as e:
        raise WorkloadFailed(f"cannot start {cmd[0]}: {e.strerror or e}") from e
