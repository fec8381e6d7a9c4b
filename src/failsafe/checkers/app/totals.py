"""App, ``totals``: the running total per key an application publishes ends at what its input adds up to. Pure.

The ``totals`` form of the app contract (scenarios/kinds/app): the app counts its input records per key (a Kafka Streams
``count()``, a consume-transform-produce service keeping a count) and publishes each key's running total to its output,
keyed by the input's key, the total in the value as decimal text or a JSON field (``total``). What it should end at is
what its input topics hold: the final read of the input (read_committed) counted per key. A record the cluster lost
from the input is the durability checker's to judge; the app cannot count what it was never given.

For each key, its final total is the output's last record of that key (the highest offset of its partition; when a key's
totals are in more than one output partition, the largest of their last ones). Under ``delivery``:

    under-counted   (exactly-once, at-least-once) a final total below the key's input count, or no total at all for a
                    key with input: acknowledged input the total does not count. A loss, never KNOWN
    over-counted    (exactly-once, at-most-once) a final total above it: input counted more than once
    went-back       (exactly-once) a total below one published before it for the same key in the same partition: a
                    read_committed reader saw the count move backwards (a state restored from before what was published)
    phantom         an output record whose key no input record has, or whose total is not a whole number
    aborted-read    as for ``each``: a read_committed reader of the output was given a record the committed log lacks

The verdict is "unknown" when an input or output partition was not read completely, or when the app had not read all
its input when the run ended (``drained`` false).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.app.output import aborted_reads, app_result, uncommitted_view, unread_partitions
from failsafe.checkers.app.pace import pace
from failsafe.checkers.common import CheckerResult, examples
from failsafe.history.model import History

JSON = "json:"
_EXAMPLE = ("key", "expected", "final", "acknowledged", "topic", "partition", "offset", "total", "previous", "value")


def total_of(total: str) -> pl.Expr:
    """The running total an output record carries, as the contract names it (null when it is not a whole number)."""
    value = pl.col("value")
    if total.startswith(JSON):
        value = value.str.json_path_match(f"$.{total[len(JSON) :]}")
    return value.str.strip_chars().cast(pl.Int64, strict=False)


def check_totals(history: History, opts: Mapping[str, Any]) -> CheckerResult:
    delivery, inputs, outputs = opts["delivery"], opts["input_topics"], opts["output_topics"]
    expected = (
        history.log.filter(pl.col("topic").is_in(inputs) & pl.col("key").is_not_null())
        .group_by("key")
        .agg(pl.len().alias("expected"))
    )
    acked = (
        history.sends.filter(pl.col("topic").is_in(inputs) & (pl.col("outcome") == "ok"))
        .group_by("key")
        .agg(pl.len().alias("acknowledged"))
    )
    log = (
        history.log.filter(pl.col("topic").is_in(outputs))
        .with_columns(total_of(opts["total"]).alias("total"))
        .sort("topic", "partition", "offset")
    )
    phantom = log.filter(
        pl.col("total").is_null() | pl.col("key").is_null() | ~pl.col("key").is_in(expected["key"].implode())
    )
    totals = log.filter(pl.col("total").is_not_null() & pl.col("key").is_not_null())
    went_back = totals.with_columns(
        pl.col("total").shift(1).over("topic", "partition", "key").alias("previous")
    ).filter(pl.col("total") < pl.col("previous"))
    last = (
        totals.group_by("topic", "partition", "key")
        .agg(pl.col("total").last(), pl.col("offset").last())
        .sort("total", descending=True)
        .group_by("key", maintain_order=True)
        .agg(
            pl.col("total").first().alias("final"),
            pl.len().alias("partitions"),
            pl.col("topic", "partition", "offset").first(),
        )
    )
    keys = (
        expected.join(last, on="key", how="left")
        .join(acked, on="key", how="left")
        .with_columns(pl.col("final").fill_null(0), pl.col("acknowledged").fill_null(0))
        .sort("key")
    )
    found = {
        "under-counted": keys.filter(pl.col("final") < pl.col("expected")),
        "over-counted": keys.filter(pl.col("final") > pl.col("expected")),
        "went-back": went_back,
        "phantom": phantom,
        "aborted-read": aborted_reads(history, outputs, opts["committed_readers"]),
    }
    if delivery == "at-most-once":
        found["under-counted"] = found["under-counted"].clear()
    if delivery == "at-least-once":
        found["over-counted"] = found["over-counted"].clear()
    if delivery != "exactly-once":
        found["went-back"] = found["went-back"].clear()

    unread = unread_partitions(history, [*inputs, *outputs])
    counts = {
        "keys": expected.height,
        "input-records": int(expected["expected"].sum() or 0),
        "acknowledged-inputs": int(acked["acknowledged"].sum() or 0),
        "output-records": log.height,
        "keys-in-several-partitions": last.filter(pl.col("partitions") > 1).height,
        **{name: frame.height for name, frame in found.items()},
        "unread-partitions": len(unread),
    }
    rows = {name: examples(frame, *[c for c in _EXAMPLE if c in frame.columns]) for name, frame in found.items()}
    violations = [name for name, frame in found.items() if frame.height]
    view = uncommitted_view(history, outputs, opts["uncommitted_readers"])
    beside = {
        "form": "totals",
        "pace": pace(history, inputs, outputs, None),
        **({"uncommitted_view": view} if view is not None else {}),
    }
    # What more reading could not undo decides an unfinished run: a total moving back, an aborted read; with the input
    # read whole, a key it lacks or a total above it too.
    undone = ("went-back", "aborted-read") if unread else ("went-back", "aborted-read", "phantom", "over-counted")
    return app_result(history, (inputs, outputs), unread, counts, rows, violations, undone, delivery=delivery, **beside)
