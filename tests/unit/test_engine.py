"""The scenario engine with a fake cluster and a fake workload: phases, faults, undo, heal, the error boundary.

The fault plug-ins are the real ones (failsafe.faults.FAULTS); the cluster under them is a fake that
keeps node states in a dict and can be told to fail a restart. Each test runs in milliseconds.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson
import polars as pl
import pytest

from failsafe.cluster import clocks, tiered
from failsafe.cluster.site import NeutralSite
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.errors import ClusterNotWhole, ClusterStartError, ScenarioFailed, WorkloadFailed
from failsafe.faults import FAULT_TYPES, FaultContext, FaultSpec, Need
from failsafe.faults.apps import APP_INSTANCES
from failsafe.faults.clients import CLOSE_CONSUMER, KILL_CONSUMER, KILL_DRIVER, PAUSE_CONSUMER, RESTART_CONSUMER
from failsafe.faults.nodes import CLUSTER_LOSS
from failsafe.faults.remote_store import REMOTE_STORE_FAULT
from failsafe.faults.transactions import KILL_TXN_CLIENT, TXN_CLIENTS, ZOMBIE_TXN_CLIENT
from failsafe.history.columnar import read_frames
from failsafe.history.load import load_history
from failsafe.history.ops import Family
from failsafe.scenarios.engine.core import HEAL_ATTEMPTS, Engine, Phase, RunSettings, require_whole, run_scenario
from failsafe.scenarios.store.rundir import RunDir
from failsafe.supervisor import DOWN, PAUSED, UP
from tests.unit.test_tiered_storage import FakeLayer

TOPOLOGY = [
    {"topic": topic, "partition": p, "leader": p % 3, "replicas": [p % 3, (p + 1) % 3], "isr": [p % 3, (p + 1) % 3]}
    for topic in ("t", "my-failsafe-topic")
    for p in range(3)
]


class FakeCluster(NeutralSite):
    """Node states in a dict; a restart can be told to fail its first N attempts."""

    def __init__(self, failing_restarts: int = 0) -> None:
        self.spec = ClusterSpec(brokers=3, controllers=1)
        self.bootstrap_servers = "fake:9092"
        self.states = {n.node_id: UP for n in self.spec.nodes()}
        self.failing_restarts = failing_restarts
        self.restarts: list[list[int]] = []
        self.stopped: list[tuple[list[int], signal.Signals]] = []
        self.disk_calls: list[tuple[str, int]] = []
        self.proxy_calls: list[tuple] = []
        self.journal_path: Path | None = None  # the operator journal a test writes (test_operator_feed.py)

    @property
    def journal(self) -> Path | None:
        return self.journal_path

    def node(self, node_id: int, role: str | None = None) -> NodeSpec:
        return next(n for n in self.spec.nodes() if n.node_id == node_id and (role is None or role in n.roles))

    def node_state(self, node: NodeSpec):
        return self.states[node.node_id]

    def active_controller(self) -> int:
        return self.spec.controller_nodes()[0].node_id

    def active_controller_node(self) -> NodeSpec:
        return self.spec.controller_nodes()[0]

    def signal_node(self, node: NodeSpec, action: str, timeout_s: float) -> None:
        self.states[node.node_id] = {"kill": DOWN, "stop": DOWN, "pause": PAUSED, "resume": UP}[action]

    def stop_nodes(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None:
        self.stopped.append(([n.node_id for n in nodes], sig))
        for n in nodes:
            self.states[n.node_id] = DOWN

    def restart(self, nodes: list[NodeSpec]) -> list[NodeSpec]:
        self.restarts.append([n.node_id for n in nodes])
        if self.failing_restarts:
            self.failing_restarts -= 1
            raise ClusterStartError(f"{nodes[0].name} (broker) exited during start-up: port in use")
        for n in nodes:
            self.states[n.node_id] = UP
        return nodes

    def not_whole(self) -> list[str]:
        return [
            f"{n.role} {n.node_id} is {self.states[n.node_id]}"
            for n in self.spec.nodes()
            if self.states[n.node_id] != UP
        ]

    # Disk layers (faults/disk.py): every node has one; what was asked of them is kept in ``disk_calls``.
    def disk_status(self, node: NodeSpec) -> dict:
        return {"unsynced": {"files": 0, "bytes": 0}}

    def power_off(self, node: NodeSpec, *, torn: bool = False, seed: int = 0) -> dict:
        assert self.states[node.node_id] == DOWN, "a power cut of a running node"
        self.disk_calls.append(("power-off", node.node_id))
        return {"bytes_lost": 0}

    def disk_inject(self, node: NodeSpec, kind: str, **fields) -> dict:
        self.disk_calls.append((f"inject-{kind}", node.node_id))
        return {"injection": {kind: True}}

    def disk_clear(self, node: NodeSpec, kind: str) -> dict:
        self.disk_calls.append((f"clear-{kind}", node.node_id))
        return {"cleared": [kind]}

    # Protocol proxies (faults/protocol.py): every broker has one; what was asked of them is kept in ``proxy_calls``.
    def protocol_proxy(self, node: NodeSpec) -> FakeProxy:
        return FakeProxy(node.node_id, self.proxy_calls)

    # Clock files (faults/clock.py): a real keeper process writes them; None until a test gives the folder.
    clock_dir: Path | None = None

    def clock_file(self, node: NodeSpec) -> Path | None:
        return None if self.clock_dir is None else self.clock_dir / node.name

    # Nodes' data (faults/corruption.py): None until a test gives the folder that holds kafka-N.
    data_root: Path | None = None

    def data_dir(self, node: NodeSpec) -> Path | None:
        return None if self.data_root is None else self.data_root / f"kafka-{node.node_id}"


class FakeProxy:
    def __init__(self, node_id: int, calls: list) -> None:
        self.node_id, self.calls = node_id, calls

    def add(self, rule: dict) -> dict:
        self.calls.append(("add", self.node_id, rule["action"], tuple(rule["apis"])))
        return {"rules": [rule["rule_id"]]}

    def clear(self, rule_id: str) -> dict:
        self.calls.append(("clear", self.node_id))
        took = [{"api": "Produce", "client_id": "producer-0", "requests": 2}]
        return {"rule_id": rule_id, "action": "?", "seen": 3, "taken": 2, "by_api_client": took}


class FakeSampler:
    def __init__(self) -> None:
        self.latest = TOPOLOGY
        self.stopped = False

    def start(self) -> FakeSampler:
        return self

    def sample(self) -> list[dict]:
        return self.latest

    def find(self, name: str) -> dict | None:
        return None

    def stop(self) -> None:
        self.stopped = True


@dataclass
class FakeWorkload:
    """Records which of its hooks ran; ``fail_in`` names a hook that raises, ``interrupt_in`` one that gets Ctrl-C."""

    fail_in: str | None = None
    interrupt_in: str | None = None
    calls: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    paused: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    restart_threads: list[str] = field(default_factory=list)
    settle_s: float = 0.0  # how long wait_settled takes: a group that settles only then
    settled_ns: list[int] = field(default_factory=list)
    sampled_topics: list[str] = field(default_factory=lambda: ["t"])

    def _hook(self, name: str) -> None:
        self.calls.append(name)
        if self.fail_in == name:
            raise WorkloadFailed(f"producer exited with code 1 in {name}")
        if self.interrupt_in == name:
            raise KeyboardInterrupt

    def setup(self, ctx) -> None:
        self._hook("setup")

    def start(self, ctx) -> None:
        self._hook("start")

    def end_chaos(self, ctx) -> None:
        self._hook("end_chaos")

    def drain(self, ctx) -> None:
        self._hook("drain")

    def final_read(self, ctx) -> None:
        self._hook("final_read")

    def stop(self) -> None:
        self.calls.append("stop")

    def tick(self) -> None:
        pass

    def progress(self) -> str:
        return "fake"

    def kill_client(self, name: str) -> None:
        self.killed.append(name)

    def close_client(self, name: str) -> None:
        self.closed.append(name)

    def restart_client(self, name: str) -> None:
        self.restarted.append(name)
        self.restart_threads.append(threading.current_thread().name)

    def process_of(self, name: str) -> str:
        return name

    def wait_settled(self, timeout_s: float) -> str:
        time.sleep(self.settle_s)  # the fake's group settles settle_s after it is asked (it stands for a wait on one)
        self.settled_ns.append(time.time_ns())
        return ""

    def pause_client(self, name: str) -> None:
        self.paused.append(name)

    def resume_client(self, name: str) -> None:
        self.resumed.append(name)


@dataclass(frozen=True)
class Phases:
    warmup_s: float = 0.0
    chaos_s: float = 0.05
    recover_s: float = 0.0
    recover_timeout_s: float = 1.0


@dataclass(frozen=True)
class FakeScenario:
    faults: tuple[FaultSpec, ...]
    name: str = "fake"
    kind: str = "lab"
    phases: Phases = Phases()
    actions: tuple = ()

    @property
    def raw(self) -> dict:
        return {"name": self.name}

    def manifest(self) -> dict:
        return {}

    def declared_clients(self) -> list[dict]:
        return []


# What the fake scenario offers its faults: topic t of 3 partitions, a consumer, the Spark driver and a worker.
CONTEXT = FaultContext(
    where="fake.faults[0]",
    topics={"t": 3, "my-failsafe-topic": 3},
    brokers=3,
    volatile_disks=True,
    clients={
        Need.CONSUMERS: ("member-0", "member-1"),
        Need.SPARK_DRIVER: ("pipeline",),
        Need.SPARK_WORKERS: ("spark-worker-0",),
        TXN_CLIENTS: ("writer-0",),
        APP_INSTANCES: ("eos-0",),
    },
)


def spec(fault: str, at_s: float = 0.0, duration_s: float | None = None, **fields) -> FaultSpec:
    """A fault as a scenario file would write it, its fields parsed and validated by its type."""
    return FaultSpec(fault, at_s, duration_s, FAULT_TYPES[fault].parse(fields, CONTEXT))


def _engine(
    tmp_path: Path,
    faults: tuple[FaultSpec, ...],
    cluster: FakeCluster | None = None,
    workload: FakeWorkload | None = None,
    events: list[str] | None = None,
) -> Engine:
    scenario = FakeScenario(faults)
    return Engine(
        scenario,
        workload or FakeWorkload(),
        RunDir.create(tmp_path, scenario),
        cluster or FakeCluster(),
        RunSettings(
            "4.3.1", {}, lambda _: None, events.append if events is not None else lambda _: None, sampler=FakeSampler()
        ),
    )


def _ops(engine: Engine, f: str) -> list[dict]:
    return [op for op in map(orjson.loads, engine.run_dir.history_path.read_bytes().splitlines()) if op["f"] == f]


def _kill(at_s: float = 0.0, duration_s: float | None = 0.01, **kw) -> FaultSpec:
    return spec("kill", at_s, duration_s, role="leader", partition="t-0", **kw)


def test_a_failed_restart_is_tried_again_and_the_fault_stops_at_the_first_success(tmp_path: Path) -> None:
    cluster = FakeCluster(failing_restarts=2)
    engine = _engine(tmp_path, (_kill(),), cluster)
    run_scenario(engine)
    stops = _ops(engine, "fault-stop")
    assert [(s["ok"], s["attempt"]) for s in stops] == [(False, 1), (False, 2), (True, 3)]
    assert "port in use" in stops[0]["error"]
    assert cluster.restarts == [[0], [0], [0]] and cluster.not_whole() == []
    faults = load_history(engine.run_dir.history_path).faults.to_dicts()
    assert faults[0]["stop_ns"] == stops[-1]["time_ns"] and faults[0]["ok"] is True and faults[0]["undo_attempts"] == 3


def test_a_heal_that_never_succeeds_leaves_the_fault_open_and_require_whole_names_the_node(tmp_path: Path) -> None:
    cluster = FakeCluster(failing_restarts=99)
    events: list[str] = []
    engine = _engine(tmp_path, (_kill(duration_s=None),), cluster, events=events)
    run_scenario(engine)
    # HEAL_ATTEMPTS in the heal phase, one more when the run closes.
    assert [s["ok"] for s in _ops(engine, "fault-stop")] == [False] * (HEAL_ATTEMPTS + 1)
    assert any("could not be undone" in e for e in events)
    faults = load_history(engine.run_dir.history_path).faults.to_dicts()
    assert faults[0]["stop_ns"] is None and faults[0]["ok"] is False
    with pytest.raises(ClusterNotWhole, match="broker 0 is down") as raised:
        require_whole(cluster, after="broker-failover")
    assert "failsafe broker start" in str(raised.value)


# Network faults need nftables and a real cluster's processes: tests/e2e/test_network_faults.py runs them through this
# engine. A feature-downgrade runs kafka-features against the cluster: tests/unit/test_feature_downgrade.py starts and
# undoes it against a fake kafka-features. The security faults (faults/security.py) change a secured cluster's SCRAM
# credentials and ACLs through its admin API: tests/e2e/test_secured_cluster.py runs them through this engine.
@pytest.mark.parametrize(
    "kind",
    [name for name, t in FAULT_TYPES.items() if t.family not in (Family.NETWORK, Family.FEATURE_FLIP, "security")],
)
def test_every_kind_of_fault_records_its_start_and_a_successful_stop(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fields = (
        {"consumer": "member-0"}
        if kind in (KILL_CONSUMER, CLOSE_CONSUMER, PAUSE_CONSUMER, RESTART_CONSUMER)
        else {"role": "leader", "partition": "t-1"}
    )
    if kind in (KILL_TXN_CLIENT, ZOMBIE_TXN_CLIENT):
        fields = {"client": "writer-0"}
    if "app" in FAULT_TYPES[kind].params.__dataclass_fields__:
        fields = {"app": "eos-0"}
    if FAULT_TYPES[kind].family == Family.PROTOCOL:
        fields = {"api": "Produce", "clients": "producer-*"}
    if FAULT_TYPES[kind].family == Family.CLOCK:
        fields = {"role": "leader", "partition": "t-1", "offset_s": 60.0, "max_s": 5.0, "rate_ppm": 1000.0}
    if kind == "disk-slow":
        fields = {"role": "leader", "partition": "t-1", "delay_ms": 5.0}
    own = {f: v for f, v in fields.items() if f in FAULT_TYPES[kind].params.__dataclass_fields__}
    cluster, workload = FakeCluster(), FakeWorkload()
    store = FakeLayer()  # a tiered cluster's remote store (remote-store acts on it and on no node)
    monkeypatch.setattr(tiered, "store_layer", lambda root: store)
    cluster.dir = type("Dir", (), {"root": tmp_path})()
    cluster.clock_dir = tmp_path / "clocks"
    cluster.data_root = tmp_path / "data"
    segment = cluster.data_root / "kafka-1" / "t-1" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True)
    segment.write_bytes(bytes(range(256)) * 4)
    engine = _engine(tmp_path, (spec(kind, 0.0, 0.01, **own),), cluster, workload)
    run_scenario(engine)
    (start,), stops = _ops(engine, "fault-start"), _ops(engine, "fault-stop")
    assert (
        start["fault"] == kind
        and (start["nodes"] or kind == REMOTE_STORE_FAULT)
        and "error" not in start
        and start["family"] == FAULT_TYPES[kind].family
    )
    assert [s["ok"] for s in stops] == [True] and stops[0]["fault_id"] == start["fault_id"]
    assert stops[0]["time_ns"] >= start["time_ns"]
    assert cluster.not_whole() == []
    if kind == REMOTE_STORE_FAULT:
        assert store.in_force == [] and start["details"]["mode"] == "error" and stops[0]["details"]["refused"] == {}
    elif FAULT_TYPES[kind].family == Family.DISK:
        # The leader of t-1 is broker 1: cut (killed first), or its disk failed and then cleared, and started again.
        assert cluster.disk_calls in (
            [],  # corrupt: the file changed, no layer asked
            [("power-off", 1)],
            [("inject-full", 1), ("clear-full", 1)],
            [("inject-error", 1), ("clear-error", 1)],
            [("inject-slow", 1), ("clear-slow", 1)],
        )
        assert cluster.restarts == [[1]]
        if kind == "corrupt":
            (changed,) = start["details"]["changed"].values()
            assert changed["file"] == "t-1/00000000000000000000.log" and changed["bytes_changed"] == 1
            assert segment.read_bytes() != bytes(range(256)) * 4 and stops[0]["details"]["refused_to_start"] is None
    if FAULT_TYPES[kind].family == Family.PROTOCOL:
        # A rule on every broker's proxy, cleared at the undo; what the proxies took is recorded with the stop.
        assert cluster.proxy_calls == [("add", b, kind, ("Produce",)) for b in range(3)] + [
            ("clear", b) for b in range(3)
        ]
        assert stops[0]["details"]["requests"] == 6 and set(stops[0]["details"]["took"]) == {"0", "1", "2"}
        assert start["details"]["rule"]["clients"] == "producer-*"
    if FAULT_TYPES[kind].family == Family.CLOCK:
        # The leader of t-1's clock set apart by a keeper, and back to real time at the undo.
        assert list(start["details"]["offsets_s"]) == ["1"] and "offsets_at_end_s" in stops[0]["details"]
        assert clocks.offsets(tmp_path) == {"server-1": 0.0}
    if kind == KILL_DRIVER:
        assert workload.killed == ["pipeline"] and workload.restarted == ["pipeline"]
    if kind == KILL_CONSUMER:
        assert workload.killed == ["member-0"]
    if kind == RESTART_CONSUMER:
        # Closed, and started again at the undo.
        assert workload.closed == ["member-0"] and workload.restarted == ["member-0"]
    if kind == PAUSE_CONSUMER:
        # Frozen, and let go on at the undo.
        assert workload.paused == ["member-0"] and workload.resumed == ["member-0"]
    if kind == KILL_TXN_CLIENT:
        assert workload.killed == ["writer-0"] and workload.restarted == ["writer-0"]
    if kind == ZOMBIE_TXN_CLIENT:
        # Frozen, replaced at once by a new instance, and let go on at the undo.
        assert (
            workload.paused == ["writer-0"] and workload.restarted == ["writer-0"] and workload.resumed == ["writer-0"]
        )
    if kind == CLUSTER_LOSS:
        every_node = [n.node_id for n in cluster.spec.nodes()]
        assert cluster.stopped == [(every_node, signal.SIGKILL)] and cluster.restarts == [every_node]


def test_restart_is_undone_at_once_so_its_window_is_the_brokers_absence(tmp_path: Path) -> None:
    cluster = FakeCluster()
    engine = _engine(tmp_path, (spec("restart", role="leader", partition="t-2"),), cluster)
    run_scenario(engine)
    phases = {op["phase"]: op["time_ns"] for op in _ops(engine, "phase")}
    (stop,) = _ops(engine, "fault-stop")
    assert stop["ok"] and stop["time_ns"] < phases["heal"], "the restart's stop belongs to chaos, not to the heal"
    assert cluster.restarts == [[2]]


def test_the_phases_run_in_order_and_a_scheduled_undo_happens_in_chaos(tmp_path: Path) -> None:
    workload = FakeWorkload()
    engine = _engine(tmp_path, (_kill(at_s=0.0, duration_s=0.02),), workload=workload)
    run_scenario(engine)
    phases = _ops(engine, "phase")
    assert [p["phase"] for p in phases] == [str(p) for p in Phase]
    assert workload.calls == ["setup", "start", "end_chaos", "drain", "final_read", "stop"]
    # Each phase's end is recorded once its work is done, and the clients the scenario declares once, at setup.
    assert [p["phase"] for p in _ops(engine, "phase-end")] == [str(p) for p in Phase]
    assert len(_ops(engine, "declare")) == 1
    (start,), (stop,) = _ops(engine, "fault-start"), _ops(engine, "fault-stop")
    assert stop["time_ns"] - start["time_ns"] >= 20_000_000
    assert stop["time_ns"] < next(p["time_ns"] for p in phases if p["phase"] == "heal")
    assert engine.sampler.stopped and engine.recorder._closed.is_set()
    # The run leaves the columnar copy of its history: its check (and every later one) reads it, not the JSON.
    assert engine.recorder.copy_written and read_frames(engine.run_dir.history_path) is not None


def test_a_phase_that_raises_records_no_end_and_the_phases_after_it_never_start(tmp_path: Path) -> None:
    workload = FakeWorkload(fail_in="drain")
    engine = _engine(tmp_path, (), workload=workload)
    with pytest.raises(WorkloadFailed):
        run_scenario(engine)
    ended = [p["phase"] for p in _ops(engine, "phase-end")]
    assert ended == ["setup", "warm-up", "chaos", "heal", "recover"] and "final_read" not in workload.calls


class BlockedRestartCluster(FakeCluster):
    """Broker 0's restart waits until broker 1 is resumed (a broker that cannot register until a partition heals)."""

    def __init__(self, error: Exception | None = None) -> None:
        super().__init__()
        self.resumed = threading.Event()
        self.error = error

    def signal_node(self, node: NodeSpec, action: str, timeout_s: float) -> None:
        super().signal_node(node, action, timeout_s)
        if action == "resume":
            self.resumed.set()

    def restart(self, nodes: list[NodeSpec]) -> list[NodeSpec]:
        if self.error is not None:
            raise self.error
        assert self.resumed.wait(5), "the resume was held back behind the restart"
        return super().restart(nodes)


