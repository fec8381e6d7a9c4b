"""Tiered storage without a cluster: the remote store's jar and properties, what the tier holds read from
LocalTieredStorage's tree, the remote-store fault's fields, start and undo against a fake layer, and the cluster a
tiered scenario needs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from failsafe.campaigns.nemesis import Envelope
from failsafe.campaigns.plan import Plan, parse
from failsafe.cluster import tiered
from failsafe.cluster.properties import kraft_properties
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES, FaultSpec, FaultTargets
from failsafe.faults import remote_store as rs
from failsafe.faults.draw import Arena
from failsafe.jvm.kafka import KafkaDist
from failsafe.jvm.tiered import LOCAL_TIERED_STORAGE, RemoteStorageJar, store_version
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.registry import load_scenario, parse_scenario

TOPIC_ID = "aB-cD_eF-gH_iJ-kL_mN-o"  # 22 characters of URL-safe base64, dashes in it


def test_4_4_0_takes_the_store_of_4_3_1_and_says_so() -> None:
    assert store_version("4.4.0") == "4.3.1" and store_version("4.3.1") == "4.3.1"
    assert "not on Maven Central" in RemoteStorageJar("4.3.1", (Path("x.jar"),)).note("4.4.0")
    assert RemoteStorageJar("4.3.1", (Path("x.jar"),)).note("4.3.1") == "LocalTieredStorage of kafka-storage 4.3.1"


def test_a_class_the_broker_s_release_moved_comes_from_the_store_s_release_alone(tmp_path: Path) -> None:
    import zipfile

    from failsafe.errors import ProvisionError
    from failsafe.jvm import tiered as jars

    clients = tmp_path / "kafka-clients-4.3.1.jar"
    with zipfile.ZipFile(clients, "w") as z:
        for name in ("a/LogContext.class", "a/LogContext$Inner.class", "a/LogContextual.class", "a/Other.class"):
            z.writestr(name, name.encode())
    shim = tmp_path / "moved.jar"
    jars._extract(clients, ("a/LogContext",), shim)
    with zipfile.ZipFile(shim) as z:
        assert sorted(z.namelist()) == ["a/LogContext$Inner.class", "a/LogContext.class"]
        assert z.read("a/LogContext.class") == b"a/LogContext.class"
    with pytest.raises(ProvisionError, match="has no a/Gone"):
        jars._extract(clients, ("a/Gone",), tmp_path / "none.jar")
    assert jars.MOVED["4.4.0"] == ("org/apache/kafka/common/utils/LogContext",)


def test_the_store_s_jar_comes_after_kafka_s_own_on_the_classpath() -> None:
    dist = KafkaDist("4.3.1", Path("/k/libs"), (Path("/t/store-test.jar"),))
    assert dist.classpath.split(":") == ["/k/libs/*", "/t/store-test.jar"]
    assert KafkaDist("4.3.1", Path("/k/libs")).classpath == "/k/libs/*"


def test_brokers_run_the_remote_log_manager_and_controllers_only_allow_tiered_topics(tmp_path: Path) -> None:
    spec = ClusterSpec(tiered_storage=True).validate()
    broker = spec.brokers_nodes()[0]
    (controller,) = spec.controller_nodes()
    props = kraft_properties(spec, broker, tmp_path)
    assert props["remote.log.storage.manager.class.name"] == LOCAL_TIERED_STORAGE
    assert props["rsm.config.dir"] == str(tmp_path.resolve() / "remote-store")
    assert props["remote.log.metadata.manager.listener.name"] == "PLAINTEXT"  # the brokers' client listener
    assert props["rlmm.config.remote.log.metadata.topic.replication.factor"] == "3"
    assert kraft_properties(spec, controller, tmp_path)["remote.log.storage.system.enable"] == "true"
    assert "rsm.config.dir" not in kraft_properties(spec, controller, tmp_path)
    plain = ClusterSpec().validate()
    assert "remote.log.storage.system.enable" not in kraft_properties(plain, plain.brokers_nodes()[0], tmp_path)
    # An --override still wins over what tiered storage sets.
    tuned = ClusterSpec(tiered_storage=True, overrides={"remote.log.manager.task.interval.ms": "5000"}).validate()
    assert kraft_properties(tuned, broker, tmp_path)["remote.log.manager.task.interval.ms"] == "5000"


@pytest.mark.parametrize("fields", [{"mode": "zookeeper"}, {"placement": {"server-0": "h"}}])
def test_tiered_storage_is_a_kraft_cluster_s_on_this_machine(fields: dict) -> None:
    spec = (
        ClusterSpec.zookeeper_mode(tiered_storage=True)
        if fields.get("mode")
        else ClusterSpec(
            tiered_storage=True,
            controllers=1,
            brokers=1,
            placement={"server-0": "10.0.0.1", "server-1000": "10.0.0.1"},
        )
    )
    with pytest.raises(UserError, match="--tiered-storage"):
        spec.validate()


def _store(root: Path) -> None:
    part = root / "remote-store" / tiered.STORE_TREE / f"orders-1-{TOPIC_ID}"
    part.mkdir(parents=True)
    for base, size in ((0, 100), (120, 50)):
        (part / f"{base:020d}-seg{base}.log").write_bytes(bytes(size))
        (part / f"{base:020d}-seg{base}.index").write_bytes(bytes(8))
    for node, first in ((0, 130), (1, 125), (2, 140)):
        local = root / f"kafka-{node}" / "orders-1"
        local.mkdir(parents=True)
        (local / "partition.metadata").write_text(f"version: 0\ntopic_id: {TOPIC_ID}\n")
        (local / f"{first:020d}.log").write_bytes(b"")
        (local / f"{first + 20:020d}.log").write_bytes(b"")


def test_what_the_tier_holds_and_what_only_it_holds(tmp_path: Path) -> None:
    _store(tmp_path)
    held = tiered.remote_segments(tmp_path)
    assert held == {"orders-1": {"segments": 2, "bytes": 150, "base_offsets": [0, 120]}}
    assert tiered.local_log_starts(tmp_path, ClusterSpec()) == {"orders-1": 125}  # the lowest over the replicas
    assert tiered.local_first_offsets(tmp_path, ClusterSpec()) == {"orders-1": {0: 130, 1: 125, 2: 140}}
    assert tiered.remote_segments(tmp_path / "none") == {}
    # A deleted topic of the same name left its segments under its own id: they are not this topic's.
    old = tmp_path / "remote-store" / tiered.STORE_TREE / "orders-1-ZZZZZZZZZZZZZZZZZZZZZZ"
    old.mkdir()
    (old / f"{0:020d}-old.log").write_bytes(bytes(7))
    assert tiered.remote_segments(tmp_path)["orders-1"]["segments"] == 3
    assert tiered.topic_ids(tmp_path, ClusterSpec()) == {"orders-1": TOPIC_ID}
    assert tiered.remote_segments(tmp_path, {"orders-1": TOPIC_ID})["orders-1"]["segments"] == 2
    assert tiered.local_log_starts(tmp_path, ClusterSpec()) == {"orders-1": 125}


def _parse(**fields):
    scenario = load_scenario("tiered-remote-store-failing")
    ctx_fields = {"fault": "remote-store", "at_s": 1, "duration_s": 2, **fields}
    data = {**scenario.raw, "faults": [ctx_fields]}
    return parse_scenario(data).faults[0]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"mode": "gone"}, "mode.*not one of"),
        ({"mode": "error", "ops": "sync"}, "ops.*not one of"),
        ({"mode": "error", "delay_ms": 5.0}, "for mode 'slow'"),
        ({"mode": "slow", "ops": "both"}, "delay_ms above 0"),
        ({"mode": "slow", "delay_ms": 5.0, "rate_mb_s": 0.0}, "above 0 MB/s"),
        ({"mode": "full", "glob": "*.log"}, "leave glob out"),
        ({"mode": "error", "glob": " "}, "empty pattern"),
    ],
)
def test_a_remote_store_fault_refuses_fields_it_cannot_take(fields: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        _parse(**fields)


class FakeLayer:
    """The store's layer as the fault sees it: status counts that grow while an injection is in force."""

    def __init__(self) -> None:
        self.failed: dict[str, dict[str, int]] = {"error": {"write": 2}}
        self.in_force: list[tuple] = []

    def status(self) -> dict:
        return {"failed": self.failed, "slowed": {"ops": 0, "waited_s": 0.0}}

    def inject(self, kind: str, **fields) -> dict:
        self.in_force.append((kind, fields))
        return {"injection": {"full": False, "error": {"ops": fields["ops"], "glob": fields["glob"]}}}

    def clear_injection(self, kind: str) -> dict:
        self.in_force.remove(next(f for f in self.in_force if f[0] == kind))
        return {"cleared": [kind]}


