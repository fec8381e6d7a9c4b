"""A workload worker process: ``python -m failsafe.workloads.worker SPEC_JSON``.

It writes its ops as JSON lines to stdout and stops cleanly on SIGTERM or when stdin closes
(the runner went away). The runner kills it with SIGKILL to simulate a crash. A transactional
worker with ``driver = "kafka-java"`` writes its client-config op, then becomes failsafe's Java
driver (workloads/txn/java.py), which writes the rest and stops the same way.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import confluent_kafka
import orjson

from failsafe.errors import FailsafeError
from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.tools import connections
from failsafe.workloads.consumer import run_consumer
from failsafe.workloads.producer import run_producer
from failsafe.workloads.share.consumer import ShareConsumerSpec, run_share_consumer, share_spec_from_json
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec, spec_from_json
from failsafe.workloads.stacks import STACKS_SIGNAL, runs_python
from failsafe.workloads.txn.ctp import run_ctp
from failsafe.workloads.txn.java import exec_txn_driver, java_effective_properties
from failsafe.workloads.txn.producer import run_txn_producer
from failsafe.workloads.txn.session import SUPERSEDED
from failsafe.workloads.txn.specs import KAFKA_JAVA, TXN_KINDS, CtpSpec, TxnProducerSpec, TxnSpec, txn_spec_from_json
from failsafe.workloads.verifiable.clients import (
    CRASH_SIGNAL,
    FREEZE_SIGNAL,
    THAW_SIGNAL,
    VERIFIABLE_KINDS,
    Crash,
    VerifiableSpec,
    run_verifiable,
    verifiable_spec_from_json,
)


def _watch_stdin(stop: threading.Event) -> None:
    # os.read on the descriptor, not sys.stdin.buffer: a daemon thread blocked inside the buffered
    # reader holds its lock, and the interpreter then aborts at exit ("Fatal Python error:
    # _enter_buffered_busy"), turning a clean stop into a SIGABRT with a scary line in the log.
    while os.read(sys.stdin.fileno(), 65536):
        pass
    stop.set()


Spec = ProducerSpec | ConsumerSpec | VerifiableSpec | TxnSpec | ShareConsumerSpec


def decode_spec(data: dict) -> Spec:
    kind = data.get("kind")
    if kind in VERIFIABLE_KINDS:
        return verifiable_spec_from_json(data)
    if kind == ShareConsumerSpec.KIND:
        return share_spec_from_json(data)
    return txn_spec_from_json(data) if kind in TXN_KINDS else spec_from_json(data)


def client_config_fields(spec: Spec) -> dict:
    """The fields of the worker's client-config op (docs/history.md): the client library and the settings failsafe gave
    it."""
    if isinstance(spec, VerifiableSpec):
        client, version, config = "kafka-java", spec.kafka_version or None, spec.effective_properties()
    elif _on_java(spec):
        client, version, config = KAFKA_JAVA, spec.kafka_version or None, java_effective_properties(spec)  # type: ignore[arg-type]
    else:
        client, version = "librdkafka", confluent_kafka.libversion()[0]
        if isinstance(spec, CtpSpec):
            # Its consumer's settings (the isolation level its reads were made at) with its producer's.
            config = {**spec.consumer_config(), **spec.producer_config()}
        else:
            config = (
                spec.producer_config() if isinstance(spec, ProducerSpec | TxnProducerSpec) else spec.consumer_config()
            )  # type: ignore[union-attr]
    entries = [
        {"name": name, "value": _property_text(value)}
        for name, value in config.items()
        if name not in ("bootstrap.servers", "logger") and not callable(value)
    ]
    # How it reached a secured cluster (tools/connections.py), without a secret: the protocol, mechanism and user.
    security = connections.security_for(spec.bootstrap_servers)
    if security is not None:
        entries += [{"name": name, "value": value} for name, value in security.described().items()]
    # The pool puts client logs in the run directory's logs/: the op names them relative to the run.
    log = f"{Path(spec.client_log).parent.name}/{Path(spec.client_log).name}" if spec.client_log else None
    return {"client": client, "client_version": version, "config": entries, "log": log}


def _on_host(spec: Spec) -> Any:
    """Where a verifiable client that runs on a host runs (workloads/verifiable/on_host.py; SSH imported only then),
    else None."""
    where = getattr(spec, "host", None) if isinstance(spec, VerifiableSpec) else None
    if where is None:
        return None
    from failsafe.workloads.verifiable.on_host import OnHost

    return OnHost.open(where)


def _on_java(spec: Spec) -> bool:
    return not runs_python(spec)


def _property_text(value: object) -> str:
    # As Kafka's configs spell them: true/false, not Python's True/False.
    return str(value).lower() if isinstance(value, bool) else str(value)


def client_logger(spec: Spec) -> logging.Logger:
    """librdkafka's log: to spec.client_log with timestamps, or discarded when there is none."""
    logger = logging.getLogger("failsafe.worker.librdkafka")
    logger.propagate = False
    handler: logging.Handler
    if spec.client_log:
        handler = logging.FileHandler(spec.client_log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        # librdkafka's debug contexts arrive at DEBUG level: keep them.
        logger.setLevel(logging.DEBUG)
    else:
        # Without a log file, librdkafka's connection-refused chatter while brokers are down is
        # expected: keep stderr for real errors.
        handler = logging.NullHandler()
    logger.addHandler(handler)
    return logger


def main(argv: list[str]) -> int:
    spec = decode_spec(orjson.loads(argv[0]))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # A newer instance of this transactional client took over (faults/transactions.py): a fence from now on means stop.
    signal.signal(signal.SIGUSR1, lambda *_: SUPERSEDED.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _on_java(spec):
        # Asked for by the pool before it kills a worker that did not stop on SIGTERM: where it is stuck (stacks.py);
        # and a crash of the client library (SIGSEGV, SIGABRT) leaves the Python stacks in the worker's log too.
        faulthandler.register(STACKS_SIGNAL, all_threads=True)
        faulthandler.enable(all_threads=True)
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    out = OpWriter(sys.stdout.buffer, spec.process)
    on_host = None
    try:
        on_host = _on_host(spec)
        # First, before any send or poll: what the run's clients were, for every explanation.
        out.op(
            OpType.INFO, Op.CLIENT_CONFIG, **client_config_fields(spec), **(on_host.config_fields() if on_host else {})
        )
        out.flush()
        if isinstance(spec, VerifiableSpec):  # first: they subclass ours
            crash = Crash()
            signal.signal(CRASH_SIGNAL, lambda *_: crash.trigger())
            signal.signal(FREEZE_SIGNAL, lambda *_: crash.freeze())
            signal.signal(THAW_SIGNAL, lambda *_: crash.thaw())
            run_verifiable(spec, out, stop, crash=crash, on_host=on_host)
        elif _on_java(spec):
            # SIGTERM blocked from here on: one that comes before the JVM has its own handler stays pending for it
            # (the mask survives the exec) instead of reaching ours and being lost with this process image.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            if stop.is_set():
                out.op(OpType.INFO, Op.CLOSE, **({"group": spec.group} if isinstance(spec, CtpSpec) else {}))
                out.flush()
                return 0
            exec_txn_driver(spec)  # type: ignore[arg-type]
        elif isinstance(spec, ProducerSpec):
            run_producer(spec, out, stop, client_logger(spec))
        elif isinstance(spec, TxnProducerSpec):
            run_txn_producer(spec, out, stop, client_logger(spec))
        elif isinstance(spec, CtpSpec):
            run_ctp(spec, out, stop, client_logger(spec))
        elif isinstance(spec, ShareConsumerSpec):
            run_share_consumer(spec, out, stop, client_logger(spec))
        else:
            run_consumer(spec, out, stop, client_logger(spec))
    except FailsafeError as e:
        # One line in the worker's log, which the pool quotes when it reports the worker's exit.
        print(f"{spec.process}: {e}", file=sys.stderr)
        return 1
    finally:
        if on_host is not None:
            on_host.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
