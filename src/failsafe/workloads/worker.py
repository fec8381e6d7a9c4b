"""A workload worker process: ``python -m failsafe.workloads.worker SPEC_JSON``.

It writes its ops as JSON lines to stdout and stops cleanly on SIGTERM or when stdin closes
(the runner went away). The runner kills it with SIGKILL to simulate a crash.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

import orjson

from failsafe.errors import FailsafeError
from failsafe.history.recorder import OpWriter
from failsafe.workloads.consumer import run_consumer
from failsafe.workloads.producer import run_producer
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec, spec_from_json
from failsafe.workloads.verifiable import VERIFIABLE_KINDS, VerifiableSpec, run_verifiable, verifiable_spec_from_json


def _watch_stdin(stop: threading.Event) -> None:
    sys.stdin.buffer.read()
    stop.set()


def decode_spec(data: dict) -> ProducerSpec | ConsumerSpec | VerifiableSpec:
    return verifiable_spec_from_json(data) if data.get("kind") in VERIFIABLE_KINDS else spec_from_json(data)


def main(argv: list[str]) -> int:
    spec = decode_spec(orjson.loads(argv[0]))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    # librdkafka's connection-refused chatter while brokers are down is expected: keep stderr for real errors.
    logger = logging.getLogger("failsafe.worker.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    out = OpWriter(sys.stdout.buffer, spec.process)
    try:
        if isinstance(spec, VerifiableSpec):  # first: they subclass ours
            run_verifiable(spec, out, stop)
        elif isinstance(spec, ProducerSpec):
            run_producer(spec, out, stop, logger)
        else:
            run_consumer(spec, out, stop, logger)
    except FailsafeError as e:
        # One line in the worker's log, which the pool quotes when it reports the worker's exit.
        print(f"{spec.process}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
