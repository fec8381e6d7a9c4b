"""The disk layer alone, mounted for real (no Kafka): what a power cut keeps, what it takes, and that nothing stays mounted."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.disk import DiskLayer, find_layers, is_mounted, mount, unmount_all
from failsafe.disk.names import STASH
from failsafe.supervisor import TrackedProcess

pytestmark = pytest.mark.fuse


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    backing, mnt, state = tmp_path / "backing", tmp_path / "mnt", tmp_path / "state"
    for d in (backing, mnt, state):
        d.mkdir()
    yield backing, mnt, state
    unmount_all(state)
    assert not is_mounted(mnt)


@pytest.fixture
def layer(dirs: tuple[Path, Path, Path]) -> DiskLayer:
    backing, mnt, state = dirs
    return mount(backing, mnt, state_dir=state, dies_with_parent=True)


def _append(path: Path, data: bytes, *, sync: bool = False, flags: int = 0) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | flags, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_fsynced_data_survives_a_power_loss_and_unsynced_data_is_gone(layer: DiskLayer, dirs) -> None:
    backing, mnt, state = dirs
    _append(mnt / "00.log", b"acked-and-flushed|", sync=True)
    _fsync_dir(mnt)
    _append(mnt / "00.log", b"acked-in-page-cache-only")
    _append(mnt / "never-synced.log", b"gone")
    assert (mnt / "00.log").read_bytes() == b"acked-and-flushed|acked-in-page-cache-only"  # read-your-writes while mounted
    assert layer.status()["unsynced"] == {"files": 2, "bytes": 28}
    lost = layer.lose_unsynced()
    assert lost["bytes_lost"] == 28 and lost["dir_changes_undone"] == 1
    assert not is_mounted(mnt) and find_layers(state) == []
    assert sorted(p.name for p in backing.iterdir()) == ["00.log"]
    assert (backing / "00.log").read_bytes() == b"acked-and-flushed|"
    again = mount(backing, mnt, state_dir=state, dies_with_parent=True)  # what a restarted node would see
    assert (mnt / "00.log").read_bytes() == b"acked-and-flushed|"
    again.unmount()


def test_a_clean_unmount_keeps_everything_written(layer: DiskLayer, dirs) -> None:
    backing, mnt, _ = dirs
    _append(mnt / "f", b"unsynced but shut down cleanly")
    (mnt / "f").rename(mnt / "g")
    layer.unmount()
    assert sorted(p.name for p in backing.iterdir()) == ["g"]
    assert (backing / "g").read_bytes() == b"unsynced but shut down cleanly"


def test_a_rename_survives_after_an_fsync_of_its_directory_and_not_without(layer: DiskLayer, dirs) -> None:
    backing, mnt, _ = dirs
    for name in ("a.tmp", "b.tmp"):
        _append(mnt / name, b"checkpoint", sync=True)
    _fsync_dir(mnt)
    (mnt / "a.tmp").rename(mnt / "a")
    _fsync_dir(mnt)
    (mnt / "b.tmp").rename(mnt / "b")
    assert sorted(os.listdir(mnt)) == ["a", "b"]  # the stash is hidden from the mounted view
    layer.lose_unsynced()
    assert sorted(p.name for p in backing.iterdir()) == ["a", "b.tmp"]
    assert (backing / "b.tmp").read_bytes() == b"checkpoint"


@pytest.mark.parametrize("metadata", ["journal", "posix"])
def test_a_new_directory_survives_an_fsync_of_a_file_in_it_only_when_metadata_is_journaled(dirs, metadata: str) -> None:
    # Kafka creates a partition's directory and fsyncs the segment in it (flush.messages=1), not the log dir: on ext4 the
    # fsync commits the journal and the directory with it; POSIX alone promises nothing for the directory's entry.
    backing, mnt, state = dirs
    layer = mount(backing, mnt, state_dir=state, dies_with_parent=True, metadata=metadata)
    (mnt / "topic-0").mkdir()
    _append(mnt / "topic-0" / "0.log", b"flushed", sync=True)
    (mnt / "topic-1").mkdir()  # after the last fsync: lost in both modes
    assert layer.status()["metadata"] == metadata
    layer.lose_unsynced()
    if metadata == "journal":
        assert sorted(p.name for p in backing.iterdir()) == ["topic-0"]
        assert (backing / "topic-0" / "0.log").read_bytes() == b"flushed"
    else:
        assert list(backing.iterdir()) == []


def test_a_torn_write_leaves_a_prefix_of_the_last_write(layer: DiskLayer, dirs) -> None:
    backing, mnt, _ = dirs
    _append(mnt / "seg", b"durable|", sync=True)
    _fsync_dir(mnt)
    last = bytes(range(65, 91)) * 4
    _append(mnt / "seg", last)
    lost = layer.lose_unsynced(torn=True, seed=11)
    (tear,) = lost["torn"]
    assert tear["path"] == "/seg" and tear["offset"] == 8 and tear["length"] == len(last)
    assert 0 < tear["kept"] < len(last)
    assert (backing / "seg").read_bytes() == b"durable|" + last[: tear["kept"]]


def test_what_fuse_forwards_o_sync_writes_are_durable_sync_file_range_is_not(layer: DiskLayer, dirs) -> None:
    backing, mnt, _ = dirs
    _append(mnt / "osync", b"written with O_SYNC", flags=os.O_SYNC)
    _append(mnt / "odsync", b"written with O_DSYNC", flags=os.O_DSYNC)
    fd = os.open(mnt / "sfr", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"flushed by sync_file_range")
    libc = ctypes.CDLL(None, use_errno=True)
    # SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER: the kernel answers 0 and sends nothing to a FUSE filesystem
    assert libc.sync_file_range(fd, ctypes.c_int64(0), ctypes.c_int64(0), 7) == 0
    os.close(fd)
    _fsync_dir(mnt)
    calls = layer.status()["calls"]
    assert calls["fsync"] == 1 and calls["fdatasync"] == 1 and calls["sync_writes"] == 2
    layer.lose_unsynced()
    assert (backing / "osync").read_bytes() == b"written with O_SYNC"
    assert (backing / "odsync").read_bytes() == b"written with O_DSYNC"
    assert (backing / "sfr").read_bytes() == b""


_OWNER = """
import sys
from pathlib import Path
from failsafe.disk import mount
mount(Path(sys.argv[1]), Path(sys.argv[2]), state_dir=Path(sys.argv[3]), dies_with_parent=sys.argv[4] == "1")
print("mounted", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("dies_with_parent", [True, False], ids=["daemon-leashed", "daemon-outlives-owner"])
def test_unmount_all_after_a_sigkill_of_the_owner_leaves_nothing_mounted(dirs, dies_with_parent: bool) -> None:
    backing, mnt, state = dirs
    cmd = [sys.executable, "-c", _OWNER, str(backing), str(mnt), str(state), "1" if dies_with_parent else "0"]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as owner:
        try:
            assert owner.stdout is not None and owner.stdout.readline() == b"mounted\n"
            _append(mnt / "f", b"x")
            (mnt / "f").unlink()  # leaves an entry in the stash
            owner.send_signal(signal.SIGKILL)
            assert owner.wait(timeout=10) == -signal.SIGKILL
        finally:
            owner.kill()
    (layer,) = find_layers(state)
    daemon = TrackedProcess(layer.pid, layer.create_time)
    if dies_with_parent:
        daemon.wait_gone(10)  # the leash killed it: its mount is stale until unmount_all
    assert daemon.alive() is not dies_with_parent
    assert (backing / STASH).exists() and is_mounted(mnt)
    assert unmount_all(state) == [str(mnt)]
    assert not is_mounted(mnt) and not daemon.alive()
    assert find_layers(state) == [] and list(backing.iterdir()) == []
