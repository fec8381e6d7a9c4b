"""Reading a pipeline's output directory back, without Spark: the sales rows, the dead letters, progress.

- ``sales_by_product/batch_id=<N>/*.parquet``: one directory per micro-batch, each row the
  cumulative total of its (window_start, product_id) as of batch N. Only ``batch_id=`` directories
  count: ``_tmp-...`` directories (a batch being written) and anything hidden are not output.
  Every row is returned with its batch_id; which row is a key's current total is the checker's
  call (``failsafe.checkers.pipeline.sales``), which this module, being the system under test, never imports.
- ``dead_letters/batch_id=<N>/*.parquet``: the records of micro-batch N that are not purchases,
  written like the sales rows (a replay replaces its batch's directory). Output of failsafe before
  the one-query pipeline has Spark's file sink here instead: its Parquet files count only once
  ``_spark_metadata`` lists them as added, so a file a failed batch left behind is not output.
- ``progress.jsonl``: one line per finished micro-batch per query.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import polars as pl

SALES_DIR = "sales_by_product"
DEAD_LETTERS_DIR = "dead_letters"
SINK_LOG_DIR = "_spark_metadata"
PROGRESS_FILE = "progress.jsonl"
SINK_LOG_VERSION = "v1"

SALES_SCHEMA = {
    "window_start": pl.Datetime("us", "UTC"),
    "window_end": pl.Datetime("us", "UTC"),
    "product_id": pl.String,
    "product_name": pl.String,
    "category": pl.String,
    "purchases": pl.Int64,
    "quantity": pl.Int64,
    "revenue": pl.Decimal(18, 2),
    "member_purchases": pl.Int64,
    "member_share": pl.Float64,
    "batch_id": pl.Int64,
}
DEAD_LETTER_SCHEMA = {
    "topic": pl.String,
    "partition": pl.Int32,
    "offset": pl.Int64,
    "kafka_timestamp": pl.Datetime("us", "UTC"),
    "key": pl.String,
    "value": pl.String,
    "reason": pl.String,
}
_BATCH_DIR = re.compile(r"batch_id=(\d+)")
_LOG_FILE = re.compile(r"(\d+)(\.compact)?")


def read_sales_rows(output_dir: Path | str) -> pl.DataFrame:
    """Every row of every batch directory, its batch_id taken from the directory's name."""
    files = [(batch_id, path) for batch_id, directory in batch_dirs(output_dir) for path in _parquet_files(directory)]
    if not files:
        return pl.DataFrame(schema=SALES_SCHEMA)
    names = pl.DataFrame({"_file": [str(path) for _, path in files], "_batch": [batch_id for batch_id, _ in files]})
    rows = pl.scan_parquet(
        [path for _, path in files],
        glob=False,
        hive_partitioning=False,
        include_file_paths="_file",
        missing_columns="insert",
    ).collect()
    # The directory is the batch: a replay writes batch N again under N's name.
    rows = rows.join(names, on="_file", how="left", maintain_order="left").with_columns(
        pl.col("_batch").cast(pl.Int64).alias("batch_id")
    )
    return rows.drop("_file", "_batch")


def batch_dirs(output_dir: Path | str, sink: str = SALES_DIR) -> list[tuple[int, Path]]:
    """(batch_id, directory) of every ``batch_id=N`` directory of ``sink``, in batch order."""
    root = Path(output_dir) / sink
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        match = _BATCH_DIR.fullmatch(entry.name)
        if match and entry.is_dir():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def _parquet_files(directory: Path) -> list[Path]:
    return sorted(
        p for p in directory.iterdir() if p.suffix == ".parquet" and not p.name.startswith(("_", ".")) and p.is_file()
    )


def read_dead_letters(output_dir: Path | str) -> pl.DataFrame:
    """The dead-letter rows of every ``batch_id=N`` directory, and of every file an older run's file-sink log
    committed."""
    directory = Path(output_dir) / DEAD_LETTERS_DIR
    files = committed_files(directory) + [
        path for _, batch in batch_dirs(output_dir, DEAD_LETTERS_DIR) for path in _parquet_files(batch)
    ]
    if not files:
        return pl.DataFrame(schema=DEAD_LETTER_SCHEMA)
    return pl.scan_parquet(files, glob=False, hive_partitioning=False, missing_columns="insert").collect()


def committed_files(directory: Path | str) -> list[Path]:
    """The files Spark's file-sink log under ``directory/_spark_metadata`` has committed, as local paths.

    The log holds one file per batch (``0``, ``1``, ...); every so many batches the writer folds all
    entries so far into ``N.compact`` and later deletes the files before it, so the live state is the
    newest ``N.compact`` followed by every plain file after N.
    """
    directory = Path(directory)
    log_dir = directory / SINK_LOG_DIR
    if not log_dir.is_dir():
        return []
    batches: dict[int, Path] = {}
    compacts: dict[int, Path] = {}
    for entry in log_dir.iterdir():
        match = _LOG_FILE.fullmatch(entry.name)
        if match and entry.is_file():
            (compacts if match.group(2) else batches)[int(match.group(1))] = entry
    start = max(compacts, default=-1)
    logs = ([compacts[start]] if compacts else []) + [batches[n] for n in sorted(batches) if n > start]
    live: dict[str, None] = {}
    for log in logs:
        for entry in _log_entries(log):
            if entry.get("action", "add") == "delete":
                live.pop(entry["path"], None)
            elif not entry.get("isDir", False):
                live[entry["path"]] = None
    return [_local_file(uri, directory) for uri in live]


def _log_entries(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].strip() != SINK_LOG_VERSION:
        found = lines[0].strip() if lines else "nothing"
        raise ValueError(f"{path}: a file-sink log starts with {SINK_LOG_VERSION!r}, this one with {found!r}")
    return [json.loads(line) for line in lines[1:] if line.strip()]


def _local_file(uri: str, directory: Path) -> Path:
    """A logged path (``file:///a%20b/part.parquet``, ``file:/...`` or a plain path) as a local file.

    A log written before the output directory was moved names the old place: the file is then
    looked for under the directory by its name.
    """
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        raise ValueError(f"the dead-letter log names {uri}: only local files can be read")
    path = Path(unquote(parsed.path)) if parsed.scheme else Path(uri)
    if path.is_file():
        return path
    moved = directory / path.name
    if moved.is_file():
        return moved
    raise FileNotFoundError(f"the dead-letter log lists {uri} as committed, but no such file exists")


def read_progress(output_dir: Path | str) -> list[dict[str, Any]]:
    """The lines of progress.jsonl (none if the file is absent); a last line cut short by a crash is left out."""
    path = Path(output_dir) / PROGRESS_FILE
    if not path.is_file():
        return []
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    progress = []
    for number, line in enumerate(lines, start=1):
        try:
            progress.append(json.loads(line))
        except json.JSONDecodeError as e:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON line: {e}") from e
    return progress


def rows_dropped_by_watermark(progress: list[dict[str, Any]]) -> int | None:
    """Rows the watermark dropped over the run (None if no line says); a batch reported twice counts once."""
    latest: dict[tuple[Any, Any], int] = {}
    for line in progress:
        dropped = line.get("rows_dropped_by_watermark")
        if dropped is not None:
            latest[(line.get("query"), line.get("batch_id"))] = int(dropped)
    return sum(latest.values()) if latest else None
