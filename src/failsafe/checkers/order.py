"""Order: each consumer reads each partition in offset order, and each key in offset order.

An assignment epoch is the stretch between an assign of a partition to a consumer and the next
assign of it to the same consumer; a consumer may legitimately go back to its committed offset
across a rebalance (Jepsen allows nonmonotonic polls across one), never within an epoch.
Manually assigned consumers (group null, no assign events) have one epoch.

nonmonotonic-send is judged of every producer but those that recorded enable.idempotence=false (their
client-config op): a producer without idempotence that retries may land a batch behind a later one,
which Kafka documents; theirs are counted (nonmonotonic-send-non-idempotent), from what they recorded,
never from an option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import CheckerResult, Side, examples, read_options, result
from failsafe.checkers.evidence import recorded_setting
from failsafe.history.model import History
from failsafe.history.ops import Op, OpType

DEFAULTS: dict[str, Any] = {}
VIOLATIONS = {
    "nonmonotonic-poll": Side.CONSUMERS,
    "poll-skip": Side.CONSUMERS,
    "key-reordered": Side.CONSUMERS,
    "nonmonotonic-send": Side.PRODUCERS,
}
_PARTITION_EPOCH = ["process", "topic", "partition", "epoch_ns"]
_POLL_EXAMPLE = ("process", "group", "topic", "partition", "poll_seq", "previous_offset", "offset")


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    read_options(options, DEFAULTS, "order")
    # value is never needed here and is the widest column: leave it behind.
    reads = with_epochs(history.reads.drop("value").with_row_index("seq"), history.membership)
    steps = reads.with_columns(
        pl.col("offset").shift(1).over(_PARTITION_EPOCH, order_by="seq").alias("previous_offset")
    )

    backwards = steps.filter(pl.col("offset") <= pl.col("previous_offset"))
    skips = _skips_over_known(steps.filter(pl.col("offset") > pl.col("previous_offset") + 1), history)
    reordered = _keys_reordered(reads, backwards)
    all_regressions = _nonmonotonic_sends(history.sends)
    unidempotent = non_idempotent(history)
    send_regressions = all_regressions.filter(~pl.col("process").is_in(sorted(unidempotent)))

    counts = {
        "records-checked": reads.height,
        "nonmonotonic-poll": backwards.height,
        "poll-skip": skips.height,
        "key-reordered": reordered.height,
        "nonmonotonic-send": send_regressions.height,
        "nonmonotonic-send-non-idempotent": all_regressions.height - send_regressions.height,
    }
    example_rows = {
        "nonmonotonic-poll": examples(backwards.sort("seq"), *_POLL_EXAMPLE),
        "poll-skip": examples(skips.sort("seq"), *_POLL_EXAMPLE, "skipped_offset"),
        "key-reordered": examples(reordered.sort("seq"), *_POLL_EXAMPLE, "key"),
        "nonmonotonic-send": examples(
            send_regressions, "process", "topic", "partition", "previous_id", "previous_offset", "id", "offset"
        ),
    }
    violations = [
        name for name in ("nonmonotonic-poll", "poll-skip", "key-reordered", "nonmonotonic-send") if counts[name]
    ]
    return result(not violations, counts, example_rows, violations)


def with_epochs(reads: pl.DataFrame, membership: pl.DataFrame) -> pl.DataFrame:
    """reads with epoch_ns: the time of the assign the record was read under (null: no assign)."""
    assigns = membership.filter(pl.col("f") == Op.ASSIGN).select(
        "process", "topic", "partition", pl.col("time_ns").alias("epoch_ns")
    )
    if assigns.height == 0:
        return reads.with_columns(pl.lit(None, dtype=pl.Int64).alias("epoch_ns"))
    # One process writes its polls and assigns in time order, so each by-group is sorted.
    return reads.join_asof(
        assigns.sort("epoch_ns"),
        left_on="time_ns",
        right_on="epoch_ns",
        by=["process", "topic", "partition"],
        strategy="backward",
        check_sortedness=False,
    )


def _skips_over_known(jumps: pl.DataFrame, history: History) -> pl.DataFrame:
    """Jumps that passed over an offset some consumer read or the log holds.

    Offsets are not dense (transaction markers, compaction), so a gap alone proves nothing.
    """
    if jumps.height == 0:
        return jumps.with_columns(pl.lit(None, dtype=pl.Int64).alias("skipped_offset"))
    partitions = jumps.select("topic", "partition").unique()
    known = pl.concat(
        [history.reads.select("topic", "partition", "offset"), history.log.select("topic", "partition", "offset")]
    )
    known = known.join(partitions, on=["topic", "partition"], how="semi").unique().sort("offset")
    located = jumps.with_columns((pl.col("previous_offset") + 1).alias("after")).sort("after")
    located = located.join_asof(
        known.rename({"offset": "skipped_offset"}),
        left_on="after",
        right_on="skipped_offset",
        by=["topic", "partition"],
        strategy="forward",
        check_sortedness=False,
    )
    return located.filter(pl.col("skipped_offset") < pl.col("offset")).drop("after")


def _keys_reordered(reads: pl.DataFrame, backwards: pl.DataFrame) -> pl.DataFrame:
    """Records of one key read at a lower offset than the key's previous record, within an epoch.

    A key's records are a subsequence of their partition's, so a key can only go backwards in an
    epoch where the partition did: only those epochs are examined.
    """
    epochs = backwards.select(_PARTITION_EPOCH).unique()
    if epochs.height == 0:
        return backwards.with_columns(pl.lit(None, dtype=pl.String).alias("key")).head(0)
    suspects = reads.filter(pl.col("key").is_not_null()).join(epochs, on=_PARTITION_EPOCH, how="semi", nulls_equal=True)
    suspects = suspects.with_columns(
        pl.col("offset").shift(1).over([*_PARTITION_EPOCH, "key"], order_by="seq").alias("previous_offset")
    )
    return suspects.filter(pl.col("offset") <= pl.col("previous_offset"))


def non_idempotent(history: History) -> set[str]:
    """The producers whose client-config op recorded enable.idempotence=false (the last setting given)."""
    return {process for process, value in recorded_setting(history, "enable.idempotence").items() if value == "false"}


def _nonmonotonic_sends(sends: pl.DataFrame) -> pl.DataFrame:
    """Acknowledged offsets that do not grow with the invoke id, per producer and partition."""
    acked = sends.select("process", "topic", "partition", "id", "offset", "outcome").filter(
        (pl.col("outcome") == OpType.OK) & pl.col("offset").is_not_null()
    )
    keys = ["process", "topic", "partition"]
    steps = acked.select(*keys, "id", "offset").with_columns(
        pl.col("offset").shift(1).over(keys, order_by="id").alias("previous_offset"),
        pl.col("id").shift(1).over(keys, order_by="id").alias("previous_id"),
    )
    return steps.filter(pl.col("offset") <= pl.col("previous_offset")).sort(keys + ["id"])
