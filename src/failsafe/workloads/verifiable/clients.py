"""Kafka's own VerifiableProducer, VerifiableConsumer and VerifiableShareConsumer (verifiable_share.py) as workload
drivers.

Both tools print one JSON event per line on stdout (``{"timestamp": MS, "name": ..., ...}``).
The translators here turn each event into history ops (docs/history.md), so a run driven by
Kafka's tools is checked by the same checkers as one driven by failsafe's own workers:

    producer_send_success  -> send invoke + ok
    producer_send_error    -> send invoke + fail or info (by the Java exception's class)
    record_data            -> poll ok with that record (the consumer runs with --verbose)
    records_consumed       -> poll ok with offset-only records (value null), without --verbose
    partitions_assigned    -> assign       partitions_revoked -> revoke
    offsets_committed      -> commit ok / fail
    shutdown_complete      -> close        startup_complete, shutdown_requested, tool_data -> nothing

``run_verifiable`` runs one tool as a child JVM of the worker process and writes the translated
ops through the worker's OpWriter, as failsafe's own producer and consumer do.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from failsafe.errors import UserError, WorkloadFailed
from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.jvm.java import Java, find_java
from failsafe.jvm.jvm import tool_command
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, KafkaDist, kafka_dist
from failsafe.supervisor import Child, spawn
from failsafe.tools.connections import security_for
from failsafe.tools.kafka_tools import main_class
from failsafe.tools.security import write_secret
from failsafe.workloads.group_settings import group_properties
from failsafe.workloads.share.verifiable import (
    ShareEvents,
    VerifiableShareConsumerSpec,
    verifiable_share_consumer_command,
)
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec
from failsafe.workloads.verifiable.events import (
    ProducerState,
    consumer_event_to_ops,
    parse_event,
    producer_event_to_ops,
    producer_stopped_ops,
)

if TYPE_CHECKING:  # SSH (paramiko) is imported only by a worker whose client runs on a host
    from failsafe.hosts.remote_child import RemoteChild
    from failsafe.workloads.verifiable.on_host import OnHost

# What the pool sends a verifiable client's worker to crash its client (pool.kill): a real-time signal nothing else uses
# (SIGUSR1 tells a transactional worker it was superseded, SIGUSR2 asks for stacks and HotSpot uses it).
CRASH_SIGNAL: int = signal.SIGRTMIN + 1
# What the lab sends it to freeze its JVM (pause-consumer: SIGSTOP of the JVM) and to let it go on (SIGCONT): a SIGSTOP
# of the worker would leave the JVM running.
FREEZE_SIGNAL: int = signal.SIGRTMIN + 2
THAW_SIGNAL: int = signal.SIGRTMIN + 3


class Crash:
    """What the pool and the lab ask of the JVM, from the worker's signal handlers: ``trigger`` (CRASH_SIGNAL) SIGKILLs
    it at once; ``freeze`` (FREEZE_SIGNAL) and ``thaw`` (THAW_SIGNAL) SIGSTOP and SIGCONT it, and one started while
    frozen is stopped at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.child: Child | RemoteChild | None = None
        self.frozen = False

    def trigger(self) -> None:
        self.event.set()
        if self.child is not None:
            self.child.kill()

    def freeze(self) -> None:
        self.frozen = True
        if self.child is not None:
            self.child.signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.frozen = False
        if self.child is not None:
            self.child.signal(signal.SIGCONT)


# The Java client's own default; VerifiableProducer overrides it with 0 unless told otherwise.
JAVA_DEFAULT_RETRIES = 2_147_483_647
# Below the worker pool's 45 s SIGKILL, so the JVM is stopped (and what it left unreported is
# recorded) by this worker rather than by the pool killing the worker.
DEFAULT_STOP_TIMEOUT_S = 40.0


