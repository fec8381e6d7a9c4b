"""One 64-bit hash per row for the questions asked of millions of records.

Joining, or counting distinct, on strings (topic, value) costs seconds at ten million rows; on one
u64 it costs a tenth of that. A hash can collide, so every anomaly the hashes point at is confirmed
on the real columns before it is reported; the only effect a collision could have is to hide an
anomaly, with odds of about (anomalies x records) / 2^64, below one in a billion per run.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

IDENTITY = ("topic", "value")  # a write: values are unique across a run
POSITION = ("topic", "partition", "offset")  # a place in the log
PLACED = ("topic", "partition", "offset", "value")  # a write at a place


def key(columns: Sequence[str], name: str = "k") -> pl.Expr:
    return pl.struct(list(columns)).hash().alias(name)


def having_keys(frame: pl.DataFrame, columns: Sequence[str], keys: pl.Series) -> pl.DataFrame:
    """The rows of frame whose key over columns is one of keys (a short list): the suspects."""
    if keys.len() == 0:
        return frame.head(0)
    return frame.filter(key(columns).is_in(keys.implode()))


def distinct(frame: pl.DataFrame, name: str) -> int:
    return frame[name].n_unique() if frame.height else 0
