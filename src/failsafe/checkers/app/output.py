"""What both forms of the app contract ask of a run's reading of the app's output. Pure."""

from __future__ import annotations

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, result
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


def uncommitted_view(
    history: History, outputs: list[str], readers: list[str], identity: pl.Expr | None = None
) -> dict | None:
    """What the scenario's read_uncommitted readers of the output (``readers``) saw, beside the committed log: the
    records they were given (each offset once), those the committed log does not hold (read from transactions that
    aborted, or not yet committed), and the identities (``identity``, if given) among them more than once. Reported,
    never judged: a read_uncommitted reader is promised neither. None when the scenario has no such reader."""
    if not readers:
        return None
    seen = history.reads.filter(pl.col("topic").is_in(outputs) & pl.col("process").is_in(readers)).unique(
        subset=["topic", "partition", "offset"], keep="first", maintain_order=True
    )
    log = history.log.filter(pl.col("topic").is_in(outputs)).select("topic", "partition", "offset")
    view = {
        "readers": sorted(readers),
        "records": seen.height,
        "not-in-committed-log": seen.join(log, on=["topic", "partition", "offset"], how="anti").height,
    }
    if identity is not None:
        repeated = seen.group_by(identity.alias("identity")).len().filter(pl.col("len") > 1)
        view["identities-more-than-once"] = repeated.height
    return view


def app_result(
    history: History,
    topics: tuple[list[str], list[str]],
    unread: list[str],
    counts: dict[str, int],
    rows: dict[str, list],
    violations: list[str],
    undone: tuple[str, ...],
    **fields: object,
) -> CheckerResult:
    """The app checker's verdict over its (input, output) ``topics``: when a partition was not read completely or the
    app had not read all its input, UNKNOWN unless a violation more reading could not undo (``undone``) was found;
    otherwise valid when no violation was."""
    inputs, outputs = topics
    reason = None
    if not outputs or not inputs:
        reason = "the contract names no input or no output topic"
    elif unread:
        reason = f"partitions not read completely: {', '.join(unread[:5])}"
    elif not_drained(history):
        reason = "the app had not read all its input when the run ended"
    if reason is not None:
        decided = [v for v in violations if v in undone]
        return result(False if decided else UNKNOWN, counts, rows, decided, reason=reason, **fields)
    return result(not violations, counts, rows, violations, **fields)
