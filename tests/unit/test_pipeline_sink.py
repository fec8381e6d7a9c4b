"""Reading a pipeline's output back (real Parquet files, hand-written sink logs) and verifying it against a ledger."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import polars as pl
import pytest
from rich.console import Console

from failsafe.errors import LedgerError, UserError
from failsafe.pipeline.sink import (
    committed_files,
    read_dead_letters,
    read_progress,
    read_sales_rows,
    rows_dropped_by_watermark,
)
from failsafe.pipeline.verify import money, render_verification, verify_output
from tests.unit.test_sales_checker import LEDGER, MALFORMED, letters, sink, total

SALES_ROWS = [  # cumulative totals per batch, as update mode writes them
    total(0, "SF05", 1, 3, "23.94", batch_id=0),
    total(0, "SF05", 2, 4, "28.88", members=1, batch_id=1),
    total(1, "CS01", 1, 2, "9.98", batch_id=1),
]


def write_batch(output: Path, batch_id: int, rows: list[dict], name: str | None = None) -> Path:
    directory = output / "sales_by_product" / (name or f"batch_id={batch_id:012d}")
    directory.mkdir(parents=True)
    frame = sink(*rows).with_columns(
        (pl.col("window_start") + pl.duration(minutes=1)).alias("window_end"),
        pl.lit(batch_id, dtype=pl.Int64).alias("batch_id"),
    )
    frame.write_parquet(directory / "part-00000-c000.snappy.parquet")
    (directory / "_SUCCESS").write_text("")
    (directory / ".part-00000-c000.snappy.parquet.crc").write_bytes(b"crc")
    return directory


def write_sales(output: Path, rows: list[dict]) -> None:
    for batch_id in sorted({row["batch_id"] for row in rows}):
        write_batch(output, batch_id, [row for row in rows if row["batch_id"] == batch_id])


def write_letters(directory: Path, name: str, *positions: tuple[int, int]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"part-{name}.snappy.parquet"
    letters(*positions).write_parquet(path)
    return path


def log_entry(path: Path, action: str = "add", uri: str | None = None) -> dict:
    return {
        "path": uri or f"file://{quote(str(path))}",
        "size": 100,
        "isDir": False,
        "modificationTime": 1,
        "blockReplication": 1,
        "blockSize": 33554432,
        "action": action,
    }


def write_log(directory: Path, name: str, *entries: dict, version: str = "v1") -> None:
    log = directory / "_spark_metadata"
    log.mkdir(parents=True, exist_ok=True)
    (log / name).write_text("\n".join([version, *(json.dumps(entry) for entry in entries)]) + "\n")


def write_ledger(
    directory: Path,
    complete: bool = True,
    purchases: pl.DataFrame = LEDGER,
    malformed: pl.DataFrame = MALFORMED,
    acknowledged: int | None = None,
) -> Path:
    """A ledger as the simulator writes it: ``acknowledged`` counts the purchase rows (malformed records apart)."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {
        "format": 1,
        "seed": 7,
        "instances": 1,
        "complete": complete,
        "acknowledged": purchases.height if acknowledged is None else acknowledged,
        "malformed": malformed.height,
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    purchases.write_parquet(directory / "purchases-00-00000.parquet")
    malformed.write_parquet(directory / "malformed-00-00000.parquet")
    return directory


def full_output(output: Path) -> Path:
    """The output of a clean run that matches LEDGER, with a committed dead letter for MALFORMED."""
    write_sales(output, SALES_ROWS)
    dead = output / "dead_letters"
    write_log(dead, "0", log_entry(write_letters(dead, "a", (1, 0))))
    return output


# sales_by_product


def test_every_row_of_every_batch_is_read_with_its_batch_id(tmp_path: Path) -> None:
    write_sales(tmp_path, SALES_ROWS)
    rows = read_sales_rows(tmp_path).sort("batch_id", "product_id")
    # All cumulative rows, not only the current ones: choosing those is the checker's part.
    assert rows.select("product_id", "purchases", "batch_id").rows() == [("SF05", 1, 0), ("CS01", 1, 1), ("SF05", 2, 1)]
    assert rows.schema["revenue"] == pl.Decimal(18, 2) and rows.schema["window_start"] == pl.Datetime("us", "UTC")


