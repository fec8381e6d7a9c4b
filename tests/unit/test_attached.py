"""A cluster failsafe did not start: which faults a run on it can make, said before it starts."""

from __future__ import annotations

from failsafe.cluster.topology.attached import refusal
from failsafe.hosts import inventory

COMMANDS = {"kill": "systemctl kill -s KILL kafka", "start": "systemctl start kafka"}


def inv(commands: dict[str, str]) -> inventory.Inventory:
    return inventory.from_mapping(
        {
            "host": [
                {"name": "k1", "address": "10.0.0.1", "commands": commands},
                {"name": "k2", "address": "10.0.0.2", "commands": commands},
            ]
        },
        "hosts.toml",
    )


def test_a_client_only_run_needs_nothing() -> None:
    assert refusal([("s", "kill-consumer", "client")], None, "b:9092") is None
    assert refusal([], None, "b:9092") is None


def test_network_and_disk_faults_are_refused_in_one_line() -> None:
    why = refusal([("leader-isolated", "isolate", "network")], inv(COMMANDS), "b:9092")
    assert (
        why == "leader-isolated: its isolate fault needs a cluster failsafe started (--attach b:9092 makes no "
        "network fault); run it without --attach"
    )
    assert "makes no disk fault" in (refusal([("p", "power-loss", "disk")], inv(COMMANDS), "b:9092") or "")


def test_process_faults_need_the_inventorys_commands_for_them_and_their_undo() -> None:
    assert refusal([("broker-failover", "kill", "process")], inv(COMMANDS), "b:9092") is None
    assert "needs an inventory" in (refusal([("broker-failover", "kill", "process")], None, "b:9092") or "")
    assert (
        refusal([("b", "kill", "process")], inv({"kill": "x"}), "b:9092")
        == "b: its kill fault needs [host.commands] start on host k1"
    )
    assert (
        refusal([("p", "pause", "process")], inv(COMMANDS), "b:9092")
        == "p: its pause fault needs [host.commands] pause, resume on host k1"
    )
    assert "cannot see" in (refusal([("q", "quorum-loss", "process")], inv(COMMANDS), "b:9092") or "")
