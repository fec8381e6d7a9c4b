"""Enriched: what Spark's Kafka sink wrote of the enriched purchase stream, against the simulator's ledger.

Spark's Kafka sink is at least once (Spark's Structured Streaming + Kafka integration guide: "Kafka only
supports at least once write semantics"): a micro-batch the driver had started but not committed when it
died runs again after the restart, and what its tasks had already written is written a second time. Each
enriched record carries the position of the purchase it came from (``source_partition``,
``source_offset``), so a copy is told from a purchase the simulator sent twice.

- ``missing``: an acknowledged purchase (the ledger's) of which the topic holds no record. Loss, never allowed.
- ``duplicate``: every copy of a source position beyond its first. Counted always; a violation only with
  ``allow_duplicates = false`` (a user who needs the sink to be exactly once).
- ``duplicate_in_replayed_batch``: the copies whose source position lies in a batch the query ran first
  after a restart of the pipeline (``replayed``, from its progress log): the attribution of the copies to
  Spark's replay of an uncommitted batch.

Pure: frames in, a result out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, examples, read_options, result

DEFAULTS: dict = {"allow_duplicates": True}
VIOLATIONS = {"missing": Side.PRODUCERS, "duplicate": Side.PRODUCERS}
_SOURCE = ("source_partition", "source_offset")


def check(
    acknowledged: pl.DataFrame,
    log: pl.DataFrame,
    failures: pl.DataFrame,
    replayed: Sequence[Mapping] = (),
    options: Mapping | None = None,
    *,
    read_back: bool = True,
) -> CheckerResult:
    """``acknowledged``: the ledger's purchases (``transaction_id``); ``log``: the enriched topic as read back
    (topic, partition, offset, key, value); ``failures``: its partitions that could not be read to the end;
    ``replayed``: ``{"batch_id", "start": {partition: offset}, "end": {partition: offset}}`` of each batch run
    first after a restart (source offsets, end exclusive); ``read_back``: whether the topic was read back at all.

    A purchase is placed in a partition by its key's hash, which the ledger does not record: with a partition not
    read to its end, or the topic not read at all, what looks missing may sit there, so the verdict is unknown
    (the count is kept). A record whose value names no source cannot be told a copy or not: unknown too."""
    opts = read_options(options, DEFAULTS, "enriched")
    records = log.select(
        "partition",
        "offset",
        pl.col("key").alias("transaction_id"),
        *(
            pl.col("value").str.json_path_match(f"$.{name}").cast(pl.Int64, strict=False).alias(name)
            for name in _SOURCE
        ),
    )
    placed = records.drop_nulls(list(_SOURCE))
    unparseable = records.height - placed.height
    copies = (
        placed.group_by(_SOURCE)
        .agg(pl.len().alias("copies"), pl.col("partition").alias("partitions"), pl.col("offset").alias("offsets"))
        .filter(pl.col("copies") > 1)
    )
    duplicate = int((copies["copies"] - 1).sum()) if copies.height else 0
    in_replayed = _in_ranges(copies, replayed)
    seen = records["transaction_id"].drop_nulls().unique()
    wanted = acknowledged.select("transaction_id").unique()
    missing = wanted.filter(~pl.col("transaction_id").is_in(seen.implode()))
    counts = {
        "records": records.height,
        "acknowledged": acknowledged.height,
        "missing": missing.height,
        "duplicate": duplicate,
        "duplicated-sources": copies.height,
        "duplicate_in_replayed_batch": int((in_replayed["copies"] - 1).sum()) if in_replayed.height else 0,
        "not-acknowledged": seen.len() - wanted.filter(pl.col("transaction_id").is_in(seen.implode())).height,
        "unparseable": unparseable,
        "unreadable-partitions": failures.height,
    }
    reasons = (
        ([] if read_back else ["the enriched topic was not read back"])
        + (
            [f"{failures.height} partition(s) of the enriched topic could not be read to their end"]
            if failures.height
            else []
        )
        + ([f"{unparseable} record(s) name no source partition and offset"] if unparseable else [])
    )
    violations = (["missing"] if missing.height and read_back and not failures.height else []) + (
        ["duplicate"] if duplicate and not opts["allow_duplicates"] else []
    )
    valid = False if violations else UNKNOWN if reasons else True
    return result(
        valid,
        counts,
        {
            "missing": examples(missing),
            "duplicate": examples(copies.sort(_SOURCE)),
            "unreadable-partitions": examples(failures),
        },
        violations,
        allow_duplicates=opts["allow_duplicates"],
        replayed=[dict(r) for r in replayed],
        reasons=reasons,
    )


def _in_ranges(copies: pl.DataFrame, replayed: Sequence[Mapping]) -> pl.DataFrame:
    if not replayed or copies.height == 0:
        return copies.head(0)
    rows = []
    for batch in replayed:
        start = {int(p): int(o) for p, o in batch["start"].items()}
        rows += [
            {"source_partition": int(p), "start": start.get(int(p), 0), "end": int(end)}
            for p, end in batch["end"].items()
        ]
    ranges = pl.DataFrame(rows, schema={"source_partition": pl.Int64, "start": pl.Int64, "end": pl.Int64})
    inside = copies.join(ranges, on="source_partition").filter(
        (pl.col("source_offset") >= pl.col("start")) & (pl.col("source_offset") < pl.col("end"))
    )
    return inside.unique(subset=list(_SOURCE))