def test_an_undo_that_waits_does_not_hold_back_the_next_scheduled_undo(tmp_path: Path) -> None:
    cluster = BlockedRestartCluster()
    pause = spec("pause", 0.01, 0.03, role="any", node=1)
    engine = _engine(tmp_path, (spec("kill", 0.0, 0.02, role="any", node=0), pause), cluster)
    run_scenario(engine)
    starts, stops = _ops(engine, "fault-start"), _ops(engine, "fault-stop")
    stop_of = {next(s["fault"] for s in starts if s["fault_id"] == stop["fault_id"]): stop for stop in stops}
    assert stop_of["kill"]["ok"] and stop_of["pause"]["ok"] and cluster.not_whole() == []
    # The restart returned only after the resume: the pause was undone on its schedule, during the wait.
    assert stop_of["pause"]["time_ns"] <= stop_of["kill"]["time_ns"]
    heal = next(p["time_ns"] for p in _ops(engine, "phase") if p["phase"] == "heal")
    assert stop_of["kill"]["time_ns"] <= heal, "the heal waits for the undo still running"


def test_a_fault_that_waits_first_starts_when_it_acts_and_its_undo_is_due_duration_s_after(tmp_path: Path) -> None:
    # A rolling restart whose steps wait for the group to settle: member-0's restart is due at 0 with 0.01 s down, and
    # member-1's at 0.005; the group takes 0.1 s to settle each time.
    workload = FakeWorkload(settle_s=0.1)
    faults = (
        spec(RESTART_CONSUMER, 0.0, 0.01, consumer="member-0", settled_within_s=5),
        spec(RESTART_CONSUMER, 0.005, 0.01, consumer="member-1", settled_within_s=5),
    )
    engine = _engine(tmp_path, faults, workload=workload)
    run_scenario(engine)
    starts, stops = _ops(engine, "fault-start"), _ops(engine, "fault-stop")
    assert [s["nodes"] for s in starts] == [["member-0"], ["member-1"]] and workload.restarted == [
        "member-0",
        "member-1",
    ]
    # Each fault starts when it acted, after the group settled, not when it was due.
    assert [s["time_ns"] >= settled for s, settled in zip(starts, workload.settled_ns, strict=True)] == [True, True]
    # Each undo came duration_s (10 ms) after its fault acted, though the second was due 5 ms after the first.
    assert all(stop["time_ns"] - start["time_ns"] >= 10_000_000 for start, stop in zip(starts, stops, strict=True))
    assert starts[1]["time_ns"] >= workload.settled_ns[1] > starts[0]["time_ns"]


