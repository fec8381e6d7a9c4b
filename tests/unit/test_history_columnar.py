"""The columnar copy of a history: used only while history.jsonl is unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import polars as pl

from failsafe.history.columnar import FRAMES_DIR
from failsafe.history.load import load_history
from tests.unit.test_checker_builders import poll, rec, send


def write(path: Path, ops: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(op) + b"\n" for op in ops))


def test_a_recheck_reads_the_copy_and_an_edit_invalidates_it(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    write(path, [*send("p0", 1, "a", 0), poll("c0", [rec(0, "a")], ms=5)])
    first = load_history(path, columnar_copy=True)
    assert (tmp_path / FRAMES_DIR / "sends.parquet").is_file()
    again = load_history(path, columnar_copy=True)
    for name in ("sends", "reads", "topology", "faults"):
        assert getattr(again, name).equals(getattr(first, name)), name
    assert again.op_count == first.op_count == 3

    # The copy must never hide an edit of the history: remove the read, keep the size and mtime apart.
    write(path, [*send("p0", 1, "a", 0)])
    edited = load_history(path, columnar_copy=True)
    assert edited.reads.height == 0 and edited.op_count == 2


def test_a_copy_from_another_file_with_the_same_size_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    write(path, [*send("p0", 1, "a", 0)])
    load_history(path, columnar_copy=True)
    st = path.stat()
    write(path, [*send("p0", 1, "b", 0)])  # same length, other value
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert load_history(path, columnar_copy=True).sends["value"].to_list() == ["b"]


def test_without_the_option_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    write(path, [*send("p0", 1, "a", 0)])
    assert load_history(path).sends.select(pl.len()).item() == 1
    assert not (tmp_path / FRAMES_DIR).exists()


def test_no_copy_is_written_for_a_file_that_changed_after_it_was_read(tmp_path: Path) -> None:
    from failsafe.history.columnar import read_frames, source_of, write_frames

    path = tmp_path / "history.jsonl"
    write(path, [*send("p0", 1, "a", 0)])
    source = source_of(path)
    history = load_history(path)
    with path.open("ab") as f:
        f.write(orjson.dumps(poll("c0", [rec(0, "a")], ms=5)) + b"\n")
    assert not write_frames(path, history, source)
    assert read_frames(path) is None and not (tmp_path / FRAMES_DIR).exists()
    assert write_frames(path, load_history(path), source_of(path))
    assert read_frames(path) is not None