# -- specs ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VerifiableProducerSpec(ProducerSpec):
    """A ProducerSpec run by Kafka's VerifiableProducer instead of failsafe's producer.

    Values are ``{value_prefix}.{seq}`` (the tool's format; ``value_prefix`` defaults to a hash of
    the process name, so each producer's values are unique across the run), keys ``0`` ..
    ``{keys-1}`` in turn. The tool sets ``retries=0``, which also turns idempotence off; here
    ``retries`` None means the Java client's default and ``idempotence`` None means on for
    acks=all, as for failsafe's producer. ``retries = 0`` gives the tool's own behaviour.
    ``properties`` are Java producer configs, passed with ``--producer.config``.
    """

    KIND: ClassVar[str] = "verifiable-producer"

    value_prefix: int | None = None
    kafka_version: str = DEFAULT_KAFKA_VERSION
    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S
    host: dict | None = (
        None  # run on a host (workloads/verifiable/on_host.py): cluster/nodes/hosts.py client_host's dict; None: here
    )

    def __post_init__(self) -> None:
        if self.acks not in ("all", "-1", "1", "0"):
            raise UserError(f"{self.process}: acks = {self.acks!r}: the VerifiableProducer takes all, 1 or 0")
        if self.record_size:
            raise UserError(
                f"{self.process}: record_size = {self.record_size}: the VerifiableProducer cannot pad its values; use 0"
            )
        if self.value_prefix is not None and not 0 <= self.value_prefix < 2**31:
            raise UserError(f"{self.process}: value_prefix = {self.value_prefix}: must be a Java int >= 0")
        if self.idempotence and self.acks not in ("all", "-1"):
            raise UserError(f"{self.process}: idempotence = true needs acks = all, not {self.acks!r}")
        if self.idempotence and self.retries == 0:
            raise UserError(f"{self.process}: idempotence = true needs retries > 0")

    @property
    def prefix(self) -> int:
        if self.value_prefix is not None:
            return self.value_prefix
        return zlib.crc32(self.process.encode()) & 0x7FFFFFFF

    def java_properties(self) -> dict[str, str]:
        """The --producer.config file's contents (acks travels as --acks)."""
        retries = self.retries if self.retries is not None else JAVA_DEFAULT_RETRIES
        # Idempotence with retries=0 is a ConfigException in the Java client: off, as it would be.
        idempotent = self.idempotence if self.idempotence is not None else self.acks in ("all", "-1") and retries > 0
        props = {"client.id": self.process, "retries": str(retries), "enable.idempotence": str(idempotent).lower()}
        if self.linger_ms is not None:
            props["linger.ms"] = str(self.linger_ms)
        if self.delivery_timeout_ms is not None:
            props["delivery.timeout.ms"] = str(self.delivery_timeout_ms)
        props.update({k: str(v) for k, v in self.properties.items()})
        return props

    def effective_properties(self) -> dict[str, str]:
        """What the Java client is given: the config file and the command line's acks."""
        return {"acks": java_acks(self.acks), **self.java_properties()}


@dataclass(frozen=True)
class VerifiableConsumerSpec(ConsumerSpec):
    """A ConsumerSpec run by Kafka's VerifiableConsumer: one topic, always in a group.

    Without ``auto_commit`` the tool commits synchronously after every poll and reports each
    commit; with it, the client commits in the background and no commit is recorded.
    ``verbose`` makes the tool print every record; without it only offset ranges are known, and
    the history loader takes keys and values from the log read after the run.
    ``properties`` are Java consumer configs, passed with ``--consumer.config``.
    """

    KIND: ClassVar[str] = "verifiable-consumer"

    count: int | None = None
    auto_commit: bool = False
    verbose: bool = True
    group_protocol: str | None = None
    assignment_strategy: str | None = None
    remote_assignor: str | None = None
    kafka_version: str = DEFAULT_KAFKA_VERSION
    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S
    host: dict | None = None  # as VerifiableProducerSpec's

    def __post_init__(self) -> None:
        if len(self.topics) != 1:
            raise UserError(
                f"{self.process}: topics = {list(self.topics)}: the VerifiableConsumer reads exactly one topic"
            )
        if not self.group:
            raise UserError(f"{self.process}: group is required: the VerifiableConsumer always joins a consumer group")

    def java_properties(self) -> dict[str, str]:
        props = {"client.id": self.process}
        if self.auto_commit:
            props["auto.commit.interval.ms"] = str(self.auto_commit_interval_ms)
        props.update({k: str(v) for k, v in self.properties.items()})
        return props

    def effective_properties(self) -> dict[str, str]:
        """What the Java client is given: the config file and the command line's options, by their config names."""
        props = {
            "group.id": str(self.group),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": str(self.auto_commit).lower(),
        }
        if self.session_timeout_ms is not None:
            props["session.timeout.ms"] = str(self.session_timeout_ms)
        props.update(group_properties(self.group_protocol, self.assignment_strategy, self.remote_assignor))
        return {**props, **self.java_properties()}


