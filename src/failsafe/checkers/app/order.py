"""App, ``order = "per-key"``: the app's output keeps each key's input order. Pure.

Records of one key written to one input partition are ordered by their offsets there. In the output, each input's
first copy (a later copy is a duplicate, judged as one) must come, within its output partition, after the output of
every earlier input of the same key and input partition: one that comes after a later one is ``reordered``. Records of
one key in different input partitions or topics have no order to keep.
"""

from __future__ import annotations

import polars as pl

_SAME = ["topic", "partition", "input_topic", "input_partition", "input_key"]


def reordered(log: pl.DataFrame, acked: pl.DataFrame) -> pl.DataFrame:
    """First output copies (``log`` with its ``identity``) of acknowledged inputs that come after a later input of their
    key, with the input offset they come after (``after_input_offset``)."""
    inputs = acked.filter(pl.col("key").is_not_null()).select(
        pl.col("value").alias("identity"),
        pl.col("key").alias("input_key"),
        pl.col("topic").alias("input_topic"),
        pl.col("partition").alias("input_partition"),
        pl.col("offset").alias("input_offset"),
    )
    first = log.sort("topic", "partition", "offset").unique(subset="identity", keep="first", maintain_order=True)
    return (
        first.join(inputs, on="identity", how="inner")
        .sort("topic", "partition", "offset")
        .with_columns(pl.col("input_offset").cum_max().shift(1).over(_SAME).alias("after_input_offset"))
        .filter(pl.col("input_offset") < pl.col("after_input_offset"))
    )
