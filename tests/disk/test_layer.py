"""The disk layer alone, mounted for real (no Kafka): what a power cut keeps, what it takes, and that nothing stays
mounted."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from failsafe.disk import DiskLayer, find_layers, is_mounted, mount, unavailable_reason, unmount_all
from failsafe.disk.names import STASH
from failsafe.supervisor import TrackedProcess

UNAVAILABLE = unavailable_reason()
pytestmark = [pytest.mark.fuse, pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")]


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
    assert (
        mnt / "00.log"
    ).read_bytes() == b"acked-and-flushed|acked-in-page-cache-only"  # read-your-writes while mounted
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
    # Kafka creates a partition's directory and fsyncs the segment in it (flush.messages=1), not the log dir: on ext4
    # the fsync commits the journal and the directory with it; POSIX alone promises nothing for the directory's entry.
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


def _errno(call: Callable[[], object]) -> str | None:
    """The name of the errno ``call`` failed with, or None when it worked."""
    try:
        call()
    except OSError as e:
        return errno.errorcode[e.errno]
    return None


def _read_fresh(path: Path) -> bytes:
    return path.read_bytes()  # a new open: FUSE drops the file's cached pages, so the read reaches the layer


# -- injected errors
# ------------------------------------------------------------------------------------------------------
def test_a_full_disk_refuses_growth_and_new_names_keeps_overwrites_and_recovers_on_clear(
    layer: DiskLayer, dirs
) -> None:
    _, mnt, _ = dirs
    _append(mnt / "00.log", b"0123456789", sync=True)
    _append(mnt / "old.log", b"deletable")
    assert layer.inject("full") == {"injection": {"full": True, "error": None, "slow": None, "corrupt": None}}
    fd = os.open(mnt / "00.log", os.O_RDWR)
    try:
        assert _errno(lambda: os.pwrite(fd, b"more", 10)) == "ENOSPC"  # an append
        assert _errno(lambda: os.pwrite(fd, b"AB", 0)) is None  # in place
        assert _errno(lambda: os.pwrite(fd, b"wide", 8)) == "ENOSPC"  # partly past the end: refused whole
        assert _errno(lambda: os.posix_fallocate(fd, 0, 4096)) == "ENOSPC"
        assert _errno(lambda: os.fsync(fd)) is None
        assert (
            _errno(lambda: os.ftruncate(fd, 1 << 20)) is None
        )  # a truncation up leaves a hole and takes no space, as on ext4
        assert _errno(lambda: os.pwrite(fd, b"h", 1 << 19)) == "ENOSPC"  # but writing into the hole needs space
        assert _errno(lambda: os.ftruncate(fd, 10)) is None
    finally:
        os.close(fd)
    assert _read_fresh(mnt / "00.log") == b"AB23456789"
    assert _errno(lambda: (mnt / "01.log").write_bytes(b"")) == "ENOSPC"
    assert _errno(lambda: (mnt / "d").mkdir()) == "ENOSPC"
    assert _errno(lambda: (mnt / "00.log").rename(mnt / "00.log.deleted")) is None
    assert _errno(lambda: (mnt / "old.log").unlink()) is None
    assert sorted(os.listdir(mnt)) == ["00.log.deleted"]
    status = layer.status()
    assert status["injection"] == {"full": True, "error": None, "slow": None, "corrupt": None}
    assert {op: n for op, n in status["failed"]["full"].items() if n} == {
        "write": 3,
        "fallocate": 1,
        "create": 1,
        "mkdir": 1,
    }
    assert not any(status["failed"]["error"].values())
    assert layer.clear_injection() == {
        "cleared": ["full"],
        "injection": {"full": False, "error": None, "slow": None, "corrupt": None},
    }
    _append(mnt / "00.log.deleted", b"+grown")
    _append(mnt / "01.log", b"new")
    (mnt / "d").mkdir()
    assert _read_fresh(mnt / "00.log.deleted") == b"AB23456789+grown"
    assert layer.status()["failed"]["full"]["write"] == 3  # counted from the mount on, not reset by a clear


def test_statfs_shows_no_free_block_while_full(layer: DiskLayer, dirs) -> None:
    _, mnt, _ = dirs
    assert os.statvfs(mnt).f_bavail > 0  # the backing filesystem has room, or the check below would prove nothing
    layer.inject("full")
    st = os.statvfs(mnt)
    assert (st.f_bavail, st.f_bfree) == (0, 0) and st.f_blocks > 0
    layer.clear_injection("full")
    assert os.statvfs(mnt).f_bavail > 0


@pytest.mark.parametrize("ops", ["read", "write", "both"])
def test_a_failing_disk_fails_reads_writes_and_fsyncs_as_chosen(layer: DiskLayer, dirs, ops: str) -> None:
    _, mnt, _ = dirs
    _append(mnt / "00.log", b"durable", sync=True)
    reads, writes = ops in ("read", "both"), ops in ("write", "both")
    fd = os.open(mnt / "00.log", os.O_WRONLY)
    try:
        layer.inject("error", ops=ops)
        assert _errno(lambda: _read_fresh(mnt / "00.log")) == ("EIO" if reads else None)
        assert _errno(lambda: os.pwrite(fd, b"D", 0)) == ("EIO" if writes else None)
        assert _errno(lambda: os.ftruncate(fd, 7)) == ("EIO" if writes else None)
        assert _errno(lambda: os.fsync(fd)) == ("EIO" if writes else None)
        assert _errno(lambda: os.fdatasync(fd)) == ("EIO" if writes else None)
        assert _errno(lambda: _fsync_dir(mnt)) == ("EIO" if writes else None)
        assert _errno(lambda: os.stat(mnt / "00.log")) is None  # metadata is not failed
        failed = layer.status()["failed"]
        # one read(2) may be two FUSE reads (the kernel retries a failed readahead), so reads are counted as "some"
        assert failed["error"]["read"] > 0 if reads else failed["error"]["read"] == 0
        writing = ("write", "truncate", "fsync", "fdatasync", "fsyncdir")
        assert {op: failed["error"][op] for op in writing} == dict.fromkeys(writing, int(writes))
        assert layer.clear_injection("error")["cleared"] == ["error"]
        assert _errno(lambda: os.pwrite(fd, b"!", 7)) is None and _errno(lambda: os.fsync(fd)) is None
    finally:
        os.close(fd)
    assert _read_fresh(mnt / "00.log") == (b"durable!" if writes else b"Durable!")


def test_an_error_glob_fails_only_the_matching_files(layer: DiskLayer, dirs) -> None:
    _, mnt, _ = dirs
    (mnt / "p-0").mkdir()
    for name in ("p-0/00.log", "p-0/00.index", "top.log"):
        _append(mnt / name, b"data", sync=True)
    layer.inject("error", glob="*.log")  # "*" matches "/" too: segment files at any depth
    assert _errno(lambda: _read_fresh(mnt / "p-0/00.log")) == "EIO"
    assert _errno(lambda: _read_fresh(mnt / "top.log")) == "EIO"
    assert _errno(lambda: _append(mnt / "p-0/00.log", b"+")) == "EIO"
    assert _errno(lambda: _read_fresh(mnt / "p-0/00.index")) is None
    assert _errno(lambda: _append(mnt / "p-0/00.index", b"+", sync=True)) is None
    assert _errno(lambda: _fsync_dir(mnt / "p-0")) is None  # the directory's name does not match
    layer.inject("error", glob="p-0/*")  # replaces the first; matched against the path under the mountpoint
    assert layer.status()["injection"]["error"] == {"ops": "both", "glob": "p-0/*"}
    assert _errno(lambda: _read_fresh(mnt / "top.log")) is None
    assert _errno(lambda: _read_fresh(mnt / "p-0/00.index")) == "EIO"


def test_reads_of_cached_pages_do_not_reach_a_failing_disk_until_the_file_is_opened_again(
    layer: DiskLayer, dirs
) -> None:
    _, mnt, _ = dirs
    _append(mnt / "00.log", b"x" * 8192, sync=True)
    fd = os.open(mnt / "00.log", os.O_RDONLY)
    try:
        assert os.pread(fd, 8192, 0) == b"x" * 8192
        layer.inject("error", ops="read")
        assert os.pread(fd, 8192, 0) == b"x" * 8192  # the kernel's page cache answers: the layer never sees the read
        assert layer.status()["failed"]["error"]["read"] == 0
        assert _errno(lambda: _read_fresh(mnt / "00.log")) == "EIO"
        assert _errno(lambda: os.pread(fd, 8192, 0)) == "EIO"  # that open dropped the cached pages for every descriptor
    finally:
        os.close(fd)


def test_a_failed_fsync_makes_nothing_durable(layer: DiskLayer, dirs) -> None:
    backing, mnt, _ = dirs
    _append(mnt / "00.log", b"durable|", sync=True)
    _fsync_dir(mnt)
    _append(mnt / "00.log", b"acked")
    layer.inject("error", ops="write")
    fd = os.open(mnt / "00.log", os.O_RDONLY)
    try:
        assert _errno(lambda: os.fsync(fd)) == "EIO"
    finally:
        os.close(fd)
    assert layer.lose_unsynced()["bytes_lost"] == 5
    assert (backing / "00.log").read_bytes() == b"durable|"


def test_a_full_disk_can_lose_power_and_comes_back_with_space(layer: DiskLayer, dirs) -> None:
    backing, mnt, state = dirs
    _append(mnt / "00.log", b"durable|", sync=True)
    _fsync_dir(mnt)
    _append(mnt / "00.log", b"unsynced")
    layer.inject("full")
    fd = os.open(mnt / "00.log", os.O_RDWR)
    try:
        assert _errno(lambda: os.pwrite(fd, b"OVER", 0)) is None  # in place, unsynced: the loss must put "dura" back
        assert _errno(lambda: os.pwrite(fd, b"more", 16)) == "ENOSPC"
    finally:
        os.close(fd)
    assert _read_fresh(mnt / "00.log") == b"OVERble|unsynced"
    lost = layer.lose_unsynced()
    assert lost["files_rolled_back"] == 1 and lost["bytes_lost"] == 12
    assert (backing / "00.log").read_bytes() == b"durable|"
    again = mount(backing, mnt, state_dir=state, dies_with_parent=True)  # the injection lived in the old daemon only
    assert again.status()["injection"] == {"full": False, "error": None, "slow": None, "corrupt": None}
    _append(mnt / "00.log", b"after")
    assert _read_fresh(mnt / "00.log") == b"durable|after"
    again.unmount()


_OWNER = """
import sys
import time
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


