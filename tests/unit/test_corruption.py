"""Corruption at rest (disk/corrupt.py, faults/corruption.py): each way on a temporary file, seeded, with exactly the
bytes it changed; which file a class names; and what the node's log lines are taken to say."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import failsafe.checkers.measure.storage as storage
from failsafe.campaigns.nemesis import Envelope
from failsafe.campaigns.plan import parse
from failsafe.checkers.explain.context import Context
from failsafe.checkers.explain.words import fault_words
from failsafe.cluster.observe.node_logs import read_node_events
from failsafe.disk import corrupt
from failsafe.faults.corruption import detected, kafka_lines
from failsafe.history.load import history_from_ops
from failsafe.history.ops import Family, NodeEvent, fault_start, fault_stop, node_event

DATA = bytes(range(256)) * 16  # 4096 bytes, every byte value 16 times


@pytest.fixture
def file(tmp_path: Path) -> Path:
    path = tmp_path / "t-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(DATA)
    return path


def _diff(a: bytes, b: bytes) -> list[int]:
    return [i for i in range(min(len(a), len(b))) if a[i] != b[i]]


def test_flip_changes_exactly_its_bits_at_seeded_positions_and_says_which(file: Path) -> None:
    change = corrupt.corrupt(file, "flip", seed=7, bits=5, base=file.parent.parent)
    after = file.read_bytes()
    differing = _diff(DATA, after)
    flipped = sum(bin(DATA[i] ^ after[i]).count("1") for i in differing)
    assert flipped == 5 and len(after) == len(DATA)
    assert change.file == "t-0/00000000000000000000.log" and change.bytes_changed == len(differing)
    assert [r["offset"] for r in change.ranges] == differing  # five single bits: at most five one-byte ranges
    assert all(bytes.fromhex(r["before"]) == DATA[r["offset"] : r["offset"] + 1] for r in change.ranges)
    # Seeded: the same seed flips the same bits; another seed others.
    file.write_bytes(DATA)
    assert corrupt.corrupt(file, "flip", seed=7, bits=5).ranges == change.ranges
    file.write_bytes(DATA)
    assert corrupt.corrupt(file, "flip", seed=8, bits=5).ranges != change.ranges


def test_zero_sets_one_range_to_zero(file: Path) -> None:
    change = corrupt.corrupt(file, "zero", seed=1, length=100)
    after = file.read_bytes()
    start = next(i for i in range(len(DATA)) if after[i : i + 100] == bytes(100) and DATA[i : i + 100] != bytes(100))
    assert after[:start] == DATA[:start] and after[start + 100 :] == DATA[start + 100 :]
    # Only the bytes that were not zero already count as changed.
    assert change.bytes_changed == sum(1 for b in DATA[start : start + 100] if b) and len(after) == len(DATA)


def test_truncate_and_torn_cut_the_file_and_torn_only_its_tail(file: Path) -> None:
    change = corrupt.corrupt(file, "truncate", seed=3)
    after = file.read_bytes()
    assert DATA.startswith(after) and len(after) < len(DATA) and change.size_after == len(after)
    assert change.ranges[-1] == {
        "offset": len(after),
        "length": len(DATA) - len(after),
        "before": DATA[len(after) : len(after) + corrupt.SHOWN_BYTES].hex(),
        "after": "",
    }
    file.write_bytes(DATA)
    torn = corrupt.corrupt(file, "torn", seed=3, length=64)
    assert len(DATA) - 64 <= torn.size_after < len(DATA) and DATA.startswith(file.read_bytes())


def test_stale_puts_the_older_bytes_back(file: Path) -> None:
    older = corrupt.snapshot(file)
    file.write_bytes(DATA + b"newer writes")
    change = corrupt.corrupt(file, "stale", seed=0, older=older)
    assert file.read_bytes() == DATA and change.size_before == len(DATA) + 12 and change.bytes_changed == 12
    with pytest.raises(corrupt.CorruptionError, match="older bytes"):
        corrupt.corrupt(file, "stale", seed=0)


def test_bad_ways_empty_files_and_missing_classes_are_refused_in_words(file: Path, tmp_path: Path) -> None:
    with pytest.raises(corrupt.CorruptionError, match="way 'melt' is not one of"):
        corrupt.corrupt(file, "melt", seed=0)
    file.write_bytes(b"")
    with pytest.raises(corrupt.CorruptionError, match="is empty"):
        corrupt.corrupt(file, "flip", seed=0)
    with pytest.raises(corrupt.CorruptionError, match="holds no segment"):
        corrupt.find(tmp_path, "segment", "t-0")  # its only segment is empty now
    with pytest.raises(corrupt.CorruptionError, match="name the partition"):
        corrupt.find(tmp_path, "index")
    with pytest.raises(corrupt.CorruptionError, match="is not one of"):
        corrupt.find(tmp_path, "wal")


def test_find_takes_the_newest_file_with_data_and_named_files_where_they_live(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"x" * 10)
    (part / "00000000000000000042.log").write_bytes(b"y" * 10)
    (part / "00000000000000000099.log").write_bytes(b"")  # rolled, nothing written yet
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    meta = tmp_path / corrupt.METADATA_DIR
    meta.mkdir()
    (meta / "00000000000000000000-0000000001.checkpoint").write_bytes(b"s")
    (tmp_path / "meta.properties").write_text("node.id=1\n")
    assert corrupt.find(tmp_path, "segment", "t-0").name == "00000000000000000042.log"
    assert corrupt.find(tmp_path, "segment", "t-0", which="oldest").name == "00000000000000000000.log"
    assert corrupt.find(tmp_path, "leader-epoch-checkpoint", "t-0") == part / "leader-epoch-checkpoint"
    assert corrupt.find(tmp_path, "metadata-snapshot").parent == meta
    assert corrupt.find(tmp_path, "meta.properties") == tmp_path / "meta.properties"
    with pytest.raises(corrupt.CorruptionError, match="does not exist"):
        corrupt.find(tmp_path, "partition.metadata", "t-0")


# Lines as Kafka 4.3.1 wrote them after a follower's segment was flipped (a real run of corrupt-follower-segment).
LOG = """\
[2026-11-30 05:02:41,240] INFO [LogLoader partition=c-0, dir=/d/kafka-2] Recovering unflushed segment 0. 0 recovered \
for c-0. (org.apache.kafka.storage.internals.log.LogLoader)
[2026-11-30 05:02:41,250] INFO [KafkaRaftServer nodeId=2] Rebooting (kafka.server.KafkaRaftServer)
[2026-11-30 05:02:41,264] WARN Found invalid messages in log segment /d/kafka-2/c-0/00000000000000000000.log at byte \
offset 0. (org.apache.kafka.storage.internals.log.LogSegment)
[2026-11-30 05:02:41,278] WARN [LogLoader partition=c-0, dir=/d/kafka-2] Corruption found in segment 0, truncating to \
offset 0 (org.apache.kafka.storage.internals.log.LogLoader)
[2026-11-30 05:02:41,300] WARN [RaftManager id=2] Connection to node 3000 could not be established (x)
[2026-11-30 05:02:42,001] ERROR Error while reading checkpoint file /d/kafka-2/replication-offset-checkpoint \
(org.apache.kafka.storage.internals.checkpoint.CheckpointFileWithFailureHandler)
[2026-11-30 05:02:42,005] ERROR Error while reading partition metadata file /d/kafka-2/c-2/partition.metadata \
(org.apache.kafka.storage.internals.log.LogDirFailureChannel)
[2026-11-30 05:02:42,006] ERROR Shutdown broker because all log dirs in /d/kafka-2 have failed (kafka.log.LogManager)
[2026-11-30 05:02:42,010] WARN [LogLoader partition=c-1, dir=/d/kafka-2] Found a corrupted index file corresponding to \
log file /d/kafka-2/c-1/00000000000000000000.log due to Corrupt index found, recovering segment and rebuilding index \
files... (org.apache.kafka.storage.internals.log.LogLoader)
"""


def test_the_quoted_lines_are_the_warnings_about_the_file_first_and_not_other_warnings() -> None:
    lines = kafka_lines(LOG, ["00000000000000000000.log", "c-0"])
    assert [line.split("] ", 1)[1][:30] for line in lines] == [
        "WARN Found invalid messages in",
        "WARN [LogLoader partition=c-0,",
        "ERROR Error while reading chec",  # no name of the file, but an error about a checkpoint: shown
        "ERROR Error while reading part",
        "ERROR Shutdown broker because ",
        "WARN [LogLoader partition=c-1,",
        "INFO [LogLoader partition=c-0,",  # the recovery of the file, an INFO line, after the warnings
    ]
    assert detected(lines) and not detected(lines[-1:])
    assert kafka_lines("[2026-11-30 05:02:41,250] INFO started (x)\n", ["c-0"]) == []


def test_the_storage_events_are_read_from_the_log_with_their_partition(tmp_path: Path) -> None:
    log = tmp_path / "server-2.log"
    log.write_text(LOG)
    events = read_node_events({2: log}, 0, 2**62)
    assert [(e["event"], e["broker"], e.get("topic"), e.get("partition")) for e in events] == [
        ("corruption-found", 2, "c", 0),
        ("log-truncated", 2, "c", 0),
        ("checkpoint-unreadable", 2, None, None),  # the log directory's own file: no partition
        ("checkpoint-unreadable", 2, "c", 2),
        ("log-dir-offline", 2, None, None),
        ("index-rebuilt", 2, "c", 1),
    ]


T0 = 1_790_000_000_000_000_000


def _s(seconds: float) -> int:
    return T0 + int(seconds * 1e9)


def _storage_history(said_at_s: float, node: int = 2) -> dict:
    ops = [
        fault_start(
            1, "corrupt", target="broker", nodes=[2], role="follower of c-0", family=Family.DISK, time_ns=_s(1)
        ),
        fault_stop(1, "corrupt", True, 1, time_ns=_s(7)),
        fault_start(2, "kill", target="broker", nodes=[0], role="any", family=Family.PROCESS, time_ns=_s(20)),
        fault_stop(2, "kill", True, 1, time_ns=_s(25)),
        node_event(node, NodeEvent.CORRUPTION_FOUND, _s(said_at_s), broker=node, topic="c", partition=0, line="L1"),
        node_event(node, NodeEvent.LOG_TRUNCATED, _s(said_at_s + 0.01), broker=node, topic="c", partition=0, line="L2"),
        node_event(1, NodeEvent.FENCED, _s(3), broker=2, line="fenced"),
    ]
    return storage.measure(history_from_ops(ops))


def test_a_disk_fault_is_detected_by_its_own_nodes_storage_lines_and_no_others() -> None:
    got = _storage_history(7.5)
    assert [e["event"] for e in got["events"]] == ["corruption-found", "log-truncated"]  # not the controller's fence
    (fault,) = got["faults"]  # the kill is no disk fault
    assert fault["detected"] and fault["events"] == {"corruption-found": 1, "log-truncated": 1}
    assert fault["first_s"] == 6.5 and fault["first_line"] == "L1"
    # Another node's lines, or lines long after the fault, are not its detection.
    assert not _storage_history(7.5, node=0)["faults"][0]["detected"]
    assert not _storage_history(7 + storage.AFTER_S + 1)["faults"][0]["detected"]


def test_an_explanation_near_a_disk_fault_quotes_what_its_node_said() -> None:
    ops = [
        fault_start(1, "corrupt", target="broker", nodes=[2], role="leader of c-0", family=Family.DISK, time_ns=_s(1)),
        fault_stop(1, "corrupt", True, 1, time_ns=_s(7)),
        node_event(
            2, NodeEvent.LOG_TRUNCATED, _s(7.5), broker=2, line="[2026-11-30 05:02:41,278] WARN Corruption found in x"
        ),
    ]
    ctx = Context.of(history_from_ops(ops), 10.0)
    (fault,) = ctx.faults_near(_s(5))
    assert fault["said"] == "[2026-11-30 05:02:41,278] WARN Corruption found in x"
    assert fault_words(fault).endswith("; its node's log: 'WARN Corruption found in x')")
    assert "its node's log" not in fault_words({**fault, "said": None})


def test_campaigns_draw_corruptions_by_default_and_a_slow_disk_when_asked_with_its_layers() -> None:
    from failsafe.campaigns.nemesis import drawable, drawn_by_default
    from failsafe.campaigns.plan import Plan
    from failsafe.faults.draw import Arena
    from failsafe.faults.registry import FAULT_TYPES

    assert "corrupt" in drawn_by_default() and "disk-slow" in set(drawable()) - set(drawn_by_default())
    arena = Arena(partitions=("t-0", "t-1"))
    rng = random.Random(3)
    for _ in range(50):
        drawn = FAULT_TYPES["corrupt"].draw(rng, arena)
        assert drawn.fields["file"] in corrupt.FILE_CLASSES and drawn.fields["role"] in ("leader", "follower")
        assert (drawn.brokers, drawn.controllers) == (1, 0)  # the node is down while its file is changed
    # A campaign asked for slow disks runs on disk layers, and every drawn schedule parses.
    plan = Plan.make("client-matrix", ("disk-slow", "corrupt"), Envelope.SAFE, 30.0)
    assert plan.scenario.cluster.volatile_disks
    for run in range(10):
        parse(plan.base, plan.nemesis.schedule(5, run), f"check-{run}", plan.workload)


def test_a_preallocated_file_is_damaged_in_its_written_part_not_in_its_zeros(tmp_path: Path) -> None:
    index = tmp_path / "00000000000000000000.index"
    entries = bytes(range(1, 81))  # ten 8-byte entries, then the preallocated zeros
    index.write_bytes(entries + bytes(4016))
    change = corrupt.corrupt(index, "flip", seed=2, bits=16)
    assert all(r["offset"] < 80 for r in change.ranges) and change.size_after == 4096
    index.write_bytes(entries + bytes(4016))
    torn = corrupt.corrupt(index, "torn", seed=2, length=8)
    assert 72 <= torn.size_after < 80  # the tail of the entries torn, the zeros gone with it
    assert corrupt.written_size(bytes(10)) == 10  # zeros only: all of it


@pytest.mark.parametrize("way", ["truncate", "stale"])
def test_a_node_that_refuses_its_corrupted_file_gets_the_original_back_and_starts(tmp_path: Path, way: str) -> None:
    from tests.unit.test_engine import FakeCluster, FakeWorkload, _engine, _ops, run_scenario, spec

    cluster = FakeCluster(failing_restarts=1)  # the undo's first start fails, as a node refusing its file does
    cluster.data_root = tmp_path / "data"
    segment = cluster.data_root / "kafka-1" / "t-1" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True)
    segment.write_bytes(DATA)
    engine = _engine(
        tmp_path, (spec("corrupt", 0.0, 0.01, role="leader", partition="t-1", way=way),), cluster, FakeWorkload()
    )
    run_scenario(engine)
    (stop,) = [s for s in _ops(engine, "fault-stop") if s["ok"]]
    assert stop["details"]["repaired"] and "port in use" in stop["details"]["refused_to_start"]
    # The file as it was before the fault changed it (for stale: as it was when the node was killed), the node up.
    assert segment.read_bytes() == DATA and cluster.not_whole() == []
    assert cluster.restarts == [[1], [1]]