def test_a_client_fault_is_undone_on_the_thread_that_drives_the_workload(tmp_path: Path) -> None:
    # The workload sees a killed driver's exit and its restart in order only if both happen on its own thread.
    workload = FakeWorkload()
    run_scenario(_engine(tmp_path, (spec(KILL_DRIVER, 0.0, 0.01),), workload=workload))
    assert workload.restarted == ["pipeline"] and workload.restart_threads == [threading.main_thread().name]


def test_a_bug_in_an_undo_on_its_own_thread_reaches_the_caller(tmp_path: Path) -> None:
    engine = _engine(
        tmp_path, (spec("kill", 0.0, 0.01, role="any", node=0),), BlockedRestartCluster(error=ValueError("a bug"))
    )
    with pytest.raises(ValueError, match="a bug"):
        run_scenario(engine)


def test_the_heal_runs_when_the_workload_fails_and_the_failure_reaches_the_caller(tmp_path: Path) -> None:
    cluster, workload = FakeCluster(), FakeWorkload(fail_in="end_chaos")
    engine = _engine(tmp_path, (_kill(duration_s=None),), cluster, workload)
    with pytest.raises(WorkloadFailed, match="in end_chaos"):
        run_scenario(engine)
    assert [s["ok"] for s in _ops(engine, "fault-stop")] == [True]
    assert "heal" in [p["phase"] for p in _ops(engine, "phase")]
    assert cluster.not_whole() == [] and workload.calls[-1] == "stop"