VerifiableSpec = VerifiableProducerSpec | VerifiableConsumerSpec | VerifiableShareConsumerSpec
VERIFIABLE_KINDS: dict[
    str, type[VerifiableProducerSpec] | type[VerifiableConsumerSpec] | type[VerifiableShareConsumerSpec]
] = {
    VerifiableProducerSpec.KIND: VerifiableProducerSpec,
    VerifiableConsumerSpec.KIND: VerifiableConsumerSpec,
    VerifiableShareConsumerSpec.KIND: VerifiableShareConsumerSpec,
}


def verifiable_spec_from_json(data: dict) -> VerifiableSpec:
    """The spec of a ``spec_to_json`` dict whose kind is verifiable-producer, verifiable-consumer or
    verifiable-share-consumer."""
    data = dict(data)
    cls = VERIFIABLE_KINDS[data.pop("kind")]
    known = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in known}
    if "topics" in values:
        values["topics"] = tuple(values["topics"])
    return cls(**values)


# -- command lines --------------------------------------------------------------------------------
def java_acks(acks: str) -> str:
    """The tool's --acks takes only -1, 1 and 0."""
    return "-1" if acks == "all" else acks


def verifiable_producer_command(
    spec: VerifiableProducerSpec, java: Java, dist: KafkaDist, config_path: Path | None = None
) -> list[str]:
    """The JVM command line; config_path is where java_properties() was written."""
    return tool_command(
        java, dist, main_class(dist, "verifiable-producer"), verifiable_producer_args(spec, config_path)
    )


def verifiable_producer_args(spec: VerifiableProducerSpec, config_path: object = None) -> list[str]:
    throughput = max(1, round(spec.rate_per_s)) if spec.rate_per_s > 0 else -1
    args = [
        "--bootstrap-server",
        spec.bootstrap_servers,
        "--topic",
        spec.topic,
        "--acks",
        java_acks(spec.acks),
        "--value-prefix",
        str(spec.prefix),
        "--throughput",
        str(throughput),
        "--max-messages",
        str(spec.count if spec.count is not None else -1),
    ]
    if spec.keys > 0:
        args += ["--repeating-keys", str(spec.keys)]
    # --producer.config is in every supported Kafka (3.9 has no --command-config); 4.x prints a
    # deprecation notice for it on stdout, which parse_event skips.
    if config_path is not None:
        args += ["--producer.config", str(config_path)]
    return args


def verifiable_consumer_command(
    spec: VerifiableConsumerSpec, java: Java, dist: KafkaDist, config_path: Path | None = None
) -> list[str]:
    """The JVM command line; config_path is where java_properties() was written."""
    return tool_command(
        java, dist, main_class(dist, "verifiable-consumer"), verifiable_consumer_args(spec, config_path)
    )


def verifiable_consumer_args(spec: VerifiableConsumerSpec, config_path: object = None) -> list[str]:
    args = [
        "--bootstrap-server",
        spec.bootstrap_servers,
        "--topic",
        spec.topics[0],
        "--group-id",
        str(spec.group),
        "--reset-policy",
        "earliest",
        "--max-messages",
        str(spec.count if spec.count is not None else -1),
    ]
    if spec.verbose:
        args.append("--verbose")
    if spec.auto_commit:
        args.append("--enable-autocommit")
    if spec.session_timeout_ms is not None:
        args += ["--session-timeout", str(spec.session_timeout_ms)]
    if spec.group_protocol is not None:
        args += ["--group-protocol", spec.group_protocol]
    if spec.assignment_strategy is not None:
        args += ["--assignment-strategy", spec.assignment_strategy]
    if spec.remote_assignor is not None:
        args += ["--group-remote-assignor", spec.remote_assignor]
    if config_path is not None:
        args += ["--consumer.config", str(config_path)]
    return args