class FakeSite:
    def __init__(self, root: Path) -> None:
        self.dir = type("Dir", (), {"root": root})()


def test_the_store_fails_until_the_undo_and_the_stop_counts_what_it_refused(tmp_path: Path, monkeypatch) -> None:
    _store(tmp_path)
    layer = FakeLayer()
    monkeypatch.setattr(tiered, "store_layer", lambda root: layer if root == tmp_path else None)
    spec: FaultSpec = _parse(mode="error", ops="write", glob="*.log")
    applied = rs.start(spec, FaultTargets(FakeSite(tmp_path), None, None))
    assert layer.in_force == [("error", {"ops": "write", "glob": "*.log"})]
    assert applied.details["mode"] == "error" and applied.details["held"]["orders-1"]["segments"] == 2
    assert applied.label == "remote store" and applied.nodes == []
    layer.failed = {"error": {"write": 9, "read": 1}}  # what the layer refused while the fault was in force
    applied.undo()
    assert layer.in_force == []
    assert applied.stop_details["refused"] == {"error": 8}


def test_without_a_remote_store_the_fault_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(tiered, "store_layer", lambda root: None)
    with pytest.raises(Exception, match="no remote store"):
        rs.start(_parse(mode="full"), FaultTargets(FakeSite(tmp_path), None, None))
    assert rs.fits(ClusterSpec()) is not None and rs.fits(ClusterSpec(tiered_storage=True)) is None


