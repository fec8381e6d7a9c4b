from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState, UnreadableState, new_cluster_id
from failsafe.errors import ClusterNotRunning, UserError


def test_state_round_trips(tmp_path: Path) -> None:
    cdir = ClusterDir(tmp_path)
    state = ClusterState(ClusterSpec(brokers=2, overrides={"a": "b"}), new_cluster_id(), "2026-01-01T00:00:00Z")
    cdir.save(state)
    assert cdir.load() == state


def test_missing_state_says_how_to_start(tmp_path: Path) -> None:
    with pytest.raises(ClusterNotRunning, match="failsafe up --dir"):
        ClusterDir(tmp_path / "nowhere").load()


def test_corrupt_state_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "failsafe-state.json").write_text("{not json")
    with pytest.raises(UserError, match="failsafe clean"):
        ClusterDir(tmp_path).load()


def test_cluster_id_is_a_kafka_uuid() -> None:
    for _ in range(200):
        cid = new_cluster_id()
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cid)
        assert not cid.startswith("-")


def test_paths_follow_the_seed_layout(tmp_path: Path) -> None:
    cdir = ClusterDir(tmp_path)
    node = ClusterSpec().brokers_nodes()[2]
    assert cdir.config_file(node) == tmp_path / "server-2.properties"
    assert cdir.data_dir(node) == tmp_path / "kafka-2"
    assert cdir.log_file(node) == tmp_path / "logs" / "server-2.log"
    assert cdir.pidfile(node) == tmp_path / "pids" / "server-2.pid"


# -- a state file failsafe cannot read: one line naming it and saying to clean, never a traceback ---------------
def _valid_state() -> dict:
    return ClusterState(ClusterSpec(), "AAAAAAAAAAAAAAAAAAAAAA", "2026-01-01T00:00:00Z").to_json()


def _without(data: dict, key: str) -> dict:
    return {k: v for k, v in data.items() if k != key}


def _with_spec(**fields: object) -> dict:
    data = _valid_state()
    return {**data, "spec": {**data["spec"], **fields}}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ([1, 2], "it holds no JSON object"),
        (_without(_valid_state(), "spec"), "'spec' is missing"),
        (_without(_valid_state(), "cluster_id"), "'cluster_id' is missing"),
        ({**_valid_state(), "created_at": 17}, "'created_at' is 17, not a string"),
        ({**_valid_state(), "spec": "kraft"}, "its spec is a string, not an object"),
        (_with_spec(brokers="three"), "spec.brokers is 'three', not a whole number"),
        (_with_spec(brokers=True), "spec.brokers is True, not a whole number"),
        (_with_spec(controller_base_port="9192"), "spec.controller_base_port is '9192', not a whole number or null"),
        (_with_spec(combined="yes"), "spec.combined is 'yes', not true or false"),
        (
            _with_spec(overrides={"min.insync.replicas": 2}),
            "spec.overrides is {'min.insync.replicas': 2}, not an object of strings",
        ),
        (_with_spec(jvm_options="-Xss1m"), "spec.jvm_options is '-Xss1m', not a list of strings"),
        (_with_spec(mode="raft"), "spec.mode is 'raft', not one of kraft, zookeeper, migrating"),
        (_with_spec(brokerz=3), "spec.brokerz is not a field of a cluster spec"),
    ],
)
def test_a_state_file_with_keys_missing_or_of_the_wrong_type_is_one_user_error(
    tmp_path: Path, data: object, reason: str
) -> None:
    (tmp_path / "failsafe-state.json").write_text(json.dumps(data))
    with pytest.raises(UnreadableState) as caught:
        ClusterDir(tmp_path).load()
    message = str(caught.value)
    assert isinstance(caught.value, UserError) and "\n" not in message
    assert (
        message
        == f"{tmp_path / 'failsafe-state.json'} is unreadable ({reason}): run 'failsafe clean --dir {tmp_path}' "
        f"and start again"
    )


def test_another_state_format_says_to_clean(tmp_path: Path) -> None:
    (tmp_path / "failsafe-state.json").write_text(json.dumps({**_valid_state(), "format": 2}))
    with pytest.raises(UnreadableState, match=r"state format 2, this failsafe reads 1: run 'failsafe clean --dir"):
        ClusterDir(tmp_path).load()


def test_an_older_state_file_without_the_newer_fields_still_loads(tmp_path: Path) -> None:
    old_spec = {
        "brokers": 3,
        "controllers": 1,
        "combined": False,
        "base_port": 9092,
        "controller_base_port": None,
        "first_broker_id": 0,
        "first_controller_id": 1000,
        "kafka_version": "4.3.1",
        "heap": "1G",
        "overrides": {},
    }
    (tmp_path / "failsafe-state.json").write_text(
        json.dumps({"format": 1, "cluster_id": "x", "created_at": "t", "spec": old_spec})
    )
    spec = ClusterDir(tmp_path).load().spec
    assert spec.mode == "kraft" and spec.jvm_options == () and spec.racks == 0
    assert spec.node_addresses is False  # made before nodes had their own addresses: its configs have none


def test_every_spec_field_has_a_json_type() -> None:
    from dataclasses import fields

    from failsafe.cluster.spec import JSON_TYPES

    assert {f.name for f in fields(ClusterSpec) if f.type not in JSON_TYPES} == set()
    spec = ClusterSpec.zookeeper_mode(zookeepers=3, overrides={"a": "b"}, jvm_options=("-Xss1m",), racks=3)
    assert ClusterSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_clean_deletes_a_cluster_whose_state_is_unreadable_and_stops_what_its_pidfiles_track(tmp_path: Path) -> None:
    import sys

    from failsafe.cluster.topology.lifecycle import clean
    from failsafe.supervisor import read_pidfile, spawn

    root = tmp_path / "cluster"
    cdir = ClusterDir(root)
    cdir.save(ClusterState(ClusterSpec(), "AAAAAAAAAAAAAAAAAAAAAA", "now"))
    cdir.pids_dir.mkdir()
    # Stands in for a node: a process of its own session with a pidfile, as every node is started.
    spawn(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        name="server-0",
        pidfile=cdir.pids_dir / "server-0.pid",
        dies_with_parent=False,
    )
    tracked = read_pidfile(cdir.pids_dir / "server-0.pid")
    assert tracked is not None and tracked.alive()
    cdir.state_file.write_text('{"format": 1, "spec": {}}')
    with pytest.raises(UnreadableState):
        cdir.load()
    clean(root, timeout_s=10)
    assert not root.exists()
    assert not tracked.alive()