def properties_text(props: dict[str, str]) -> str:
    """A Java .properties file: backslash, separators and line breaks escaped."""

    def escape(text: str, is_key: bool) -> str:
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        if is_key:
            for ch in "=: #!":
                text = text.replace(ch, "\\" + ch)
        return text

    return "".join(f"{escape(k, True)}={escape(v, False)}\n" for k, v in props.items())


# -- running --------------------------------------------------------------------------------------
def _write(out: OpWriter, op: dict) -> None:
    fields = {k: v for k, v in op.items() if k not in ("type", "f")}
    # OpWriter stamps time_ns and process first; these fields replace their values in place.
    out.op(op["type"], op["f"], **fields)


def run_verifiable(
    spec: VerifiableSpec,
    out: OpWriter,
    stop: threading.Event,
    *,
    java: Java | None = None,
    dist: KafkaDist | None = None,
    crash: Crash | None = None,
    on_host: OnHost | None = None,
) -> int:
    """Run the tool until it ends or ``stop`` is set; returns its exit code.

    The JVM gets SIGTERM when ``stop`` is set (its shutdown hook closes the client, which reports
    what was in flight) and SIGKILL after ``stop_timeout_s``; it is never left running.
    ``crash`` set (the pool's kill: CRASH_SIGNAL): SIGKILL of the JVM at once, and what it had
    printed is still read to its end and recorded (a kill of this process would lose the lines
    not yet translated: a read the JVM reported, then committed, missing from the history).
    Raises WorkloadFailed, after recording what it printed, when it ended without being asked.
    ``on_host``: the tool runs on that host (workloads/verifiable/on_host.py), its times moved onto failsafe's clock.
    """
    crash = crash or Crash()
    java = java or find_java()
    dist = dist or kafka_dist(spec.kafka_version)
    state = ProducerState(spec.topic, spec.prefix, spec.keys) if isinstance(spec, VerifiableProducerSpec) else None

    share = ShareEvents(spec.process, spec.group) if isinstance(spec, VerifiableShareConsumerSpec) else None

    def translate(event: dict) -> list[dict]:
        if on_host is not None and isinstance(event.get("timestamp"), int):
            event["timestamp_ns"] = on_host.local_time_ns(event["timestamp"])
        if state is not None:
            return producer_event_to_ops(event, spec.process, state)
        if share is not None:
            return share(event)
        return consumer_event_to_ops(event, spec.process, spec.group, verbose=spec.verbose)

    with tempfile.TemporaryDirectory(prefix="failsafe-verifiable-") as tmp:
        child = _start(spec, java, dist, Path(tmp), on_host)
        crash.child = child
        if crash.event.is_set():
            child.kill()  # asked before the JVM was there
        elif crash.frozen:
            child.signal(signal.SIGSTOP)
        killed = threading.Event()
        stopper = threading.Thread(
            target=_stop_when_asked,
            args=(child, stop, killed, spec.stop_timeout_s, crash.event),
            name=f"stop-{spec.process}",
            daemon=True,
        )
        stopper.start()
        stdout = child.stdout if on_host is not None else child.popen.stdout  # type: ignore[union-attr]
        assert stdout is not None
        try:
            pending = b""
            # Chunks as they come, the ops of each flushed before the next read can block: the
            # history stays as current as the tool's stdout, whose poll lines precede its commits.
            while chunk := stdout.read1(1 << 16):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    _translate_line(line, translate, out, spec.process)
                out.flush()
            _translate_line(pending, translate, out, spec.process)
            # Its stdout is closed, so the JVM is on its way out: give it the time to get there.
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(spec.stop_timeout_s)
        finally:
            if child.running():
                killed.set()
                child.kill()
            returncode = child.wait(spec.stop_timeout_s)
            stopper.join()
            stdout.close()
            if on_host is not None:
                child.close()  # type: ignore[union-attr]
            if state is not None:
                for op in producer_stopped_ops(state, spec.process):
                    _write(out, op)
            if share is not None:
                for op in share.stopped_ops():
                    _write(out, op)
            if killed.is_set():
                group = (
                    {"group": spec.group}
                    if isinstance(spec, VerifiableConsumerSpec | VerifiableShareConsumerSpec)
                    else {}
                )
                out.op(OpType.INFO, Op.CRASH, **group, error=f"did not stop within {spec.stop_timeout_s:g}s of SIGTERM")
            out.flush()
    if (
        not stop.is_set()
        and not crash.event.is_set()
        and not (getattr(spec, "count", None) is not None and returncode == 0)
    ):
        detail = child.tail() or "no output on stderr"
        raise WorkloadFailed(
            f"{spec.process}: Kafka's {spec.KIND} exited with code {returncode} without being stopped: {detail}"
        )
    return returncode