def test_temporary_hidden_and_other_entries_are_not_output(tmp_path: Path) -> None:
    write_sales(tmp_path, SALES_ROWS)
    stray = [total(0, "SF05", 9, 9, "99.00", batch_id=7)]
    write_batch(tmp_path, 7, stray, name="_tmp-000000000007-1a2b3c4d")
    write_batch(tmp_path, 7, stray, name=".batch_id=000000000007")
    write_batch(tmp_path, 7, stray, name="batch_id=000000000007.old")
    (tmp_path / "sales_by_product" / "_commits.jsonl").write_text('{"batch_id": 0}\n')
    rows = read_sales_rows(tmp_path)
    assert rows.height == 3 and rows["batch_id"].unique().sort().to_list() == [0, 1]
    assert rows.filter(pl.col("product_id") == "SF05")["purchases"].sort().to_list() == [1, 2]


def test_a_replayed_batch_under_a_later_id_does_not_count_twice(tmp_path: Path) -> None:
    write_sales(tmp_path, SALES_ROWS)
    last = [row for row in SALES_ROWS if row["batch_id"] == 1]
    # The directory names the batch, whatever batch_id the replayed files carry.
    replay = write_batch(tmp_path, 2, last)
    sink(*last).write_parquet(replay / "part-00000-c000.snappy.parquet")
    replayed = read_sales_rows(tmp_path).filter(pl.col("batch_id") == 2)
    assert replayed.select("product_id", "purchases").rows() == [("SF05", 2), ("CS01", 1)]
    ledger_dir = write_ledger(tmp_path / "ledger")
    write_log(tmp_path / "dead_letters", "0", log_entry(write_letters(tmp_path / "dead_letters", "a", (1, 0))))
    assert verify_output(tmp_path, ledger_dir)["valid"] is True


def test_no_sales_directory_reads_as_no_rows(tmp_path: Path) -> None:
    assert read_sales_rows(tmp_path).height == 0
    (tmp_path / "sales_by_product" / "batch_id=000000000000").mkdir(parents=True)
    empty = read_sales_rows(tmp_path)
    assert empty.height == 0 and empty.schema["revenue"] == pl.Decimal(18, 2) and "batch_id" in empty.columns


# dead_letters and its _spark_metadata log


def test_only_files_the_log_lists_are_dead_letters(tmp_path: Path) -> None:
    dead = tmp_path / "dead_letters"
    committed = write_letters(dead, "a", (1, 0))
    write_letters(dead, "uncommitted", (1, 5))  # a failed batch's file, never logged
    write_log(dead, "0", log_entry(committed))
    assert read_dead_letters(tmp_path).select("partition", "offset").rows() == [(1, 0)]


def test_the_newest_compact_file_and_the_batches_after_it_are_the_log(tmp_path: Path) -> None:
    dead = tmp_path / "dead_letters"
    a, b, c, d, e = (write_letters(dead, name, (1, i)) for i, name in enumerate("abcde"))
    write_log(dead, "0", log_entry(a))
    write_log(dead, "1", log_entry(b))  # superseded by 2.compact, which dropped b after its deletion
    write_log(dead, "1.compact", log_entry(e))  # an older compaction, superseded too
    write_log(dead, "2.compact", log_entry(a), log_entry(c))
    write_log(dead, "3", log_entry(d))
    write_log(dead, "4", log_entry(a, action="delete"))
    (dead / "_spark_metadata" / ".4.crc").write_bytes(b"crc")
    (dead / "_spark_metadata" / ".5.3f2a.tmp").write_text("v1\n" + json.dumps(log_entry(e)))
    assert [p.name for p in committed_files(dead)] == ["part-c.snappy.parquet", "part-d.snappy.parquet"]
    assert sorted(read_dead_letters(tmp_path)["offset"].to_list()) == [2, 3]


def test_percent_encoded_and_single_slash_uris_are_local_files(tmp_path: Path) -> None:
    dead = tmp_path / "out put %" / "dead_letters"
    a, b = write_letters(dead, "a", (1, 0)), write_letters(dead, "b", (1, 1))
    assert "%20" in log_entry(a)["path"]
    write_log(dead, "0", log_entry(a), log_entry(b, uri=f"file:{quote(str(b))}"))
    assert committed_files(dead) == [a, b]


