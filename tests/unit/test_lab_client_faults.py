"""The lab's faults on its consumers: a restart (a new process NAME.N with the same settings, and the faults that follow act
on it), and a freeze (SIGSTOP of failsafe's worker, or of the JVM a worker of Kafka's verifiable clients started)."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

import pytest

from failsafe.faults import FaultError
from failsafe.scenarios.kinds.lab.workload import LabWorkload
from failsafe.scenarios.registry import load_scenario
from failsafe.workloads.pool import WorkerPool
from failsafe.workloads.specs import ConsumerSpec
from failsafe.workloads.verifiable import FREEZE_SIGNAL, THAW_SIGNAL, Crash, VerifiableConsumerSpec


@dataclass
class _Child:
    running_now: bool = True
    signals: list[int] = field(default_factory=list)

    def running(self) -> bool:
        return self.running_now

    def signal(self, sig: int) -> None:
        self.signals.append(sig)


@dataclass
class _Worker:
    spec: ConsumerSpec
    child: _Child = field(default_factory=_Child)

    @property
    def process(self) -> str:
        return self.spec.process

    @property
    def group(self) -> str | None:
        return self.spec.group

    def alive(self) -> bool:
        return self.child.running()


class _Pool:
    def __init__(self, *specs: ConsumerSpec) -> None:
        self.workers = {s.process: _Worker(s) for s in specs}
        self.started: list[ConsumerSpec] = []

    consumers = WorkerPool.consumers

    def start(self, spec: ConsumerSpec) -> _Worker:
        self.started.append(spec)
        self.workers[spec.process] = _Worker(spec)
        return self.workers[spec.process]

    def stop(self, workers: list[_Worker]) -> None:
        for w in workers:
            w.child.running_now = False


def _lab(*specs: ConsumerSpec) -> tuple[LabWorkload, _Pool]:
    lab = LabWorkload(load_scenario("rebalance-member-joining"))
    pool = _Pool(*specs)
    lab.pool = pool  # type: ignore[assignment]
    return lab, pool


MEMBER = ConsumerSpec(process="member-0", topics=["t"], bootstrap_servers="b", group="g", client_log="/x/member-0.client.log")


def test_a_closed_member_starts_again_as_its_next_incarnation_with_its_settings() -> None:
    lab, pool = _lab(MEMBER)
    lab.close_client("member-0")
    lab.restart_client("member-0")
    [spec] = pool.started
    assert (spec.process, spec.group, spec.topics, spec.client_log) == ("member-0.1", "g", ["t"], "")
    assert lab.process_of("member-0") == "member-0.1"
    lab.close_client("member-0")  # a later fault on member-0 acts on member-0.1
    assert not pool.workers["member-0.1"].alive()
    lab.restart_client("member-0")
    assert pool.started[-1].process == "member-0.2"


def test_a_running_member_or_one_in_no_group_is_not_restarted() -> None:
    lab, _ = _lab(MEMBER)
    with pytest.raises(FaultError, match="still running"):
        lab.restart_client("member-0")
    lab, _ = _lab(ConsumerSpec(process="reader-0", topics=["t"], bootstrap_servers="b", group=None))
    lab.close_client("reader-0")
    with pytest.raises(FaultError, match="in no group"):
        lab.restart_client("reader-0")
    with pytest.raises(FaultError, match="restarts only its consumers"):
        lab.restart_client("nobody")


def test_a_freeze_stops_failsafes_worker_and_the_jvm_of_kafkas_consumer() -> None:
    java = VerifiableConsumerSpec(process="member-1", topics=("t",), bootstrap_servers="b", group="g")
    lab, pool = _lab(MEMBER, java)
    for name in ("member-0", "member-1"):
        lab.pause_client(name)
        lab.resume_client(name)
    assert pool.workers["member-0"].child.signals == [signal.SIGSTOP, signal.SIGCONT]
    assert pool.workers["member-1"].child.signals == [FREEZE_SIGNAL, THAW_SIGNAL]


def test_the_worker_stops_its_jvm_and_one_it_starts_while_frozen_stays_stopped() -> None:
    crash, jvm = Crash(), _Child()
    crash.freeze()  # before the JVM is there: run_verifiable stops it as soon as it starts (crash.frozen)
    assert crash.frozen
    crash.child = jvm  # type: ignore[assignment]
    crash.thaw()
    crash.freeze()
    assert jvm.signals == [signal.SIGCONT, signal.SIGSTOP] and crash.frozen
