"""One transactional producer's transactions, each recorded as it happened: begun, written, ended, and how it ended.

The outcome rule is Jepsen's: ``fail`` only when the transaction certainly did not commit. That is so
for an abort that returned, and for an error before the commit was asked for once the abort returned.
Once ``commit_transaction`` has been called, any error leaves the outcome unknown (``info``): the
EndTxn may already be on its way, and KAFKA-17754 (a late EndTxn landing on a later transaction of the
same epoch) is exactly why an abort after a failed commit proves nothing. A commit that times out is
retried (librdkafka: "resumable"), never followed by an abort; when the retries run out, or on any
error that is neither retriable nor abortable, the producer is replaced by a new one with the same
``transactional.id``, whose ``init_transactions`` fences the old one and finishes its transaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from failsafe.errors import FailsafeError
from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.tools.connections import secured
from failsafe.workloads.outcomes import error_name, send_outcome

INIT_TIMEOUT_S = 10.0
_POLL_S = 0.05
# Only a newer instance with the same transactional.id fences this one. INVALID_PRODUCER_EPOCH is not that: the
# coordinator also bumps the epoch when it aborts a transaction that ran past transaction.timeout.ms (KIP-588); the
# producer is then replaced like after any other error, and a real zombie is told _FENCED or PRODUCER_FENCED.
_FENCED = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED})
# What a superseded instance hears when Kafka turns it away: its epoch is older than the newer instance's.
_STALE_EPOCH = _FENCED | {KafkaError.INVALID_PRODUCER_EPOCH}


class Fenced(FailsafeError):
    """Another producer with the same transactional.id took over: this one must stop (a zombie)."""


# Set in a worker that a newer instance of its client superseded (the workload signals it: workloads/worker.py).
# librdkafka says _FENCED both to a zombie and to a producer whose transaction its coordinator aborted on timeout
# (INVALID_PRODUCER_EPOCH, normalized): only a superseded worker stops; any other replaces its producer, as an
# application would.
SUPERSEDED = threading.Event()


def kafka_error(e: KafkaException) -> KafkaError:
    return e.args[0]


class TxnSession:
    """The producer of one transactional worker, with its transactions numbered 0, 1, 2... in its history."""

    def __init__(
        self, config: dict[str, object], out: OpWriter, stop: threading.Event, commit_timeout_s: float
    ) -> None:
        self.config = config
        self.transactional_id = str(config["transactional.id"])
        self.out = out
        self.stop = stop
        self.commit_timeout_s = commit_timeout_s
        self.producer: Producer | None = None
        self.in_flight: dict[int, tuple[str, str | None, str, int]] = {}
        self.txn = -1
        self.send_id = 0
        self.txn_writes = 0

    # -- the producer ---------------------------------------------------------------------------------
    def open(self) -> None:
        """A new producer, its transactions initialised (retried while the coordinator cannot be reached)."""
        if SUPERSEDED.is_set():
            raise Fenced(
                f"{self.transactional_id} was superseded: no new producer, which would fence the newer instance"
            )
        try:
            self.producer = Producer(secured(self.config))
        except KafkaException as e:
            raise FailsafeError(
                f"{self.transactional_id}: librdkafka refused the producer's settings: {kafka_error(e).str()}"
            ) from None
        while True:
            try:
                self.producer.init_transactions(INIT_TIMEOUT_S)
                return
            except KafkaException as e:
                error = kafka_error(e)
                if error.code() in _FENCED and SUPERSEDED.is_set():
                    raise Fenced(f"init_transactions: {error_name(error)}") from None
                if not error.retriable() or self.stop.is_set():
                    raise FailsafeError(
                        f"init_transactions of {self.transactional_id}: {error_name(error)}: {error.str()}"
                    ) from None

    def replace(self) -> None:
        """Drop this producer (its outstanding writes reported unknown) and open a new one with the same
        transactional.id."""
        self._drop()
        self.open()

    def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        if self.producer is not None:
            try:
                self.producer.poll(0)  # the delivery reports still waiting
            except KafkaException:
                pass  # a fatal error (fenced): poll raises it again; the producer is dropped all the same
            self.producer = None
        for send_id, (topic, key, value, txn) in sorted(self.in_flight.items()):
            self.out.op(
                OpType.INFO,
                Op.SEND,
                id=send_id,
                topic=topic,
                key=key,
                value=value,
                txn=txn,
                error="PRODUCER_CLOSED_IN_FLIGHT",
            )
        self.in_flight.clear()
        self.out.flush()

    # -- one transaction ------------------------------------------------------------------------------
    def begin(self) -> int:
        self.txn += 1
        self.txn_writes = 0
        self.out.op(OpType.INVOKE, Op.TXN, txn=self.txn, transactional_id=self.transactional_id)
        try:
            self._producer().begin_transaction()
        except KafkaException as e:
            self._complete(OpType.FAIL, kafka_error(e))
            self._fatal_or_replace(kafka_error(e))
            raise
        return self.txn

    def produce(self, topic: str, key: str | None, value: str) -> None:
        """One write of the open transaction, recorded as a send with its txn; raises KafkaException when the producer
        refuses it."""
        send_id, txn = self.send_id, self.txn
        self.send_id += 1
        self.in_flight[send_id] = (topic, key, value, txn)
        self.out.op(OpType.INVOKE, Op.SEND, id=send_id, topic=topic, key=key, value=value, txn=txn)
        producer = self._producer()
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=self._reporter(send_id))
                break
            except BufferError:
                if self.stop.is_set():
                    raise KafkaException(
                        KafkaError(KafkaError._QUEUE_FULL, "stopped while the producer's queue was full")
                    ) from None
                producer.poll(_POLL_S)
            except KafkaException as e:
                self.in_flight.pop(send_id, None)
                self.out.op(
                    OpType.FAIL,
                    Op.SEND,
                    id=send_id,
                    topic=topic,
                    key=key,
                    value=value,
                    txn=txn,
                    error=error_name(kafka_error(e)),
                )
                raise
        self.txn_writes += 1
        if self.txn_writes == 1:
            # Down the pipe now: a client fault waits for a transaction with a write in it (faults/transactions.py).
            self.out.flush()
        producer.poll(0)

    def _reporter(self, send_id: int) -> Callable[[KafkaError | None, Message], None]:
        def report(error: KafkaError | None, msg: Message) -> None:
            entry = self.in_flight.pop(send_id, None)
            if entry is None:
                return
            topic, key, value, txn = entry
            if error is None:
                offset = msg.offset()
                self.out.op(
                    OpType.OK,
                    Op.SEND,
                    id=send_id,
                    topic=topic,
                    partition=msg.partition(),
                    offset=None if offset is None or offset < 0 else offset,
                    key=key,
                    value=value,
                    txn=txn,
                )
            else:
                partition = msg.partition() if msg.partition() is not None and msg.partition() >= 0 else None
                self.out.op(
                    send_outcome(error),
                    Op.SEND,
                    id=send_id,
                    topic=topic,
                    partition=partition,
                    key=key,
                    value=value,
                    txn=txn,
                    error=error_name(error),
                )

        return report

    def abort(self, error: KafkaError | None = None) -> str:
        """Abort the open transaction (on purpose, or after ``error`` before any commit): fail once the abort
        returned."""
        self.out.op(OpType.INVOKE, Op.TXN_END, txn=self.txn, end="abort")
        self.out.flush()
        try:
            self._producer().abort_transaction(self._remaining(time.monotonic() + self.commit_timeout_s))
        except KafkaException as e:
            self._complete(OpType.INFO, kafka_error(e))
            self._fatal_or_replace(kafka_error(e))
            return OpType.INFO
        self._complete(OpType.FAIL, error)
        return OpType.FAIL

    def commit(self, offsets: list[TopicPartition] | None = None, group_metadata: object | None = None) -> str:
        """Commit the open transaction (with a consumer's offsets when given): ok, fail or info, as the module says."""
        producer = self._producer()
        deadline = time.monotonic() + self.commit_timeout_s
        if offsets:
            try:
                producer.send_offsets_to_transaction(offsets, group_metadata, self._remaining(deadline))
            except KafkaException as e:
                error = kafka_error(e)
                if error.code() in _FENCED or error.fatal():
                    self._complete(OpType.INFO, error)
                    self._fatal_or_replace(error)
                    return OpType.INFO
                # Nothing was asked to commit yet: an abort that returns proves the transaction did not commit.
                return self.abort(error)
        self.out.op(
            OpType.INVOKE,
            Op.TXN_END,
            txn=self.txn,
            end="commit",
            offsets=[{"topic": tp.topic, "partition": tp.partition, "offset": tp.offset} for tp in offsets or ()]
            or None,
        )
        self.out.flush()
        while True:
            try:
                producer.commit_transaction(self._remaining(deadline))
                self._flush_reports()
                self._complete(OpType.OK, None)
                return OpType.OK
            except KafkaException as e:
                error = kafka_error(e)
                if error.retriable() and time.monotonic() < deadline and not self.stop.is_set():
                    continue
                self._complete(OpType.INFO, error)
                # Even when librdkafka says the transaction requires an abort: the EndTxn(commit) may be on its way, and
                # an abort sent after it is KAFKA-17754's pattern. A new producer's init_transactions finishes it
                # instead.
                del producer
                self._fatal_or_replace(error)
                return OpType.INFO

    # -- helpers --------------------------------------------------------------------------------------
    def _complete(self, outcome: str, error: KafkaError | None) -> None:
        self.out.op(
            outcome,
            Op.TXN,
            txn=self.txn,
            transactional_id=self.transactional_id,
            error=None if error is None else error_name(error),
        )
        self.out.flush()

    def _fatal_or_replace(self, error: KafkaError) -> None:
        if SUPERSEDED.is_set():
            # A newer instance holds the id: a new producer of this one would fence it and take the id back (the zombie
            # returning that fencing exists to stop). Whatever the error, a superseded worker stops.
            what = "was fenced" if error.code() in _STALE_EPOCH else "was superseded"
            raise Fenced(f"{self.transactional_id} {what}: {error_name(error)}")
        self.replace()

    def _flush_reports(self) -> None:
        # A commit that returned delivered every write of the transaction: their reports wait to be served.
        self._producer().poll(0)

    def _remaining(self, deadline: float) -> float:
        return max(0.1, deadline - time.monotonic())

    def _producer(self) -> Producer:
        assert self.producer is not None, "open() first"
        return self.producer