def test_the_heal_runs_on_ctrl_c(tmp_path: Path) -> None:
    cluster, workload = FakeCluster(), FakeWorkload(interrupt_in="end_chaos")
    engine = _engine(tmp_path, (spec("pause", role="leader", partition="t-0"),), cluster, workload)
    with pytest.raises(KeyboardInterrupt):
        run_scenario(engine)
    assert cluster.states[0] == UP and [s["ok"] for s in _ops(engine, "fault-stop")] == [True]


def test_a_fault_that_cannot_start_is_recorded_and_stops_the_run_with_one_line(tmp_path: Path) -> None:
    engine = _engine(
        tmp_path, (FaultSpec("kill", 0.0, None, FAULT_TYPES["kill"].params(role="leader", partition="t-9")),)
    )
    with pytest.raises(ScenarioFailed, match="kill fault at 0s could not start: role 'leader' needs a partition"):
        run_scenario(engine)
    (start,) = _ops(engine, "fault-start")
    assert "needs a partition" in start["error"]


def test_a_fault_that_may_fail_and_cannot_start_is_an_event_and_the_run_goes_on(tmp_path: Path) -> None:
    cannot = FaultSpec("kill", 0.0, 0.01, FAULT_TYPES["kill"].params(role="leader", partition="t-9"), may_fail=True)
    engine = _engine(tmp_path, (cannot, _kill(at_s=0.02)))
    run_scenario(engine)
    (skipped,) = _ops(engine, "fault-not-started")
    assert skipped["fault"] == "kill" and skipped["at_s"] == 0.0 and "needs a partition" in skipped["error"]
    # The one that could start did, and stopped: the one that could not is no fault window.
    history = load_history(engine.run_dir.history_path)
    assert history.faults["fault_id"].to_list() == [2] and history.faults["ok"].to_list() == [True]
    assert history.events.filter(pl.col("f") == "fault-not-started")["at_s"].to_list() == [0.0]


