"""Making the class-data sharing archive (jvm/cds.py): one combined node started and stopped once.

The archive holds the classes a node really loads, so it is written by a real node: a
one-node KRaft cluster (broker and controller in one JVM) in a temporary directory, on ports the
kernel picks, started with ``-XX:ArchiveClassesAtExit`` and stopped cleanly once ready (the
JVM writes the archive as it exits). The archive is written beside its final name and renamed
into place, so a node never maps a half-written file.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.topology.lifecycle import clean, up
from failsafe.errors import ProvisionError
from failsafe.jvm.cds import archive_path, dump_option
from failsafe.jvm.java import Java
from failsafe.jvm.kafka import KafkaDist

ARCHIVE_NODE_HEAP = "512M"
READY_TIMEOUT_S = 180.0


def _kernel_ports(count: int) -> list[int]:
    # Port 0: the node lives for seconds and is never restarted, so nothing can take its port in between.
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def ensure_archive(java: Java, dist: KafkaDist, progress: Callable[[str], None] = lambda _: None) -> Path:
    """The archive for this Java and Kafka, made now if it does not exist yet."""
    final = archive_path(java, dist)
    if final.is_file() and final.stat().st_size > 0:
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_suffix(".jsa.partial")
    partial.unlink(missing_ok=True)
    broker_port, controller_port = _kernel_ports(2)
    # No metrics agent: Java refuses to dump an archive while a -javaagent runs ("Error occurred during CDS dumping": it
    # would need -XX:+AllowArchivingWithJavaAgent, a diagnostic option); the nodes that map the archive may run the
    # agent.
    spec = ClusterSpec(
        brokers=1,
        controllers=1,
        combined=True,
        base_port=broker_port,
        controller_base_port=controller_port,
        kafka_version=dist.version,
        heap=ARCHIVE_NODE_HEAP,
        jvm_options=(dump_option(partial),),
        metrics=False,
    )
    root = Path(tempfile.mkdtemp(prefix="failsafe-cds-"))
    cluster_dir = root / "cluster"
    try:
        progress("starting one node to record the classes Kafka loads")
        up(cluster_dir, spec, set(), READY_TIMEOUT_S, progress)
        progress("stopping it: the JVM writes the archive as it exits")
    finally:
        if (cluster_dir / "failsafe-state.json").exists():
            clean(cluster_dir)
        shutil.rmtree(root, ignore_errors=True)
    if not partial.is_file() or partial.stat().st_size == 0:
        raise ProvisionError(
            f"the JVM wrote no class-data sharing archive at {partial}: nodes start without one "
            f"(see 'java -XX:ArchiveClassesAtExit' in the JDK docs; Java {java.major} at {java.executable})"
        )
    partial.rename(final)
    return final
