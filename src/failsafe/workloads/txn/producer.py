"""The transactional producer: random multi-topic, multi-partition transactions, most committed, some aborted on
purpose."""

from __future__ import annotations

import random
import threading
import time

from confluent_kafka import KafkaException

from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.workloads.producer import value_for
from failsafe.workloads.txn.session import Fenced, TxnSession, kafka_error
from failsafe.workloads.txn.specs import TxnProducerSpec


def run_txn_producer(spec: TxnProducerSpec, out: OpWriter, stop: threading.Event, logger: object | None = None) -> int:
    """Write transactions until ``stop`` is set or ``count`` were begun; returns how many were begun."""
    config = spec.producer_config()
    if logger is not None:
        config["logger"] = logger
    rng = random.Random(f"{spec.seed}:{spec.process}")
    session = TxnSession(config, out, stop, spec.commit_timeout_s)
    interval_s = 1.0 / spec.rate_per_s if spec.rate_per_s > 0 else 0.0
    next_at = time.monotonic()
    seq = 0
    begun = 0
    try:
        session.open()
        while not stop.is_set() and (spec.count is None or begun < spec.count):
            if interval_s:
                if stop.wait(max(0.0, next_at - time.monotonic())):
                    break
                next_at += interval_s
            try:
                session.begin()
            except KafkaException:
                continue
            begun += 1
            try:
                for _ in range(rng.randint(spec.min_writes, spec.max_writes)):
                    key = f"k{rng.randrange(spec.keys)}" if spec.keys > 0 else None
                    seq += 1  # before the write: a value refused once is never written again by a later one
                    session.produce(rng.choice(spec.topics), key, value_for(spec.process, seq - 1, 0))
            except KafkaException as e:
                # The producer refused a write (an abortable state): nothing was asked to commit.
                session.abort(kafka_error(e))
                continue
            if rng.random() < spec.abort_probability:
                session.abort()
            else:
                session.commit()
    except Fenced as e:
        out.op(OpType.INFO, Op.CLOSE, error=str(e))
        out.flush()
        return begun
    finally:
        session.close()
    out.op(OpType.INFO, Op.CLOSE)
    out.flush()
    return begun
