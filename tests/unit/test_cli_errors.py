"""Bad input: one line on stderr naming the problem and the fix, exit code 2, no traceback."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from tests.helpers import assert_one_line_error, free_port_block, run_cli


@pytest.fixture
def stopped_cluster_dir(tmp_path: Path) -> Path:
    """A cluster directory whose nodes are all down (no process needed)."""
    ClusterDir(tmp_path).save(ClusterState(ClusterSpec(base_port=free_port_block(3)), "AAAAAAAAAAAAAAAAAAAAAA", "now"))
    return tmp_path


@pytest.mark.parametrize(
    "command", [["status"], ["down"], ["broker", "kill", "0"], ["topics", "list"], ["consume", "t"], ["groups", "list"]]
)
def test_commands_without_a_cluster_say_how_to_start_one(tmp_path: Path, command: list[str]) -> None:
    result = run_cli(*command, "--dir", str(tmp_path / "none"))
    assert_one_line_error(result, "no failsafe cluster at", "failsafe up")


def test_clean_refuses_a_directory_failsafe_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    assert_one_line_error(run_cli("clean", "--dir", str(tmp_path)), "nothing to clean")
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_unknown_broker_id(stopped_cluster_dir: Path) -> None:
    assert_one_line_error(
        run_cli("broker", "kill", "7", "--dir", str(stopped_cluster_dir)), "no broker with id 7", "0, 1, 2"
    )


def test_controller_id_is_not_a_broker(stopped_cluster_dir: Path) -> None:
    assert_one_line_error(
        run_cli("broker", "pause", "1000", "--dir", str(stopped_cluster_dir)), "no broker with id 1000"
    )


def test_acting_on_a_stopped_broker_says_how_to_start_it(stopped_cluster_dir: Path) -> None:
    assert_one_line_error(
        run_cli("broker", "kill", "1", "--dir", str(stopped_cluster_dir)), "not running", "failsafe broker start 1"
    )


def test_client_commands_on_a_stopped_cluster(stopped_cluster_dir: Path) -> None:
    assert_one_line_error(run_cli("topics", "list", "--dir", str(stopped_cluster_dir)), "no broker", "failsafe up")


def test_status_of_a_stopped_cluster_works(stopped_cluster_dir: Path) -> None:
    result = run_cli("status", "--json", "--dir", str(stopped_cluster_dir))
    assert result.returncode == 0, result.stderr
    assert {n["state"] for n in json.loads(result.stdout)["nodes"]} == {"down"}


def test_unreachable_bootstrap_server_is_a_bounded_wait() -> None:
    port = free_port_block(1)
    result = run_cli("topics", "list", "--bootstrap-server", f"127.0.0.1:{port}", "--timeout-s", "2")
    assert_one_line_error(result, "no Kafka broker answered", f"127.0.0.1:{port}", "within 2s")


def test_invalid_topic_name_is_refused_before_connecting() -> None:
    port = free_port_block(1)
    result = run_cli(
        "topics",
        "create",
        "bad name!",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--bootstrap-server",
        f"127.0.0.1:{port}",
    )
    assert_one_line_error(result, "illegal characters")


def test_malformed_override(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("up", "--dir", str(tmp_path), "--override", "nonsense"), "--override", "key=value")


def test_unknown_option_is_one_line() -> None:
    assert_one_line_error(run_cli("up", "--brokerz", "3"), "No such option", "failsafe up --help")


def test_unsupported_kafka_version(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("up", "--dir", str(tmp_path), "--kafka-version", "2.8.1"), "not supported")


def test_no_java_says_what_to_install(tmp_path: Path) -> None:
    env = {"PATH": os.path.dirname(os.__file__), "JAVA_HOME": ""}
    result = run_cli("setup", env=env)
    assert_one_line_error(result, "no Java found", "install Java 17")


def test_port_in_use_starts_nothing(tmp_path: Path) -> None:
    base = free_port_block(3)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base + 1))
        squatter.listen()
        result = run_cli(
            "up", "--dir", str(tmp_path), "--base-port", str(base), "--controller-base-port", str(free_port_block(1))
        )
    # A port held by another process: failsafe cannot carry it out (exit 5), and says which port and where the details
    # are.
    assert result.returncode == 5, (result.returncode, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert (
        f"port {base + 1}" in line
        and "already in use" in line
        and "(details: " in line
        and "Traceback" not in result.stderr
    )
    assert not (tmp_path / "pids").exists() or not any((tmp_path / "pids").iterdir())


@pytest.mark.parametrize(
    "state",
    [
        '{"format": 1, "cluster_id": "x", "created_at": "t"}',
        '{"format": 1, "cluster_id": "x", "created_at": "t", "spec": {"brokers": "3"}}',
        "[]",
    ],
)
@pytest.mark.parametrize("command", [["status"], ["down"], ["up"], ["broker", "kill", "0"], ["topics", "list"]])
def test_an_unreadable_state_file_is_one_line_saying_to_clean(tmp_path: Path, state: str, command: list[str]) -> None:
    (tmp_path / "failsafe-state.json").write_text(state)
    result = run_cli(*command, "--dir", str(tmp_path))
    assert_one_line_error(
        result, f"{tmp_path / 'failsafe-state.json'} is unreadable", f"failsafe clean --dir {tmp_path}"
    )


def test_clean_deletes_a_directory_whose_state_file_is_unreadable(tmp_path: Path) -> None:
    root = tmp_path / "cluster"
    root.mkdir()
    (root / "failsafe-state.json").write_text('{"format": 1, "spec": {"brokers": "three"}}')
    result = run_cli("clean", "--dir", str(root))
    assert result.returncode == 0, result.stderr
    assert not root.exists()