@pytest.mark.parametrize("second", ["restart", "terminate", "kill", "pause"])
def test_a_node_fault_on_a_broker_another_fault_has_down_may_fail_and_the_run_goes_on(
    tmp_path: Path, second: str
) -> None:
    """A campaign drew kill of every replica, then a restart of broker 2 by id: a fault not started, not a failed
    run."""
    down = FaultSpec("kill", 0.0, 0.05, FAULT_TYPES["kill"].params(node=2))
    then = FaultSpec(
        second, 0.01, None if second == "restart" else 0.01, FAULT_TYPES[second].params(node=2), may_fail=True
    )
    engine = _engine(tmp_path, (down, then))
    run_scenario(engine)
    (skipped,) = _ops(engine, "fault-not-started")
    assert skipped["fault"] == second and "broker 2 is not running (another fault has it down)" in skipped["error"]


def test_recover_waits_for_a_full_isr_and_records_a_timeout(tmp_path: Path) -> None:
    engine = _engine(tmp_path, ())
    engine.sampler.latest = [{**TOPOLOGY[0], "isr": [0]}]
    engine.scenario = FakeScenario((), phases=Phases(recover_timeout_s=0.05))
    run_scenario(engine)
    (timeout,) = _ops(engine, "recover-timeout")
    assert timeout["timeout_s"] == 0.05