def test_a_tiered_topic_or_a_store_fault_gets_a_tiered_cluster() -> None:
    by_topic = load_scenario("tiered-leader-killed-during-copy")
    by_fault = parse_scenario(
        {
            **by_topic.raw,
            "cluster": {"brokers": 3},
            "faults": [{"fault": "remote-store", "mode": "full", "at_s": 1, "duration_s": 2}],
        }
    )
    for scenario in (by_topic, by_fault):
        needs = needs_of([scenario])
        assert needs.tiered_storage
        assert spec_for(needs, None, None, None).tiered_storage
        assert "--tiered-storage" in misfit(ClusterSpec().validate(), needs, [scenario])


def test_campaigns_draw_the_store_s_faults_when_asked_on_a_tiered_cluster() -> None:
    rng = random.Random(5)
    for _ in range(30):
        drawn = FAULT_TYPES["remote-store"].draw(rng, Arena(partitions=("t-0",)))
        assert drawn.fields["mode"] in rs.MODES and (drawn.brokers, drawn.controllers) == (0, 0)
    plan = Plan.make("client-matrix", ("remote-store",), Envelope.SAFE, 30.0)
    assert plan.scenario.cluster.tiered_storage
    # Its topics are tiered, or the store's faults would act on nothing.
    assert all(t.configs["remote.storage.enable"] == "true" for t in plan.scenario.topics)
    assert all(t["configs"]["local.retention.ms"] == "2000" for t in plan.base["topics"])
    assert "remote.storage.enable" not in Plan.make("client-matrix", ("kill",), Envelope.SAFE, 30.0).base["topics"][
        0
    ].get("configs", {})
    for run in range(5):
        parse(plan.base, plan.nemesis.schedule(5, run), f"check-{run}", plan.workload)


def test_status_shows_the_remote_store_of_a_tiered_cluster_only(tmp_path: Path) -> None:
    from failsafe.cluster.observe.status import ClusterStatus

    _store(tmp_path)
    tiered_status = ClusterStatus(tmp_path, ClusterSpec(tiered_storage=True), "", "", [], [])
    store = tiered_status.to_json()["remote_store"]
    assert store["mounted"] is False and store["partitions"]["orders-1"]["segments"] == 2
    assert "remote_store" not in ClusterStatus(tmp_path, ClusterSpec(), "", "", [], []).to_json()
