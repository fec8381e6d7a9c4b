"""Workload worker processes: started, watched, stopped politely or killed, their ops copied into the history.

Each worker is a child of the run's supervisor: its own session, dies with us, its stderr (the
client library's complaints, a traceback) in ``logs/<process>.log`` of the run directory, and
the client library's own log (librdkafka's debug lines, the Java tools' log4j) in
``logs/<process>.client.log``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from failsafe.errors import WorkloadFailed
from failsafe.history.ops import Op, OpType, op
from failsafe.history.recorder import Recorder
from failsafe.supervisor import Child, Supervisor
from failsafe.waiting import WaitTimeout, wait_until
from failsafe.workloads.client_defaults import ClientDefaults
from failsafe.workloads.share.consumer import SETTLING, ShareConsumerSpec
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec, spec_to_json
from failsafe.workloads.stacks import STACKS_SIGNAL, crash_reason, runs_python, stuck_at
from failsafe.workloads.txn.specs import TxnSpec
from failsafe.workloads.verifiable.clients import CRASH_SIGNAL, VerifiableSpec

STOP_TIMEOUT_S = 45.0
CRASH_TIMEOUT_S = 10.0  # how long a verifiable client's worker is given to kill its JVM and record what it printed
STACKS_TIMEOUT_S = 5.0  # how long a worker that did not stop is given to dump its stacks before it is killed
# A producer's lines are counted by cheap byte tests, never parsed twice: OpWriter writes "type" then "f".
_INVOKE = f'"type":"{OpType.INVOKE}"'.encode()
_SEND_OK, _SEND_FAIL, _SEND_INFO = (
    f'"type":"{t}","f":"{Op.SEND}"'.encode() for t in (OpType.OK, OpType.FAIL, OpType.INFO)
)


@dataclass
class Counters:
    """What the progress display shows; updated by the pipe readers."""

    sends: int = 0
    acked: int = 0
    failed: int = 0
    unknown: int = 0
    records_read: int = 0

    def line(self) -> str:
        return (
            f"sent {self.sends} · acked {self.acked} · failed {self.failed} · unknown {self.unknown} · read "
            f"{self.records_read}"
        )


@dataclass
class Worker:
    spec: ProducerSpec | ConsumerSpec | TxnSpec | ShareConsumerSpec
    child: Child
    reader: threading.Thread
    # Highest offset read, per (topic, partition): what the drain phase waits on.
    read_upto: dict[tuple[str, int], int] = field(default_factory=dict)
    assigned: set[tuple[str, int]] = field(default_factory=set)
    acked: int = 0
    crashed: bool = False
    # Asked to stop or killed on purpose: its exit is no failure of the workload.
    expected_exit: bool = False
    # A transactional worker's transactions by how they ended (ok, fail, info), and whether one is open now with a write
    # in it.
    txn_outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    txn_open: bool = False
    txn_written: bool = False
    # A share consumer's records whose accept or reject the broker took, per (topic, partition): what its drain waits
    # on.
    settled: dict[tuple[str, int], set[int]] = field(default_factory=lambda: defaultdict(set))
    # A share consumer's records acquired and not yet acknowledged (no acknowledgement of them sent): what it holds now.
    holding: set[tuple[str, int, int]] = field(default_factory=set)

    @property
    def process(self) -> str:
        return self.spec.process

    @property
    def group(self) -> str | None:
        return getattr(self.spec, "group", None)

    def alive(self) -> bool:
        return self.child.running()


class WorkerPool:
    """Every worker process a run starts, so every one of them is stopped."""

    def __init__(
        self, recorder: Recorder, supervisor: Supervisor, logs_dir: Path, client_defaults: ClientDefaults | None = None
    ) -> None:
        self.recorder = recorder
        self.supervisor = supervisor
        self.logs_dir = logs_dir
        # The cluster profile's client settings (workloads/client_defaults.py), given to every client under its own.
        self.client_defaults = client_defaults or ClientDefaults()
        self.counters = Counters()
        self.workers: dict[str, Worker] = {}

    # -- starting -------------------------------------------------------------------------------
    def start(self, spec: ProducerSpec | ConsumerSpec | TxnSpec | ShareConsumerSpec) -> Worker:
        spec = self.client_defaults.apply(spec)
        if not spec.client_log:
            spec = replace(spec, client_log=str(self.logs_dir / f"{spec.process}.client.log"))
        child = self.supervisor.spawn(
            [sys.executable, "-m", "failsafe.workloads.worker", orjson.dumps(spec_to_json(spec)).decode()],
            name=spec.process,
            log_path=self.logs_dir / f"{spec.process}.log",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        worker = Worker(spec, child, threading.Thread())
        worker.reader = threading.Thread(target=self._copy_ops, args=(worker,), name=f"ops-{spec.process}", daemon=True)
        worker.reader.start()
        self.workers[spec.process] = worker
        return worker

    def _copy_ops(self, worker: Worker) -> None:
        record = self.recorder.write_line
        counters = self.counters
        is_producer = isinstance(worker.spec, ProducerSpec)
        for line in worker.child.popen.stdout:  # type: ignore[union-attr]
            record(line)
            if is_producer:
                # Cheap byte tests keep the producer's lines from being parsed twice.
                if _INVOKE in line:
                    counters.sends += 1
                elif _SEND_OK in line:
                    counters.acked += 1
                    worker.acked += 1
                elif _SEND_FAIL in line:
                    counters.failed += 1
                elif _SEND_INFO in line:
                    counters.unknown += 1
                continue
            entry = orjson.loads(line)
            f = entry.get("f")
            if f in (Op.POLL, Op.SHARE_POLL) and entry.get("type") == OpType.OK:
                upto = worker.read_upto
                for r in entry["records"]:
                    tp = (r["topic"], r["partition"])
                    if r["offset"] > upto.get(tp, -1):
                        upto[tp] = r["offset"]
                    if f == Op.SHARE_POLL:
                        worker.holding.add((r["topic"], r["partition"], r["offset"]))
                counters.records_read += len(entry["records"])
            elif f == Op.SHARE_ACK and entry.get("type") == OpType.INVOKE:
                worker.holding -= {(a["topic"], a["partition"], a["offset"]) for a in entry["acks"]}
            elif f == Op.TXN:
                worker.txn_open = entry.get("type") == OpType.INVOKE
                worker.txn_written = False
                if not worker.txn_open:
                    worker.txn_outcomes[entry["type"]] += 1
            elif f == Op.SEND and worker.txn_open:
                worker.txn_written = True
            elif f == Op.SHARE_ACK and entry.get("type") == OpType.OK:
                for a in entry["acks"]:
                    if a["ack"] in SETTLING:
                        worker.settled[(a["topic"], a["partition"])].add(a["offset"])
            elif f == Op.ASSIGN:
                worker.assigned |= {(p["topic"], p["partition"]) for p in entry["partitions"]}
            elif f == Op.REVOKE:
                worker.assigned -= {(p["topic"], p["partition"]) for p in entry["partitions"]}

    # -- looking --------------------------------------------------------------------------------
    def producers(self) -> list[Worker]:
        return [w for w in self.workers.values() if isinstance(w.spec, ProducerSpec)]

    def consumers(self) -> list[Worker]:
        return [w for w in self.workers.values() if isinstance(w.spec, ConsumerSpec)]

    def share_consumers(self) -> list[Worker]:
        return [w for w in self.workers.values() if isinstance(w.spec, ShareConsumerSpec)]

    def settled_by_group(self) -> dict[str, dict[tuple[str, int], set[int]]]:
        """Per share group, the offsets of each partition whose accept or reject the broker took."""
        out: dict[str, dict[tuple[str, int], set[int]]] = defaultdict(lambda: defaultdict(set))
        for w in self.share_consumers():
            for tp, offsets in list(w.settled.items()):
                out[w.spec.group][tp] |= offsets
        return out

    def live_consumers(self) -> list[Worker]:
        return [w for w in self.consumers() if w.alive()]

    def assigned_by_group(self) -> dict[str | None, set[tuple[str, int]]]:
        out: dict[str | None, set[tuple[str, int]]] = defaultdict(set)
        for w in self.live_consumers():
            out[w.group] |= w.assigned
        return out

    def read_upto_by_group(self) -> dict[str, dict[tuple[str, int], int]]:
        """Per group (manual consumers by their process name), the highest offset read of each partition."""
        out: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)
        for w in self.consumers():
            merged = out[w.group or w.process]
            for tp, offset in list(w.read_upto.items()):
                merged[tp] = max(merged.get(tp, -1), offset)
        return out

    def check_alive(self, workers: list[Worker]) -> None:
        """Raise when a worker died on its own: its stderr says why."""
        for w in workers:
            if not w.alive() and not w.expected_exit:
                tail = self._crash_reason(w) or w.child.tail() or "no output"
                raise WorkloadFailed(
                    f"{w.process} exited with code {w.child.exit_code()} while the scenario ran: {tail} "
                    f"(log: {w.child.log_path})"
                )

    # -- stopping -------------------------------------------------------------------------------
    def kill(self, process: str) -> None:
        """SIGKILL a worker (a crash, not a close) and record that it crashed. A worker running Kafka's verifiable
        client kills its JVM itself (CRASH_SIGNAL) and records what the JVM had printed before it exits: killed with it,
        the lines it had not yet translated would be lost."""
        worker = self.workers[process]
        worker.crashed = worker.expected_exit = True
        if isinstance(worker.spec, VerifiableSpec) and worker.alive():
            worker.child.signal(CRASH_SIGNAL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.child.wait(CRASH_TIMEOUT_S)
        worker.child.kill(STOP_TIMEOUT_S)
        worker.reader.join(STOP_TIMEOUT_S)
        self.recorder.record(op(Op.CRASH, process=process))

    @staticmethod
    def _crash_reason(w: Worker) -> str | None:
        """A crash faulthandler caught, from the worker's log (its own last lines would be the dumped frames)."""
        try:
            return crash_reason(Path(w.child.log_path).read_text(errors="replace")) if w.child.log_path else None
        except OSError:
            return None

    def _stuck_at(self, w: Worker) -> str | None:
        """A Python worker's main thread's innermost frames, dumped by faulthandler on STACKS_SIGNAL into its log."""
        if not runs_python(w.spec) or not w.alive():
            return None
        log = Path(w.child.log_path)
        start = log.stat().st_size if log.is_file() else 0

        def dumped() -> tuple[str | None] | None:
            try:
                with open(log, "rb") as f:
                    f.seek(start)
                    where = stuck_at(f.read().decode(errors="replace"))
            except OSError:
                where = None
            # A worker that died meanwhile has nothing more to write: stop waiting.
            return (where,) if where is not None or not w.alive() else None

        w.child.signal(STACKS_SIGNAL)
        try:
            return wait_until(dumped, STACKS_TIMEOUT_S, "")[0]
        except WaitTimeout:
            return None

    def stop(self, workers: list[Worker], timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM: producers flush and record what is still in flight; consumers close and leave their group."""
        live = [w for w in workers if w.alive()]
        for w in live:
            w.expected_exit = True
            w.child.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for w in live:
            try:
                w.child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.crashed = True
                where = self._stuck_at(w)
                w.child.kill(STOP_TIMEOUT_S)
                self.recorder.record(
                    op(
                        Op.CRASH,
                        process=w.process,
                        error="did not stop on SIGTERM" + (f"; its main thread was in {where}" if where else ""),
                    )
                )
            w.reader.join(STOP_TIMEOUT_S)

    def stop_all(self) -> None:
        self.stop(self.producers())
        self.stop(self.consumers() + self.share_consumers())

    def wait_all_gone(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        wait_until(lambda: not any(w.alive() for w in self.workers.values()), timeout_s, "workers did not exit")
