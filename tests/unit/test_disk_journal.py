"""The disk layer's journals on a plain directory, without FUSE: what a loss keeps and what it takes."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from failsafe.disk.data import DataJournal
from failsafe.disk.names import STASH, NameJournal


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def _write(journal: DataJournal, fd: int, data: bytes, offset: int) -> None:
    journal.write(fd, os.fstat(fd).st_ino, data, offset, "f")


def _sync(journal: DataJournal, fd: int) -> None:
    journal.sync(os.fstat(fd).st_ino)


def _durable(data: bytes, fd: int) -> DataJournal:
    """A journal of a file that holds ``data``, fsynced."""
    journal = DataJournal()
    _write(journal, fd, data, 0)
    _sync(journal, fd)
    return journal


@pytest.fixture
def file(tmp_path: Path):
    fd = _open(tmp_path / "f")
    yield tmp_path / "f", fd
    os.close(fd)


def test_synced_writes_survive_and_unsynced_appends_are_lost(file) -> None:
    path, fd = file
    journal = _durable(b"synced", fd)
    _write(journal, fd, b"-lost", 6)
    assert path.read_bytes() == b"synced-lost"  # the live file has it until the cut
    assert journal.lose() == (1, [])
    assert path.read_bytes() == b"synced"
    assert journal.pending() == {"files": 0, "bytes": 0}


def test_overwrites_and_truncations_of_durable_bytes_are_put_back(file) -> None:
    path, fd = file
    journal = _durable(b"0123456789", fd)
    _write(journal, fd, b"ab", 2)
    _write(journal, fd, b"XYZW", 1)  # overlaps the first overwrite and reaches into bytes not yet saved
    journal.truncate(fd, os.fstat(fd).st_ino, 4)
    _write(journal, fd, b"tail", 20)
    journal.lose()
    assert path.read_bytes() == b"0123456789"


def test_a_torn_write_leaves_a_proper_prefix_of_the_last_write_only(file) -> None:
    path, fd = file
    journal = _durable(b"durable|", fd)
    _write(journal, fd, b"first-unsynced|", 8)
    last = b"the-last-write-of-the-file"
    _write(journal, fd, last, 23)
    files, tears = journal.lose(torn=True, rng=random.Random(7))
    assert files == 1 and len(tears) == 1
    kept = tears[0].kept
    assert 0 < kept < len(last)
    # The earlier unsynced write is lost (a hole of zeros), the last one survives as a prefix.
    assert path.read_bytes() == b"durable|" + b"\0" * 15 + last[:kept]
    again = DataJournal()
    _write(again, fd, b"x" * 15, 8)
    _write(again, fd, last, 23)
    assert again.lose(torn=True, rng=random.Random(7))[1][0].kept == kept  # same seed, same cut


def test_a_sync_makes_everything_so_far_durable_and_later_writes_still_count(file) -> None:
    path, fd = file
    journal = _durable(b"a" * 4, fd)
    _write(journal, fd, b"b" * 4, 4)
    _sync(journal, fd)
    _write(journal, fd, b"c" * 4, 0)
    journal.lose()
    assert path.read_bytes() == b"aaaabbbb"


# -- directories
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture
def backing(tmp_path: Path) -> Path:
    root = tmp_path / "backing"
    root.mkdir()
    (root / "old").write_text("durable")
    return root


def _ino(path: Path) -> int:
    return os.stat(path).st_ino


def test_a_created_file_is_lost_unless_its_directory_is_fsynced(backing: Path) -> None:
    names = NameJournal(backing)
    (backing / "kept").write_text("x")
    names.created(".", "kept")
    names.sync_dir(_ino(backing))
    (backing / "lost").write_text("y")
    names.created(".", "lost")
    assert names.lose() == 1
    assert sorted(p.name for p in backing.iterdir()) == [STASH, "kept", "old"]


def test_a_rename_survives_only_after_a_directory_fsync(backing: Path) -> None:
    names = NameJournal(backing)
    (backing / "other").write_text("replaced")
    names.rename(".", "old", ".", "other")  # replaces "other"
    assert (backing / "other").read_text() == "durable"
    names.lose()
    assert (backing / "old").read_text() == "durable" and (backing / "other").read_text() == "replaced"
    names.rename(".", "old", ".", "new")
    names.sync_dir(_ino(backing))
    names.lose()
    assert (backing / "new").read_text() == "durable" and not (backing / "old").exists()


def test_unlink_and_rmdir_come_back_until_made_durable(backing: Path) -> None:
    names = NameJournal(backing)
    (backing / "d").mkdir()
    names.created(".", "d")
    names.sync_dir(_ino(backing))
    with pytest.raises(IsADirectoryError):
        names.remove(".", "d", is_dir=False)
    names.remove(".", "old", is_dir=False)
    names.remove(".", "d", is_dir=True)
    assert not (backing / "old").exists() and not (backing / "d").exists()
    assert names.lose() == 2
    assert (backing / "old").read_text() == "durable" and (backing / "d").is_dir()
    names.remove(".", "old", is_dir=False)
    names.sync_dir(_ino(backing))
    names.lose()
    assert not (backing / "old").exists() and list((backing / STASH).iterdir()) == []


def test_a_new_directory_goes_with_everything_in_it_even_if_that_was_synced(backing: Path) -> None:
    names = NameJournal(backing)
    (backing / "topic-0").mkdir()
    names.created(".", "topic-0")
    (backing / "topic-0" / "00.log").write_text("x")
    names.created("topic-0", "00.log")
    names.sync_dir(_ino(backing / "topic-0"))  # the file's entry is durable, the directory's is not
    names.lose()
    assert not (backing / "topic-0").exists()


def test_a_change_made_durable_later_wins_over_the_undo_of_an_earlier_one(backing: Path) -> None:
    names = NameJournal(backing)
    (backing / "a").mkdir()
    (backing / "b").mkdir()
    names.rename(".", "old", "a", "x")  # pending in . and a
    names.rename("a", "x", "b", "y")  # made durable by b's fsync
    names.sync_dir(_ino(backing / "b"))
    names.lose()
    assert (backing / "b" / "y").read_text() == "durable" and not (backing / "old").exists()


def test_close_keeps_the_live_state_and_removes_the_stash(backing: Path) -> None:
    names = NameJournal(backing)
    names.remove(".", "old", is_dir=False)
    names.close()
    assert list(backing.iterdir()) == []