# -- the CLI boundary ---------------------------------------------------------------------------
QUICK_SCENARIO = """
name = "quick"
[[topics]]
name = "my-failsafe-topic"
partitions = 3
replication_factor = 3
[[producers]]
name = "producer"
topic = "my-failsafe-topic"
[[faults]]
fault = "kill"
role = "leader"
partition = "my-failsafe-topic-0"
at_s = 0
[phases]
warmup_s = 0
chaos_s = 0.05
recover_s = 0
"""


@dataclass
class Placed:
    """What placement yields the CLI (a topology), over a fake cluster."""

    fault_target: FakeCluster

    def bootstraps(self) -> dict:
        return {}

    def facts(self) -> dict:
        return {}


def test_no_traceback_reaches_the_cli_when_a_workload_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """`failsafe run` on a fake cluster whose workload dies: one line on stderr, exit 5 (not carried out), the heal
    done."""
    from contextlib import contextmanager

    from failsafe.cli.main import main
    from failsafe.cluster.observe import status
    from failsafe.scenarios import kinds
    from failsafe.scenarios.engine import core as engine
    from failsafe.scenarios.engine import placement

    cluster = FakeCluster()
    monkeypatch.setattr(placement, "placed", contextmanager(lambda *a, **k: (yield Placed(cluster))))
    monkeypatch.setattr(status, "cluster_facts", lambda c: {})
    monkeypatch.setattr(engine, "TopologySampler", lambda *a, **k: FakeSampler())
    lab = kinds.KINDS["lab"]
    monkeypatch.setitem(kinds.KINDS, "lab", replace(lab, workload=lambda s: FakeWorkload(fail_in="end_chaos")))
    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK_SCENARIO)
    code = main(["run", str(scenario), "--runs", str(tmp_path), "--dir", str(tmp_path / "cluster")])
    err = capsys.readouterr().err
    assert code == 5
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("failsafe: producer exited with code 1 in end_chaos (details: ") and last.endswith(".log)")
    assert cluster.not_whole() == [], "the broker the scenario killed was restarted by the heal"