def _start(spec: VerifiableSpec, java: Java, dist: KafkaDist, tmp: Path, on_host: OnHost | None) -> Child | RemoteChild:
    """The tool started, here or on its host, its config file written beside it. Its own log (log4j to stderr) goes to
    the client log the pool named (the tail for an error is read from it), else it is kept only as that tail."""
    text = properties_text(spec.java_properties())
    name = f"{spec.process} ({spec.KIND})"
    if on_host is not None:
        from failsafe.workloads.verifiable.on_host import CONFIG

        if isinstance(spec, VerifiableShareConsumerSpec):
            raise UserError(f"{spec.process}: a share consumer runs where failsafe runs, not on a host")
        tool = "verifiable-producer" if isinstance(spec, VerifiableProducerSpec) else "verifiable-consumer"
        args = (
            verifiable_producer_args(spec, CONFIG)
            if isinstance(spec, VerifiableProducerSpec)
            else verifiable_consumer_args(spec, CONFIG)
        )
        return on_host.start(
            main_class(dist, tool),
            args,
            text,
            f"{spec.process}.properties",
            name=name,
            log_path=Path(spec.client_log) if spec.client_log else None,
        )
    # On a secured cluster, with its client user's settings (tools/connections.py): the file is owner-only, in a
    # directory of its own that goes with the client.
    security = security_for(spec.bootstrap_servers)
    if security is not None:
        text = properties_text({**spec.java_properties(), **security.java()})
    config = write_secret(tmp / "client.properties", text.encode())
    if isinstance(spec, VerifiableProducerSpec):
        cmd = verifiable_producer_command(spec, java, dist, config)
    elif isinstance(spec, VerifiableShareConsumerSpec):
        cmd = verifiable_share_consumer_command(spec, java, dist, str(config))
    else:
        cmd = verifiable_consumer_command(spec, java, dist, config)
    if spec.client_log:
        return spawn(cmd, name=name, log_path=Path(spec.client_log), stdout=subprocess.PIPE)
    return spawn(cmd, name=name, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _translate_line(line: bytes, translate: Callable[[dict], list[dict]], out: OpWriter, process: str) -> None:
    event = parse_event(line)
    if event is None:
        return
    try:
        ops = translate(event)
    except (KeyError, TypeError, ValueError) as e:
        # One malformed event must not end the workload: say so, keep reading.
        print(f"{process}: cannot translate {line[:200]!r}: {type(e).__name__}: {e}", file=sys.stderr)
        return
    for op in ops:
        _write(out, op)


def _stop_when_asked(
    child: Child, stop: threading.Event, killed: threading.Event, timeout_s: float, crash: threading.Event
) -> None:
    while not stop.wait(0.1):
        if crash.is_set():
            child.kill()
            return
        if not child.running():
            return
    if not child.running():
        return
    child.signal(signal.SIGTERM)
    try:
        child.wait(timeout_s)
    except subprocess.TimeoutExpired:
        killed.set()
        child.kill()
