"""The ledger: written in chunks, read back as the contract says, and refused when it cannot be trusted."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failsafe.errors import LedgerError
from failsafe.workloads.sales import ledger
from failsafe.workloads.sales.generator import BATCH_SIZE, PurchaseStream, parse_time
from failsafe.workloads.sales.ledger import (
    LedgerWriter,
    malformed_frame,
    prepare,
    purchases_frame,
    read_ledger,
    write_manifest,
)
from failsafe.workloads.sales.simulator import AckTracker, Counters

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
START = parse_time("2024-08-25 13:22:16")
IDS = ["CS01", "SF05", "IS02"]


def manifest(**overrides: object) -> dict:
    return {
        "seed": 1,
        "start_time": "2024-08-25 13:22:16.000000",
        "instances": 1,
        "rate": 0.0,
        "count": None,
        "duration_s": None,
        "bootstrap_servers": "127.0.0.1:9092",
        "topics": {},
        "complete": True,
        "acknowledged": 0,
        "failed": 0,
        "malformed": 0,
        "started_at": "x",
        "finished_at": "y",
        **overrides,
    }


def rows_frame(rows: list[tuple[int, int, int, int, bool, int, int, int]]) -> pl.DataFrame:
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 8
    return purchases_frame(
        np.array(cols[0], dtype=np.uint64),
        np.array(cols[1], dtype=np.int64),
        IDS,
        np.array(cols[2], dtype=np.int16),
        np.array(cols[3], dtype=np.int8),
        np.array(cols[4], dtype=bool),
        np.array(cols[5], dtype=np.int64),
        np.array(cols[6], dtype=np.int32),
        np.array(cols[7], dtype=np.int64),
    )


def write(
    directory: Path,
    rows: list,
    malformed: list[tuple[int, int, str]] = (),
    chunk_rows: int = 3,
    instance: int = 0,
    **overrides: object,
) -> None:
    writer = LedgerWriter(directory, instance, chunk_rows=chunk_rows)
    for i in range(0, len(rows), 2):  # in small pieces, as delivery reports arrive
        writer.add_purchases(rows_frame(rows[i : i + 2]))
    if malformed:
        writer.add_malformed(malformed_frame(*[list(c) for c in zip(*malformed, strict=True)]))
    writer.close()
    write_manifest(directory, manifest(acknowledged=len(rows), malformed=len(malformed), **overrides))


ROWS = [
    (2**63 - 1, START, 1, 3, False, 2394, 2, 0),
    (0, START + 1, 2, 1, True, 494, 5, 7),
    (17, START + 2, 0, 2, True, 898, 5, 8),
    (5274818506363337719, START + 3, 1, 1, True, 718, 0, 3),
    (9, START + 4, 0, 1, False, 499, 1, 1),
]


def test_round_trip_in_chunks_with_the_contract_schema(tmp_path: Path) -> None:
    write(tmp_path, ROWS, malformed=[(3, 11, '{"transaction_time": "2024-')])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "malformed-00-00000.parquet",
        "manifest.json",
        "purchases-00-00000.parquet",
        "purchases-00-00001.parquet",
    ]
    got = read_ledger(tmp_path)
    assert got.purchases.schema == pl.Schema(
        {
            "transaction_id": pl.String,
            "transaction_time": pl.Datetime("us"),
            "product_id": pl.String,
            "quantity": pl.Int32,
            "is_member": pl.Boolean,
            "total_purchase_cents": pl.Int64,
            "partition": pl.Int32,
            "offset": pl.Int64,
        }
    )
    assert got.purchases.row(0) == (
        "9223372036854775807",
        dt.datetime(2024, 8, 25, 13, 22, 16),
        "SF05",
        3,
        False,
        2394,
        2,
        0,
    )
    assert got.purchases["transaction_id"].to_list() == [str(r[0]) for r in ROWS]
    assert got.purchases["product_id"].to_list() == [IDS[r[2]] for r in ROWS]
    assert got.malformed.rows() == [(3, 11, '{"transaction_time": "2024-')]
    assert got.malformed.schema == pl.Schema({"partition": pl.Int32, "offset": pl.Int64, "value": pl.String})
    assert got.manifest["format"] == 1 and got.manifest["acknowledged"] == 5


def test_an_empty_ledger_reads_as_empty_frames(tmp_path: Path) -> None:
    write(tmp_path, [])
    got = read_ledger(tmp_path)
    assert got.purchases.height == 0 and got.purchases.schema == ledger.PURCHASES_SCHEMA
    assert got.malformed.height == 0 and got.malformed.schema == ledger.MALFORMED_SCHEMA


row_strategy = st.tuples(
    st.integers(0, 2**63 - 1),
    st.integers(0, 4 * 10**15),
    st.integers(0, 2),
    st.integers(1, 3),
    st.booleans(),
    st.integers(0, 10**6),
    st.integers(0, 5),
    st.integers(-1, 2**40),
)


@SETTINGS
@given(rows=st.lists(row_strategy, max_size=40), chunk_rows=st.integers(1, 50), instances=st.integers(1, 3))
def test_round_trip_property(
    tmp_path_factory: pytest.TempPathFactory, rows: list, chunk_rows: int, instances: int
) -> None:
    directory = tmp_path_factory.mktemp("ledger")
    for i in range(instances):
        writer = LedgerWriter(directory, i, chunk_rows=chunk_rows)
        writer.add_purchases(rows_frame(rows[i::instances]))
        writer.close()
    write_manifest(directory, manifest(acknowledged=len(rows)))
    got = read_ledger(directory).purchases
    expected = sorted((str(r[0]), r[1], IDS[r[2]], r[3], r[4], r[5], r[6], r[7]) for r in rows)
    assert (
        sorted(
            (t, int((ts - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1)), *rest)
            for t, ts, *rest in got.rows()
        )
        == expected
    )


def _error(directory: Path) -> str:
    with pytest.raises(LedgerError) as info:
        read_ledger(directory)
    assert info.value.exit_code == 2
    return str(info.value)


def test_missing_directory(tmp_path: Path) -> None:
    assert "no ledger at" in _error(tmp_path / "nowhere")


def test_not_a_ledger(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert "not a sales ledger" in _error(tmp_path)
    assert "not a sales ledger" in _error(tmp_path / "notes.txt")


def test_unreadable_or_foreign_manifest(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    assert "not a readable ledger manifest" in _error(tmp_path)
    (tmp_path / "manifest.json").write_bytes(
        b'{"format": 1, "seed": "\xff"}'
    )  # verify's own reader let this UnicodeDecodeError out
    assert "not a readable ledger manifest" in _error(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": 99}))
    assert "format 99" in _error(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps([1]))
    assert "format None" in _error(tmp_path)


def test_incomplete_ledger_is_refused_unless_asked_for(tmp_path: Path) -> None:
    write(tmp_path, ROWS[:2], complete=False)
    assert "incomplete" in _error(tmp_path)
    assert read_ledger(tmp_path, require_complete=False).purchases.height == 2


def test_rows_that_disagree_with_the_manifest(tmp_path: Path) -> None:
    write(tmp_path, ROWS, malformed=[(3, 11, "{")])
    (tmp_path / "purchases-00-00001.parquet").unlink()
    assert "has 4 acknowledged rows but its manifest says 5" in _error(tmp_path)
    # An incomplete ledger is read as far as it was written: its counts are not checked.
    write_manifest(tmp_path, manifest(acknowledged=5, malformed=1, complete=False))
    assert read_ledger(tmp_path, require_complete=False).purchases.height == 4
    # The malformed records are not acknowledged purchases: a manifest that counts them among those is refused.
    both = tmp_path / "both"
    both.mkdir()
    write(both, ROWS[:2], malformed=[(3, 11, "{")])
    write_manifest(both, manifest(acknowledged=3, malformed=1))
    assert "has 2 acknowledged rows but its manifest says 3" in _error(both)


def test_a_chunk_under_another_name_is_not_read_so_the_counts_disagree(tmp_path: Path) -> None:
    write(tmp_path, ROWS[:2])
    (tmp_path / "purchases-00-00000.parquet").rename(tmp_path / "purchases-0-0.parquet")
    assert "has 0 acknowledged rows but its manifest says 2" in _error(tmp_path)


def test_a_file_with_other_columns(tmp_path: Path) -> None:
    write(tmp_path, [])
    pl.DataFrame({"transaction_id": [1]}).write_parquet(tmp_path / "purchases-00-00000.parquet")
    message = _error(tmp_path)
    assert "has columns other than the contract's" in message and "transaction_id is Int64, not String" in message
    assert "is_member is missing" in message and "\n" not in message


def test_a_file_with_castable_types_or_an_extra_column_is_refused_not_converted(tmp_path: Path) -> None:
    # verify's own reader cast these to the contract's types, or dropped the column, and went on.
    good = rows_frame(ROWS[:1])
    variants = {
        "quantity is Int64, not Int32": good.with_columns(pl.col("quantity").cast(pl.Int64)),
        "transaction_time is Datetime(time_unit='us', time_zone='UTC'), not Datetime": good.with_columns(
            pl.col("transaction_time").dt.replace_time_zone("UTC")
        ),
        "note is extra": good.with_columns(pl.lit("x").alias("note")),
    }
    for n, (difference, frame) in enumerate(variants.items()):
        directory = tmp_path / f"ledger-{n}"
        directory.mkdir()
        write(directory, ROWS[:1])
        frame.write_parquet(directory / "purchases-00-00000.parquet")
        assert difference in _error(directory)


def test_prepare_replaces_an_old_ledger_and_refuses_anything_else(tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    write(old, ROWS)
    prepare(old)
    assert list(old.iterdir()) == []
    prepare(tmp_path / "new" / "deeper")
    assert (tmp_path / "new" / "deeper").is_dir()
    write(old, ROWS)
    (old / "precious.csv").write_text("keep me")
    with pytest.raises(LedgerError, match="precious.csv"):
        prepare(old)
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.bin").write_text("x")
    with pytest.raises(LedgerError, match="not a ledger"):
        prepare(other)
    assert (old / "precious.csv").read_text() == "keep me" and (other / "data.bin").exists()


class Report:
    """What a delivery report tells the callback: the record's value, and the partition and offset Kafka gave it."""

    def __init__(self, value: str, partition: int, offset: int) -> None:
        self._value, self._partition, self._offset = value.encode(), partition, offset

    def value(self) -> bytes:
        return self._value

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset


