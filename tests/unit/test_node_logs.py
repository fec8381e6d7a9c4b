"""Node events read from Kafka's and ZooKeeper's own logs (cluster/observe/node_logs.py).

The files under tests/unit/node_logs/ are excerpts of real logs: Kafka 4.3.1 in KRaft mode (controller 1000, broker 1
killed while leading t-0) and Kafka 3.9.2 in ZooKeeper mode (broker 1, the controller and t-2's leader, killed).
Lines no sample run logged are in node_logs/constructed/, written from the messages in Kafka's jars.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from failsafe.cluster.observe.node_logs import read_node_events
from failsafe.history.load import history_from_ops

LOGS = Path(__file__).parent / "node_logs"
KRAFT = {n: LOGS / "kraft-4.3.1" / f"server-{n}.log" for n in (0, 2, 1000)}
ZK = {n: LOGS / "zookeeper-3.9.2" / f"server-{n}.log" for n in (0, 1, 2)}
ZOOKEEPER = {1: LOGS / "zookeeper-3.9.2" / "zookeeper-1.log"}
EVER = (0, 2**62)


def ns(stamp: str) -> int:
    """A log line's time ("2026-11-27 17:30:21,623"), as this machine's local time."""
    second, millis = stamp.split(",")
    return int(datetime.strptime(second, "%Y-%m-%d %H:%M:%S").timestamp()) * 1_000_000_000 + int(millis) * 1_000_000


def brief(ops: list[dict]) -> list[tuple]:
    return [(op["process"], op["event"], op.get("broker"), op.get("topic"), op.get("partition")) for op in ops]


def test_kraft_4_3_1_a_killed_leader_fenced_then_a_new_leader() -> None:
    ops = read_node_events(KRAFT, *EVER)
    assert brief(ops) == [
        ("node-1000", "registered", 1, None, None),
        ("node-1000", "registered", 0, None, None),
        ("node-1000", "registered", 2, None, None),
        ("node-1000", "unfenced", 1, None, None),
        ("node-2", "became-leader", 2, "t", 1),
        ("node-1000", "fenced", 1, None, None),
        ("node-2", "became-leader", 2, "t", 0),
        ("node-1000", "registered", 1, None, None),  # the restart: a new incarnation
        ("node-1000", "unfenced", 1, None, None),
    ]
    fenced = ops[5]
    assert fenced["time_ns"] == ns("2026-11-27 17:30:21,623") and fenced["node"] == 1000 and fenced["type"] == "info"
    assert "Fencing broker 1 at epoch 12 because its session has timed out." in fenced["line"]
    assert ops[6]["time_ns"] == ns("2026-11-27 17:30:21,705")
    assert all(a["time_ns"] <= b["time_ns"] for a, b in zip(ops, ops[1:], strict=False))


def test_only_lines_in_the_window_are_read_each_by_its_millisecond() -> None:
    fence = ns("2026-11-27 17:30:21,623")
    window = brief(read_node_events(KRAFT, ns("2026-11-27 17:30:13,000"), ns("2026-11-27 17:30:25,000")))
    assert window == [("node-1000", "fenced", 1, None, None), ("node-2", "became-leader", 2, "t", 0)]
    # The line was written some time within its millisecond: a window opening inside it still has it.
    assert [op["event"] for op in read_node_events(KRAFT, fence + 500_000, fence + 1_000_000)] == ["fenced"]
    assert read_node_events(KRAFT, fence + 1_000_000, fence + 50_000_000) == []
    assert [op["event"] for op in read_node_events(KRAFT, fence - 50_000_000, fence)] == ["fenced"]


def test_zookeeper_3_9_2_the_controller_broker_killed() -> None:
    ops = brief(
        read_node_events(ZK, ns("2026-11-27 17:30:53,000"), ns("2026-11-27 17:31:30,000"), zookeeper_logs=ZOOKEEPER)
    )
    assert ops == [
        ("zookeeper-1", "zk-disconnected", 1, None, None),  # ZooKeeper saw the killed broker's socket close
        ("zookeeper-1", "zk-session-expired", 1, None, None),  # 18 s later (zookeeper.session.timeout.ms)
        ("node-2", "controller-elected", 2, None, None),
        ("node-2", "broker-gone", 1, None, None),  # the new controller's live set lacks broker 1
        ("node-2", "became-leader", 2, "t", 1),
        ("node-0", "became-leader", 0, "t", 0),
        ("node-0", "became-leader", 0, "t", 2),
        ("node-2", "broker-added", 1, None, None),  # broker 1 restarted
    ]


def test_zookeeper_sessions_no_broker_log_names_are_left_out() -> None:
    ops = read_node_events({}, *EVER, zookeeper_logs=ZOOKEEPER)
    assert ops == [], "session 0x10002d9fa280005 (and every other) belongs to no broker whose log was read"
    without_zookeeper = brief(read_node_events(ZK, ns("2026-11-27 17:31:14,000"), ns("2026-11-27 17:31:15,000")))
    assert ("node-2", "broker-gone", 1, None, None) in without_zookeeper
    assert not [o for o in without_zookeeper if o[1].startswith("zk-")]


def test_the_clusters_first_controller_does_not_find_late_brokers_gone() -> None:
    """At start-up the first controller (epoch 1) saw brokers 1 and 2 only: 0 registered 0.5 s later."""
    ops = brief(read_node_events(ZK, ns("2026-11-27 17:30:46,000"), ns("2026-11-27 17:30:48,000")))
    assert ops == [("node-1", "controller-elected", 1, None, None), ("node-1", "broker-added", 0, None, None)]


CONSTRUCTED = LOGS / "constructed" / "server-5.log"


def test_other_reasons_and_the_3_9_2_kraft_and_zookeeper_messages() -> None:
    assert brief(read_node_events({5: CONSTRUCTED}, *EVER)) == [
        ("node-5", "fenced", 1, None, None),  # 3.9: no "at epoch"
        ("node-5", "controlled-shutdown", 2, None, None),
        ("node-5", "fenced", 2, None, None),  # its shutdown granted once its leaders moved
        ("node-5", "fenced", 0, None, None),  # fencing requested
        (
            "node-5",
            "fenced",
            0,
            None,
            None,
        ),  # an immediate shutdown of an unfenced broker fences it; of a fenced one says nothing
        ("node-5", "broker-gone", 1, None, None),
        ("node-5", "broker-gone", 3, None, None),
        ("node-5", "broker-bounced", 4, None, None),
        ("node-5", "controlled-shutdown", 0, None, None),
        ("node-5", "zk-session-expired", 5, None, None),  # the broker's own session
        ("node-5", "became-leader", 2, "my-topic.v2", 10),
    ]


def test_an_unreadable_log_is_an_event_saying_why_never_an_exception(tmp_path: Path) -> None:
    until = ns("2026-11-27 17:30:25,000")
    ops = read_node_events({**KRAFT, 7: tmp_path / "missing.log", 8: tmp_path}, 0, until)
    unreadable = [op for op in ops if op["event"] == "log-unreadable"]
    assert [(op["node"], op["time_ns"]) for op in unreadable] == [(7, until), (8, until)]
    assert "missing.log: No such file or directory" in unreadable[0]["line"]
    assert "Is a directory" in unreadable[1]["line"]
    assert [op["event"] for op in ops if op["event"] == "fenced"] == ["fenced"], "the readable logs are still read"
    missing_zookeeper = read_node_events({}, 0, until, zookeeper_logs={3: tmp_path / "zookeeper-3.log"})
    assert [(op["process"], op["event"]) for op in missing_zookeeper] == [("zookeeper-3", "log-unreadable")]


def test_the_ops_load_as_the_historys_node_events() -> None:
    ops = read_node_events(ZK, *EVER, zookeeper_logs=ZOOKEEPER)
    frame = history_from_ops(ops).node_events
    assert frame.height == len(ops)
    expired = frame.filter(frame["event"] == "zk-session-expired").row(0, named=True)
    assert (expired["node"], expired["broker"], expired["time_ns"]) == (1, 1, ns("2026-11-27 17:31:14,223"))
    became = frame.filter((frame["event"] == "became-leader") & (frame["partition"] == 2)).row(-1, named=True)
    assert (became["node"], became["broker"], became["time_ns"]) == (0, 0, ns("2026-11-27 17:31:14,473"))


@pytest.fixture
def timezone(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


def test_times_are_this_machines_local_time(timezone) -> None:
    timezone("UTC")
    [utc] = [op["time_ns"] for op in read_node_events(KRAFT, *EVER) if op["event"] == "fenced"]
    assert utc == int(datetime.fromisoformat("2026-11-27T17:30:21.623+00:00").timestamp() * 1000) * 1_000_000
    timezone("Europe/Paris")  # UTC+1 in November
    [paris] = [op["time_ns"] for op in read_node_events(KRAFT, *EVER) if op["event"] == "fenced"]
    assert utc - paris == 3600 * 1_000_000_000


def test_a_kraft_log_is_read_from_the_offset_the_run_began_at(tmp_path) -> None:
    """Lines before the offset (an earlier run's fence) are not read again; the run's own are."""
    from failsafe.cluster.observe.node_logs import read_node_events

    log = tmp_path / "server-1000.log"
    earlier = (
        "[2026-11-27 17:00:00,000] INFO [QuorumController id=1000] Fencing broker 2 at epoch 3 because its "
        "session has timed out. (x)\n"
    )
    later = (
        "[2026-11-27 17:30:21,623] INFO [QuorumController id=1000] Fencing broker 1 at epoch 12 because its "
        "session has timed out. (x)\n"
    )
    log.write_text(earlier + later)
    everything = read_node_events({1000: log}, 0, 2**62)
    assert [op["broker"] for op in everything] == [2, 1]
    assert [op["broker"] for op in read_node_events({1000: log}, 0, 2**62, offsets={log: len(earlier)})] == [1]
    # An offset in the middle of a line skips the rest of that line only.
    assert [op["broker"] for op in read_node_events({1000: log}, 0, 2**62, offsets={log: 10})] == [1]