def test_a_moved_output_directory_finds_its_files_by_name(tmp_path: Path) -> None:
    dead = tmp_path / "dead_letters"
    path = write_letters(dead, "a", (1, 0))
    write_log(dead, "0", log_entry(path, uri="file:///elsewhere/run/dead_letters/part-a.snappy.parquet"))
    assert committed_files(dead) == [path]
    write_log(dead, "1", log_entry(path, uri="file:///elsewhere/run/dead_letters/part-gone.snappy.parquet"))
    with pytest.raises(FileNotFoundError, match="part-gone"):
        committed_files(dead)


def test_a_log_of_another_version_or_filesystem_is_refused(tmp_path: Path) -> None:
    dead = tmp_path / "dead_letters"
    path = write_letters(dead, "a", (1, 0))
    write_log(dead, "0", log_entry(path), version="v2")
    with pytest.raises(ValueError, match="starts with 'v1'"):
        committed_files(dead)
    write_log(dead, "0", log_entry(path, uri="hdfs://namenode/x.parquet"))
    with pytest.raises(ValueError, match="only local files"):
        committed_files(dead)


def test_no_log_means_no_dead_letters(tmp_path: Path) -> None:
    write_letters(tmp_path / "dead_letters", "a", (1, 0))
    assert read_dead_letters(tmp_path).height == 0 and read_dead_letters(tmp_path).schema["offset"] == pl.Int64


# progress.jsonl


def test_progress_lines_and_rows_dropped_by_watermark(tmp_path: Path) -> None:
    assert read_progress(tmp_path) == [] and rows_dropped_by_watermark([]) is None
    lines = [
        {"query": "sales-by-product", "batch_id": 0, "rows_dropped_by_watermark": 2},
        {"query": "sales-by-product", "batch_id": 1, "rows_dropped_by_watermark": 3},
        {"query": "sales-by-product", "batch_id": 1, "rows_dropped_by_watermark": 3},  # reported again after a restart
        {"query": "dead-letters", "batch_id": 1, "rows_dropped_by_watermark": None},
    ]
    (tmp_path / "progress.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines) + '{"query": "sales-by-pr'
    )
    progress = read_progress(tmp_path)
    assert len(progress) == 4 and rows_dropped_by_watermark(progress) == 5
    (tmp_path / "progress.jsonl").write_text("{oops\n" + json.dumps(lines[0]) + "\n")
    with pytest.raises(ValueError, match="progress.jsonl:1"):
        read_progress(tmp_path)


# verify_output


def test_a_clean_output_verifies_valid_and_renders(tmp_path: Path) -> None:
    output = full_output(tmp_path / "out")
    (output / "progress.jsonl").write_text(
        json.dumps({"query": "sales-by-product", "batch_id": 1, "rows_dropped_by_watermark": 0}) + "\n"
    )
    result = verify_output(output, write_ledger(tmp_path / "ledger"))
    assert result["valid"] is True, result
    assert result["window_s"] == 60 and result["rows_dropped_by_watermark"] == 0
    assert result["ledger"]["purchase_rows"] == 3 and result["ledger"]["seed"] == 7
    json.dumps(result)  # --json needs no encoder of its own
    console = Console(record=True, width=120)
    render_verification(result, console)
    text = console.export_text()
    assert "VALID" in text and "Totals" in text and "38.86" in text and "No anomalies" in text


def test_lost_purchases_and_dead_letters_verify_invalid_and_render_examples(tmp_path: Path) -> None:
    output = tmp_path / "out"
    write_sales(output, SALES_ROWS[:1])
    (output / "progress.jsonl").write_text(
        json.dumps({"query": "sales-by-product", "batch_id": 0, "rows_dropped_by_watermark": 1}) + "\n"
    )
    result = verify_output(output, write_ledger(tmp_path / "ledger"))
    assert result["valid"] is False
    counts = result["counts"]
    assert (
        counts["undercounted"],
        counts["missing_windows"],
        counts["dead_letters_missing"],
        counts["lost_purchases"],
    ) == (1, 1, 1, 2)
    console = Console(record=True, width=160)
    render_verification(result, console)
    text = console.export_text()
    assert (
        "INVALID" in text and "undercounted" in text and "purchases_lost=1" in text and "dead_letters_missing" in text
    )
    assert "-14.92" in text and "watermark dropped 1" in text


