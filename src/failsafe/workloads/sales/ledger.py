"""The ledger: every purchase Kafka acknowledged, with its partition and offset (issue 4's contract).

    DIR/manifest.json                              the run, its counts, and ``complete``
    DIR/purchases-<instance:02d>-<chunk:05d>.parquet  one row per acknowledged purchase
    DIR/malformed-<instance:02d>-<chunk:05d>.parquet  acknowledged records broken on purpose

Each instance writes its own chunks, each chunk whole or not at all (written under a temporary
name, then renamed), so memory stays bounded however long a run is. The manifest says
``complete: true`` only once every instance flushed its producer and wrote its last chunk:
only then is every acknowledged purchase in the files.

``read_ledger`` is the one reader of this format; ``failsafe pipeline verify`` reads ledgers with
it too, so verify accepts exactly the ledgers this module accepts.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from failsafe.errors import LedgerError

FORMAT = 1
MANIFEST = "manifest.json"
CHUNK_ROWS = 200_000
PURCHASES_SCHEMA = pl.Schema(
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
MALFORMED_SCHEMA = pl.Schema({"partition": pl.Int32, "offset": pl.Int64, "value": pl.String})
_LEDGER_FILE = re.compile(r"(manifest\.json|(purchases|malformed)-\d{2}-\d{5}\.parquet)(\.tmp)?")


def purchases_file(instance: int, chunk: int) -> str:
    return f"purchases-{instance:02d}-{chunk:05d}.parquet"


def malformed_file(instance: int, chunk: int) -> str:
    return f"malformed-{instance:02d}-{chunk:05d}.parquet"


def purchases_frame(
    transaction_id: np.ndarray,
    time_us: np.ndarray,
    product_ids: list[str],
    product: np.ndarray,
    quantity: np.ndarray,
    is_member: np.ndarray,
    total_cents: np.ndarray,
    partition: np.ndarray,
    offset: np.ndarray,
) -> pl.DataFrame:
    """Ledger rows from the generator's columns (``product`` indexes ``product_ids``)."""
    return pl.DataFrame(
        {
            "transaction_id": pl.Series(transaction_id.astype(np.uint64)).cast(pl.String),
            "transaction_time": pl.Series(time_us.astype(np.int64)).cast(pl.Datetime("us")),
            "product_id": pl.Series(product_ids, dtype=pl.String).gather(product.astype(np.int64)),
            "quantity": pl.Series(quantity.astype(np.int32)),
            "is_member": pl.Series(is_member.astype(bool)),
            "total_purchase_cents": pl.Series(total_cents.astype(np.int64)),
            "partition": pl.Series(partition.astype(np.int32)),
            "offset": pl.Series(offset.astype(np.int64)),
        },
        schema=PURCHASES_SCHEMA,
    )


def malformed_frame(partition: list[int], offset: list[int], value: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"partition": partition, "offset": offset, "value": value}, schema=MALFORMED_SCHEMA)


def _write_atomic(frame: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp)
    os.replace(tmp, path)


class _Chunks:
    def __init__(self, directory: Path, name: object, chunk_rows: int) -> None:
        self.directory, self.name, self.chunk_rows = directory, name, chunk_rows
        self.pending: list[pl.DataFrame] = []
        self.pending_rows = 0
        self.chunks = 0
        self.rows = 0

    def add(self, frame: pl.DataFrame) -> None:
        if frame.height:
            self.pending.append(frame)
            self.pending_rows += frame.height
            if self.pending_rows >= self.chunk_rows:
                self.write()

    def write(self) -> None:
        if not self.pending:
            return
        frame = pl.concat(self.pending)
        _write_atomic(frame, self.directory / self.name(self.chunks))  # type: ignore[operator]
        self.chunks += 1
        self.rows += frame.height
        self.pending, self.pending_rows = [], 0


class LedgerWriter:
    """One instance's purchases and malformed records, written in chunks of ``chunk_rows``."""

    def __init__(self, directory: Path, instance: int, chunk_rows: int = CHUNK_ROWS) -> None:
        self.purchases = _Chunks(directory, lambda n: purchases_file(instance, n), chunk_rows)
        self.malformed = _Chunks(directory, lambda n: malformed_file(instance, n), chunk_rows)

    def add_purchases(self, frame: pl.DataFrame) -> None:
        self.purchases.add(frame)

    def add_malformed(self, frame: pl.DataFrame) -> None:
        self.malformed.add(frame)

    def close(self) -> None:
        self.purchases.write()
        self.malformed.write()


