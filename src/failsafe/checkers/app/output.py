"""What both forms of the app contract ask of a run's reading of the app's output. Pure."""

from __future__ import annotations

import polars as pl

from failsafe.checkers.evidence import read_partitions
from failsafe.history.model import History
from failsafe.history.ops import Op


def unread_partitions(history: History, topics: list[str]) -> list[str]:
    """TOPIC-N of every partition of ``topics`` the final read did not read completely, and each topic it never read."""
    read = read_partitions(history).filter(pl.col("topic").is_in(topics))
    return sorted(
        {f"{t}-{p}" for t, p, c in read.select("topic", "partition", "complete").iter_rows() if not c}
        | {t for t in topics if t not in set(read["topic"].to_list())}
    )


def not_drained(history: History) -> bool:
    """Whether the app had not committed all its input when the run stopped it (its ``drained`` op)."""
    drained = history.events.filter(pl.col("f") == Op.DRAINED)
    return drained.height > 0 and not drained["ok"].fill_null(False).all()


def aborted_reads(history: History, outputs: list[str], readers: list[str]) -> pl.DataFrame:
    """Records a read_committed reader of the output (``readers``) was given that the committed log does not hold."""
    log = history.log.filter(pl.col("topic").is_in(outputs)).select("topic", "partition", "offset")
    committed_reads = history.reads.filter(pl.col("topic").is_in(outputs) & pl.col("process").is_in(readers))
    return committed_reads.join(log, on=["topic", "partition", "offset"], how="anti")