def test_an_output_without_any_batch_against_purchases_is_missing_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    result = verify_output(tmp_path / "out", write_ledger(tmp_path / "ledger", malformed=MALFORMED.head(0)))
    assert result["valid"] is False and result["counts"]["missing_windows"] == 2


def test_the_window_length_comes_from_the_sink(tmp_path: Path) -> None:
    output = tmp_path / "out"
    rows = [total(-2, "SF05", 2, 4, "28.88", members=1, batch_id=0), total(-2, "CS01", 1, 2, "9.98", batch_id=0)]
    directory = write_batch(output, 0, rows)
    sink(*rows).with_columns((pl.col("window_start") + timedelta(minutes=5)).alias("window_end")).write_parquet(
        directory / "part-00000-c000.snappy.parquet"
    )
    result = verify_output(output, write_ledger(tmp_path / "ledger", malformed=MALFORMED.head(0)))
    assert result["window_s"] == 300 and result["valid"] is True, result


def test_an_unreadable_output_is_unknown_with_the_reason(tmp_path: Path) -> None:
    output = full_output(tmp_path / "out")
    write_log(output / "dead_letters", "1", version="v9")
    result = verify_output(output, write_ledger(tmp_path / "ledger"))
    assert result["valid"] == "unknown" and "v9" in result["error"]
    console = Console(record=True, width=120)
    render_verification(result, console)
    text = console.export_text()
    assert "UNKNOWN" in text and "v9" in text


def _refused(output: Path, ledger_dir: Path) -> str:
    """verify_output's one-line LedgerError (exit code 2) for a ledger it must not trust."""
    with pytest.raises(LedgerError) as info:
        verify_output(output, ledger_dir)
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    return str(info.value)


def test_a_missing_or_incomplete_ledger_or_output_is_refused(tmp_path: Path) -> None:
    output = full_output(tmp_path / "out")
    (tmp_path / "empty").mkdir()
    assert "not a sales ledger (no manifest.json)" in _refused(output, tmp_path / "empty")
    assert "no ledger at" in _refused(output, tmp_path / "nowhere")
    assert "incomplete" in _refused(output, write_ledger(tmp_path / "partial", complete=False))
    with pytest.raises(UserError, match="no pipeline output"):
        verify_output(tmp_path / "nowhere", write_ledger(tmp_path / "ledger"))


def test_a_ledger_whose_chunks_disagree_with_its_manifest_is_refused_not_blamed_on_the_pipeline(tmp_path: Path) -> None:
    # verify's own reader used to accept this: a chunk lost from the ledger made a correct sink look overcounted.
    output = full_output(tmp_path / "out")
    lost_chunk = write_ledger(tmp_path / "lost", purchases=LEDGER.head(2), acknowledged=LEDGER.height)
    assert "has 2 acknowledged rows but its manifest says 3" in _refused(output, lost_chunk)
    counted_malformed = write_ledger(tmp_path / "counted", acknowledged=LEDGER.height + MALFORMED.height)
    assert "has 3 acknowledged rows but its manifest says 4" in _refused(output, counted_malformed)


def test_a_ledger_chunk_other_than_the_contract_is_refused(tmp_path: Path) -> None:
    output = full_output(tmp_path / "out")
    assert "has columns" in _refused(output, write_ledger(tmp_path / "missing", purchases=LEDGER.drop("is_member")))
    # verify's own reader used to cast these to the contract's types, or drop the extra column, and go on.
    assert "has columns" in _refused(
        output, write_ledger(tmp_path / "wider", purchases=LEDGER.with_columns(pl.col("quantity").cast(pl.Int64)))
    )
    assert "has columns" in _refused(
        output, write_ledger(tmp_path / "extra", purchases=LEDGER.with_columns(pl.lit("x").alias("note")))
    )


def test_money_is_exact() -> None:
    assert (money(3886), money(-5), money(123456789), money(10, signed=True)) == (
        "38.86",
        "-0.05",
        "1,234,567.89",
        "+0.10",
    )