def test_a_slow_disk_makes_each_write_and_sync_wait_and_counts_them(layer: DiskLayer, dirs) -> None:
    backing, mnt, state = dirs
    _append(mnt / "00.log", b"before", sync=True)
    layer.inject("slow", ops="sync", delay_ms=200.0)
    fd = os.open(mnt / "00.log", os.O_WRONLY | os.O_APPEND)
    try:
        began = time.monotonic()
        os.write(fd, b"x" * 4096)  # writes are not slowed: ops="sync"
        wrote_s = time.monotonic() - began
        began = time.monotonic()
        os.fsync(fd)
        synced_s = time.monotonic() - began
    finally:
        os.close(fd)
    assert wrote_s < 0.2 <= synced_s, (wrote_s, synced_s)
    status = layer.status()
    assert status["injection"]["slow"] == {"ops": "sync", "glob": None, "delay_ms": 200.0, "rate_mb_s": None}
    assert status["slowed"]["ops"] >= 1 and status["slowed"]["waited_s"] >= 0.2
    # A throughput cap: 1 MB at 4 MB/s takes at least a quarter of a second more than at full speed.
    layer.inject("slow", ops="write", rate_mb_s=4.0)
    began = time.monotonic()
    _append(mnt / "01.log", b"y" * 1_000_000)
    assert time.monotonic() - began >= 0.25
    assert layer.clear_injection("slow")["cleared"] == ["slow"]
    began = time.monotonic()
    _append(mnt / "02.log", b"z" * 1_000_000, sync=True)
    assert time.monotonic() - began < 0.25


def test_a_disk_that_reads_back_wrong_bytes_leaves_the_file_as_it_was(layer: DiskLayer, dirs) -> None:
    backing, mnt, state = dirs
    data = bytes(range(256)) * 64
    (mnt / "t-0").mkdir()
    _append(mnt / "t-0" / "00.log", data, sync=True)
    _append(mnt / "other.log", data, sync=True)
    layer.inject("corrupt", ops="read", glob="t-0/*.log", bits=3, seed=5)
    wrong = _read_fresh(mnt / "t-0" / "00.log")
    assert len(wrong) == len(data) and wrong != data
    assert sum(bin(a ^ b).count("1") for a, b in zip(wrong, data, strict=True)) >= 3  # 3 bits in each read's range
    assert _read_fresh(mnt / "t-0" / "00.log") == wrong  # the same read gives the same wrong bytes
    assert _read_fresh(mnt / "other.log") == data  # files the glob does not match read right
    assert (backing / "t-0" / "00.log").read_bytes() == data  # and the disk holds what was written
    assert layer.status()["corrupted"]["reads"] >= 1
    layer.clear_injection("corrupt")
    assert _read_fresh(mnt / "t-0" / "00.log") == data