def check_directory(directory: Path) -> None:
    """Refuse a --ledger that is a file, or a directory with anything but an old ledger in it."""
    if directory.exists() and not directory.is_dir():
        raise LedgerError(f"--ledger {directory} is a file: give a directory for the ledger")
    if directory.is_dir():
        names = [p.name for p in directory.iterdir()]
        if names and MANIFEST not in names:
            raise LedgerError(f"--ledger {directory} holds files that are not a ledger: give an empty or new directory")
        foreign = [n for n in names if not _LEDGER_FILE.fullmatch(n)]
        if foreign:
            raise LedgerError(
                f"--ledger {directory} holds {foreign[0]!r}, which no ledger writes: give an empty or new directory"
            )


def prepare(directory: Path) -> None:
    """An empty ledger directory: a new one, or an old ledger's files removed."""
    check_directory(directory)
    if directory.is_dir():
        for path in directory.iterdir():
            path.unlink()
    directory.mkdir(parents=True, exist_ok=True)


def write_manifest(directory: Path, manifest: dict) -> None:
    path = directory / MANIFEST
    tmp = path.with_name(MANIFEST + ".tmp")
    tmp.write_text(json.dumps({"format": FORMAT, **manifest}, indent=2) + "\n")
    os.replace(tmp, path)


def read_manifest(directory: Path) -> dict:
    directory = Path(directory)
    if not directory.exists():
        raise LedgerError(f"no ledger at {directory}: write one with 'failsafe simulate sales --ledger {directory}'")
    path = directory / MANIFEST
    if not directory.is_dir() or not path.is_file():
        raise LedgerError(
            f"{directory} is not a sales ledger (no {MANIFEST}): give the directory of 'failsafe simulate "
            f"sales --ledger'"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LedgerError(f"{path} is not a readable ledger manifest ({e}): run the simulator again") from e
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise LedgerError(
            f"{path} is not a ledger manifest of format {FORMAT} (format {found!r}): run the simulator again"
        )
    return manifest


@dataclass(frozen=True)
class Ledger:
    directory: Path
    manifest: dict
    purchases: pl.DataFrame  # PURCHASES_SCHEMA
    malformed: pl.DataFrame  # MALFORMED_SCHEMA


def _read_files(directory: Path, prefix: str, schema: pl.Schema) -> pl.DataFrame:
    frames = []
    for path in sorted(directory.glob(f"{prefix}-*.parquet")):
        if not re.fullmatch(rf"{prefix}-\d{{2}}-\d{{5}}\.parquet", path.name):
            continue
        try:
            frame = pl.read_parquet(path)
        except (OSError, pl.exceptions.PolarsError) as e:
            raise LedgerError(f"ledger file {path} cannot be read ({e}): run the simulator again") from e
        if frame.schema != schema:
            raise LedgerError(
                f"ledger file {path} has columns other than the contract's "
                f"({_schema_difference(frame.schema, schema)}): run the simulator again"
            )
        frames.append(frame)
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def _schema_difference(found: pl.Schema, expected: pl.Schema) -> str:
    """How a chunk's columns differ from the contract's, e.g. 'quantity is Int64, not Int32; is_member is missing'."""
    parts = [
        f"{name} is {found[name]}, not {dtype}"
        for name, dtype in expected.items()
        if name in found and found[name] != dtype
    ]
    parts += [f"{name} is missing" for name in expected if name not in found]
    parts += [f"{name} is extra" for name in found if name not in expected]
    return "; ".join(parts) or f"in the order {list(found)}, not {list(expected)}"


def read_ledger(directory: Path | str, require_complete: bool = True) -> Ledger:
    """The ledger at ``directory``; a LedgerError (one line) when there is none, it is not one, a chunk
    has other columns or types than the contract's, or (unless ``require_complete`` is False) the run
    that wrote it did not finish cleanly or its chunks hold other row counts than its manifest.

    Only ``purchases-NN-NNNNN.parquet`` and ``malformed-NN-NNNNN.parquet`` are chunks; an
    incomplete ledger (``require_complete=False``) is read as far as it was written."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if require_complete and manifest.get("complete") is not True:
        raise LedgerError(
            f"the ledger at {directory} is incomplete (the simulator was stopped before every instance flushed "
            "and wrote its ledger): run 'failsafe simulate sales' again"
        )
    purchases = _read_files(directory, "purchases", PURCHASES_SCHEMA)
    malformed = _read_files(directory, "malformed", MALFORMED_SCHEMA)
    if require_complete:
        for what, frame in (("acknowledged", purchases), ("malformed", malformed)):
            if manifest.get(what) != frame.height:
                raise LedgerError(
                    f"the ledger at {directory} has {frame.height} {what} rows but its manifest says "
                    f"{manifest.get(what)}: a chunk is missing or not this run's; run the simulator again"
                )
    return Ledger(directory, manifest, purchases, malformed)