def test_delivery_reports_become_ledger_rows_across_batches(tmp_path: Path) -> None:
    stream = PurchaseStream(6, 0, START, malformed_every=5)
    counters = Counters()
    writer = LedgerWriter(tmp_path, 0, chunk_rows=3000)
    tracker = AckTracker(stream, writer, counters)
    batches = []
    for _ in range(2):
        batch = stream.next_batch()
        entry = tracker.add(batch)
        entry.produced = len(batch)
        batches.append(batch)
    sent = 2 * BATCH_SIZE
    values = [v for b in batches for v in b.values]
    broken = {s for s in range(sent) if (s + 1) % 5 == 0}
    # Reports in an order unlike the sends; a few failures (broken records among them), acks=0 style offsets for some.
    order = np.random.default_rng(1).permutation(sent).tolist()
    failed = set(order[:10]) | {4}
    for n, seq in enumerate(order):
        callback = tracker.on_malformed(seq) if seq in broken else tracker.on_purchase
        report = Report(values[seq], seq % 6, -1001 if seq < 3 else seq)
        callback("REQUEST_TIMED_OUT" if seq in failed else None, report)
        if n == sent // 2:
            tracker.drain(None)
    tracker.drain(None)
    writer.close()
    assert tracker.pending == {}  # every batch resolved and forgotten
    assert counters.failed == len(failed)
    assert counters.malformed == len(broken - failed)
    assert counters.acknowledged == sent - len(broken | failed)
    write_manifest(tmp_path, manifest(acknowledged=counters.acknowledged, malformed=counters.malformed))
    got = read_ledger(tmp_path)
    by_tid = {json.loads(values[s])["transaction_id"]: s for s in range(sent) if s not in broken}
    for tid, partition, offset in got.purchases.select("transaction_id", "partition", "offset").rows():
        seq = by_tid[tid]
        assert seq not in failed and partition == seq % 6 and offset == (-1 if seq < 3 else seq)
    assert sorted(got.malformed["offset"].to_list()) == sorted(s for s in broken - failed)
    assert all(values[o] == v for o, v in got.malformed.select("offset", "value").rows())
