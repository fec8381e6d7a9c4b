from __future__ import annotations

import re
from pathlib import Path

import pytest

from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState, new_cluster_id
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