def test_a_run_that_breaks_after_an_invalid_one_still_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Two scenarios: the first judged INVALID, the second crashes (a bug of ours): exit 1, the finding is not masked by
    5."""
    from contextlib import contextmanager

    from failsafe.cli.main import main
    from failsafe.cluster.observe import status
    from failsafe.scenarios import kinds
    from failsafe.scenarios.engine import core as engine
    from failsafe.scenarios.engine import placement

    cluster = FakeCluster()

    class Crashing(FakeWorkload):
        def setup(self, ctx) -> None:
            raise RuntimeError("a bug of failsafe's own")

    made = iter([FakeWorkload(), Crashing()])
    monkeypatch.setattr(placement, "placed", contextmanager(lambda *a, **k: (yield Placed(cluster))))
    monkeypatch.setattr(status, "cluster_facts", lambda c: {})
    monkeypatch.setattr(engine, "TopologySampler", lambda *a, **k: FakeSampler())
    lab = kinds.KINDS["lab"]
    invalid = {"valid": False, "verdict": "INVALID", "checkers": {}, "expectations": []}
    monkeypatch.setitem(
        kinds.KINDS,
        "lab",
        replace(
            lab,
            workload=lambda s: next(made),
            judge=lambda run_dir, s: (invalid, None),
            show=lambda *a: None,
            report=lambda run_dir, r, h: run_dir.report_path,
        ),
    )
    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text(QUICK_SCENARIO)
    second.write_text(QUICK_SCENARIO.replace('name = "quick"', 'name = "quick-2"'))
    code = main(["run", str(first), str(second), "--runs", str(tmp_path), "--dir", str(tmp_path / "cluster")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "failsafe crashed: RuntimeError: a bug of failsafe's own (details: " in err and "Traceback" not in err


def test_sigterm_unwinds_like_ctrl_c() -> None:
    from failsafe.cli.main import _terminate_as_interrupt

    with pytest.raises(KeyboardInterrupt):
        _terminate_as_interrupt(signal.SIGTERM, None)
