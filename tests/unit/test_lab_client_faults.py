"""The lab's faults on its consumers: a restart (a new process NAME.N with the same settings, and the faults that follow
act on it), and a freeze (SIGSTOP of failsafe's worker, or of the JVM a worker of Kafka's verifiable clients
started)."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

import pytest

from failsafe.faults import FaultError
from failsafe.scenarios.kinds.lab.workload import LabWorkload
from failsafe.scenarios.registry import load_scenario
from failsafe.workloads.pool import WorkerPool
from failsafe.workloads.specs import ConsumerSpec
from failsafe.workloads.verifiable.clients import FREEZE_SIGNAL, THAW_SIGNAL, Crash, VerifiableConsumerSpec


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
    assigned: set[tuple[str, int]] = field(default_factory=set)

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
    live_consumers = WorkerPool.live_consumers
    assigned_by_group = WorkerPool.assigned_by_group

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


MEMBER = ConsumerSpec(
    process="member-0", topics=["t"], bootstrap_servers="b", group="g", client_log="/x/member-0.client.log"
)


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


def test_a_group_is_settled_when_it_owns_every_partition_and_each_member_some() -> None:
    # rebalance-member-joining: three members of mygroup on my-failsafe-topic's 12 partitions.
    specs = [
        ConsumerSpec(process=f"member-{i}", topics=["my-failsafe-topic"], bootstrap_servers="b", group="mygroup")
        for i in range(3)
    ]
    lab, pool = _lab(*specs)
    pool.workers["member-0"].assigned = {("my-failsafe-topic", p) for p in range(8)}
    pool.workers["member-1"].assigned = {("my-failsafe-topic", p) for p in range(8, 11)}
    assert lab.unsettled() == ["mygroup: 1 partition(s) unowned", "mygroup: member-2 owns nothing"]
    assert lab.wait_settled(0) == "mygroup: 1 partition(s) unowned; mygroup: member-2 owns nothing"
    pool.workers["member-2"].assigned = {("my-failsafe-topic", 11)}
    assert lab.unsettled() == [] and lab.wait_settled(0) == ""
    lab.close_client("member-2")  # a member that left is not waited for; its partition is
    assert lab.unsettled() == ["mygroup: 1 partition(s) unowned"]


def test_a_restart_waits_for_the_group_to_settle_first_and_names_what_did_not() -> None:
    from failsafe.faults.base import FaultSpec, FaultTargets
    from failsafe.faults.clients import RESTART_CONSUMER, RestartChoice
    from failsafe.faults.registry import FAULT_TYPES

    calls: list[tuple[str, object]] = []

    class Clients:
        def wait_settled(self, timeout_s: float) -> str:
            calls.append(("wait", timeout_s))
            return "mygroup: member-0.1 owns nothing"

        def process_of(self, name: str) -> str:
            return name

        def close_client(self, name: str) -> None:
            calls.append(("close", name))

    start = FAULT_TYPES[RESTART_CONSUMER].start
    applied = start(
        FaultSpec(RESTART_CONSUMER, 14.0, 4.0, RestartChoice("member-1", settled_within_s=30)),
        FaultTargets(None, Clients(), lambda _: None),
    )
    assert calls == [("wait", 30.0), ("close", "member-1")]
    assert applied.details == {"unsettled": "mygroup: member-0.1 owns nothing"}
    calls.clear()
    start(
        FaultSpec(RESTART_CONSUMER, 2.0, 4.0, RestartChoice("member-0")), FaultTargets(None, Clients(), lambda _: None)
    )
    assert calls == [("close", "member-0")]  # 0: no wait


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


def test_a_group_that_never_settles_at_start_is_named_in_the_error() -> None:
    from failsafe.waiting import WaitTimeout

    class Ctx:
        bootstrap_servers, kafka_version = "b", "4.3.1"

        def wait(self, condition, timeout_s: float, message: str) -> None:
            assert not condition()  # three members, none owning anything yet
            raise WaitTimeout(message)

    lab, _ = _lab()
    with pytest.raises(
        WaitTimeout,
        match=r"did not settle within 60s .*: mygroup: 12 partition\(s\) unowned; mygroup: member-0 owns nothing",
    ):
        lab.start(Ctx())  # type: ignore[arg-type]
