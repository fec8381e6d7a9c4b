"""One simulator instance: purchases and restocks to Kafka, every acknowledgement into the ledger.

Runs as a worker process (``python -m failsafe.workloads.sales.simulator SPEC_JSON``) started
by ``run.py``. It prints one JSON line of counters to stdout every few hundred milliseconds and a
last one with ``"done": true``; it stops sending on SIGTERM or when its stdin closes, then
flushes, so what was acknowledged is in the ledger.

Speed: records are produced from a pre-formatted batch in a tight loop; each delivery report
only appends (seq, partition, offset) to flat arrays, which are turned into ledger rows with
numpy a few times a second.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import orjson
from confluent_kafka import KafkaError, Message, Producer

from failsafe.tools.admin import client_config, describe_error
from failsafe.tools.connections import CLIENT
from failsafe.workloads.sales.generator import (
    ACCELERATED,
    BATCH_SIZE,
    ID_AT,
    WALL,
    PurchaseBatch,
    PurchaseStream,
    WallClock,
    records_for,
    sequences_of,
)
from failsafe.workloads.sales.inventory import Inventory, Restock
from failsafe.workloads.sales.ledger import LedgerWriter, malformed_frame, purchases_frame

TOPICS = {"products": "demo.products", "purchases": "demo.purchases", "inventories": "demo.inventories"}
ACKS = ("all", "1", "0")
SLICE = 256  # records between checks of the clock, the stop flag and delivery reports
REPORT_EVERY_S = 0.25
DRAIN_AT = 50_000  # acknowledgements held before they become ledger rows
QUEUE_FULL_POLL_S = 0.05
MAX_PACING_SLEEP_S = 0.05


@dataclass(frozen=True)
class InstanceSpec:
    """What one instance is asked to do; travels to the worker as JSON."""

    instance: int
    seed: int
    start_us: int
    bootstrap_servers: str
    ledger: str
    rate_per_s: float = 0.0  # this instance's share; 0 = as fast as possible
    clock: str = ACCELERATED  # event time: ACCELERATED (the simulated day) or WALL (send time)
    count: int | None = None  # valid purchases to send
    duration_s: float | None = None
    malformed_every: int = 0
    acks: str = "all"
    topics: dict[str, str] = field(default_factory=lambda: dict(TOPICS))
    flush_timeout_s: float = 60.0
    properties: dict[str, str] = field(default_factory=dict)

    def producer_config(self) -> dict[str, object]:
        return client_config(
            self.bootstrap_servers,
            CLIENT,
            **{
                "acks": self.acks,
                # As Kafka's Java producer: idempotence wherever acks allow it.
                "enable.idempotence": self.acks == "all",
                "client.id": f"failsafe-sales-{self.instance:02d}",
                # Java's partitioner: a product lands in the partition a Java producer would choose.
                "partitioner": "murmur2_random",
                # Big batches and a short linger keep the brokers' request rate down when sending as fast as possible.
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "batch.num.messages": 10_000,
                "queue.buffering.max.messages": 200_000,
                **self.properties,
            },
        )


@dataclass
class Counters:
    sent: int = 0  # records handed to the producer (purchases and malformed)
    acknowledged: int = 0  # purchases
    malformed: int = 0  # acknowledged malformed records
    failed: int = 0  # records of the purchases topic whose delivery failed
    restocks: int = 0  # acknowledged restock events (the opening stock included)
    restocks_failed: int = 0
    started_ns: int = 0  # monotonic clock (system-wide on Linux): first purchase sent
    finished_ns: int = 0  # the producer flushed
    last_error: str | None = None


class _Pending:
    """A batch being produced, or produced but not every record acknowledged or failed yet."""

    __slots__ = ("batch", "broken", "produced", "resolved")

    def __init__(self, batch: PurchaseBatch) -> None:
        self.batch = batch
        # The malformed values go to the ledger as sent; the others need not be kept once produced.
        self.broken = {j: batch.values[j] for j in np.flatnonzero(batch.malformed).tolist()}
        self.produced = 0
        self.resolved = 0

    def sent(self) -> None:
        self.batch.values, self.batch.keys = [], []


class AckTracker:
    """Delivery reports in, ledger rows out.

    A purchase's report is handled by one callback for all of them, which reads the transaction
    id from the value (at a fixed position) and keeps it with the partition and offset; the ids
    are turned back into sequence numbers with numpy when the reports are drained. That saves
    a Python object per record over a callback per record. Malformed records have no id to read
    and get a callback of their own (they are few).
    """

    def __init__(self, stream: PurchaseStream, ledger: LedgerWriter, counters: Counters) -> None:
        self.stream, self.ledger, self.counters = stream, ledger, counters
        self.pending: dict[int, _Pending] = {}
        ids, id_partitions, id_offsets, failed_ids = (
            self._ids,
            self._id_partitions,
            self._id_offsets,
            self._failed_ids,
        ) = (array("q"), array("q"), array("q"), array("q"))
        seqs, seq_partitions, seq_offsets, failed_seqs = (
            self._seqs,
            self._seq_partitions,
            self._seq_offsets,
            self._failed_seqs,
        ) = (array("q"), array("q"), array("q"), array("q"))

        add_id, add_partition, add_offset = ids.append, id_partitions.append, id_offsets.append

        def on_purchase(error: KafkaError | None, msg: Message) -> None:
            value = msg.value()
            if error is None:
                add_id(int(value[ID_AT : value.index(34, ID_AT)]))  # 34: the closing quote
                add_partition(msg.partition())
                add_offset(msg.offset())
            else:
                failed_ids.append(int(value[ID_AT : value.index(34, ID_AT)]))
                counters.last_error = describe_error(error)

        def on_malformed(seq: int, error: KafkaError | None, msg: Message) -> None:
            if error is None:
                seqs.append(seq)
                seq_partitions.append(msg.partition())
                seq_offsets.append(msg.offset())
            else:
                failed_seqs.append(seq)
                counters.last_error = describe_error(error)

        self.on_purchase = on_purchase
        self._on_malformed = on_malformed

    def on_malformed(self, seq: int) -> Callable[[KafkaError | None, Message], None]:
        return functools.partial(self._on_malformed, seq)

    def add(self, batch: PurchaseBatch) -> _Pending:
        entry = self.pending[batch.first_seq // BATCH_SIZE] = _Pending(batch)
        return entry

    def held(self) -> int:
        return len(self._ids) + len(self._failed_ids) + len(self._seqs) + len(self._failed_seqs)

    @staticmethod
    def _take(values: array) -> np.ndarray:
        out = np.array(values, dtype=np.int64)
        del values[:]
        return out

    def _sequences(self, ids: array, seqs: array) -> np.ndarray:
        of_ids = (
            sequences_of(self.stream.seed, self.stream.instance, self._take(ids))
            if ids
            else np.empty(0, dtype=np.int64)
        )
        return np.concatenate((of_ids, self._take(seqs)))

    def drain(self, current: _Pending | None) -> None:
        """Turn the acknowledgements so far into ledger rows, and forget finished batches."""
        if self._failed_ids or self._failed_seqs:
            failed = self._sequences(self._failed_ids, self._failed_seqs)
            self.counters.failed += len(failed)
            for key, n in zip(*np.unique(failed // BATCH_SIZE, return_counts=True), strict=True):
                self.pending[int(key)].resolved += int(n)
        if self._ids or self._seqs:
            partitions = np.concatenate((self._take(self._id_partitions), self._take(self._seq_partitions)))
            offsets = np.concatenate((self._take(self._id_offsets), self._take(self._seq_offsets)))
            seqs = self._sequences(self._ids, self._seqs)
            # With acks=0 librdkafka reports no offset (-1001): the ledger says -1.
            offsets[offsets < 0] = -1
            order = np.argsort(seqs, kind="stable")
            seqs, partitions, offsets = seqs[order], partitions[order], offsets[order]
            keys = seqs // BATCH_SIZE
            bounds = (np.flatnonzero(np.diff(keys)) + 1).tolist()
            for lo, hi in zip([0, *bounds], [*bounds, len(seqs)], strict=True):
                self._rows(self.pending[int(keys[lo])], seqs[lo:hi], partitions[lo:hi], offsets[lo:hi])
        for key in [k for k, p in self.pending.items() if p is not current and p.resolved >= p.produced]:
            del self.pending[key]

    def _rows(self, entry: _Pending, seqs: np.ndarray, partitions: np.ndarray, offsets: np.ndarray) -> None:
        b = entry.batch
        at = seqs - b.first_seq
        entry.resolved += len(at)
        bad = b.malformed[at]
        if bad.any():
            self.ledger.add_malformed(
                malformed_frame(
                    partitions[bad].tolist(), offsets[bad].tolist(), [entry.broken[j] for j in at[bad].tolist()]
                )
            )
            self.counters.malformed += int(bad.sum())
            at, partitions, offsets = at[~bad], partitions[~bad], offsets[~bad]
        self.ledger.add_purchases(
            purchases_frame(
                b.transaction_id[at],
                b.time_us[at],
                self.stream.product_ids,
                b.product[at],
                b.quantity[at],
                b.is_member[at],
                b.total_cents[at],
                partitions,
                offsets,
            )
        )
        self.counters.acknowledged += len(at)


class Instance:
    def __init__(
        self,
        spec: InstanceSpec,
        stop: threading.Event,
        report: Callable[[Counters], None],
        logger: object | None = None,
    ) -> None:
        self.spec, self.stop, self.report = spec, stop, report
        self.counters = Counters()
        clock = WallClock(spec.rate_per_s) if spec.clock == WALL else None
        self.stream = PurchaseStream(spec.seed, spec.instance, spec.start_us, spec.malformed_every, clock=clock)
        self.inventory = Inventory(self.stream.product_ids)
        self.ledger = LedgerWriter(Path(spec.ledger), spec.instance)
        self.tracker = AckTracker(self.stream, self.ledger, self.counters)
        config = spec.producer_config()
        # Reports of records produced without a callback of their own (the purchases) go here.
        config["on_delivery"] = self.tracker.on_purchase
        if logger is not None:
            config["logger"] = logger
        self.producer = Producer(config)

    def _on_restock(self, error: KafkaError | None, msg: Message) -> None:
        if error is None:
            self.counters.restocks += 1
        else:
            self.counters.restocks_failed += 1
            self.counters.last_error = describe_error(error)

    def _produce(self, topic: str, value: str, key: str, callback: Callable | None) -> None:
        while True:
            try:
                if callback is None:
                    self.producer.produce(topic, value, key)
                else:
                    self.producer.produce(topic, value, key, on_delivery=callback)
                return
            except BufferError:
                # The local queue is full: serve delivery reports until there is room.
                self.producer.poll(QUEUE_FULL_POLL_S)

    def _produce_some_broken(self, entry: _Pending, start: int, end: int) -> None:
        batch, topic = entry.batch, self.spec.topics["purchases"]
        for j in range(start, end):
            callback = self.tracker.on_malformed(batch.first_seq + j) if j in entry.broken else None
            self._produce(topic, batch.values[j], batch.keys[j], callback)

    def _restock(self, restock: Restock) -> None:
        self._produce(self.spec.topics["inventories"], restock.to_json(), restock.product_id, self._on_restock)

    def run(self) -> bool:
        """Send until done or stopped, then flush; True when nothing was left in flight."""
        spec, counters, tracker = self.spec, self.counters, self.tracker
        produce, poll = self.producer.produce, self.producer.poll
        topic = spec.topics["purchases"]
        target = records_for(spec.count, spec.malformed_every) if spec.count is not None else None
        t0 = time.monotonic()
        deadline = t0 + spec.duration_s if spec.duration_s is not None else None
        next_report = t0
        for restock in self.inventory.opening(spec.start_us):
            self._restock(restock)
        counters.started_ns = time.monotonic_ns()
        entry: _Pending | None = None
        sent = 0
        while not self.stop.is_set() and (target is None or sent < target):
            batch = self.stream.next_batch()
            n = len(batch) if target is None else min(len(batch), target - sent)
            entry = tracker.add(batch)
            quantity = np.where(batch.malformed[:n], 0, batch.quantity[:n])
            restocks = self.inventory.sell(batch.product[:n], quantity, batch.time_us[:n])
            next_restock = 0
            j = 0
            while j < n:
                now = time.monotonic()
                if self.stop.is_set() or (deadline is not None and now >= deadline):
                    self.stop.set()
                    break
                if tracker.held() >= DRAIN_AT or now >= next_report:
                    tracker.drain(entry)
                    if now >= next_report:
                        self.report(counters)
                        next_report = now + REPORT_EVERY_S
                room = SLICE
                if spec.rate_per_s > 0:
                    room = int((now - t0) * spec.rate_per_s) + 1 - sent
                    if room <= 0:
                        # Pacing: wait for the next send's time while serving delivery reports.
                        poll(min((sent + 1) / spec.rate_per_s - (now - t0), MAX_PACING_SLEEP_S))
                        continue
                end = min(n, j + min(room, SLICE))
                if entry.broken:
                    self._produce_some_broken(entry, j, end)
                else:
                    for value, key in zip(batch.values[j:end], batch.keys[j:end], strict=True):
                        try:
                            produce(topic, value, key)
                        except BufferError:
                            self._produce(topic, value, key, None)
                entry.produced += end - j
                sent += end - j
                counters.sent = sent
                while next_restock < len(restocks) and restocks[next_restock][0] < end:
                    self._restock(restocks[next_restock][1])
                    next_restock += 1
                j = end
                if j == n:
                    entry.sent()
                poll(0)
        left = self.producer.flush(spec.flush_timeout_s)
        counters.finished_ns = time.monotonic_ns()
        tracker.drain(None)
        self.ledger.close()
        self.report(counters)
        return left == 0


def _watch_stdin(stop: threading.Event) -> None:
    # os.read, not sys.stdin: a daemon thread blocked in a buffered read aborts the interpreter at exit.
    while os.read(0, 4096):
        pass
    stop.set()


def main(argv: list[str]) -> int:
    spec = InstanceSpec(**orjson.loads(argv[0]))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # Ctrl-C is the parent's to handle: it asks us to stop with SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    # librdkafka's connection chatter while a broker is down is expected: stderr is for real errors.
    logger = logging.getLogger("failsafe.sales.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    out = sys.stdout.buffer

    def report(counters: Counters) -> None:
        out.write(orjson.dumps(asdict(counters)) + b"\n")
        out.flush()

    instance = Instance(spec, stop, report, logger)
    clean = instance.run()
    out.write(orjson.dumps({**asdict(instance.counters), "done": True, "clean": clean}) + b"\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
