"""What every checker shares: reading options strictly, examples, the shape of a result."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal, TypedDict

import polars as pl

from failsafe.checkers.keys import IDENTITY, POSITION, key
from failsafe.history.model import History
from failsafe.history.ops import PAUSE_CONSUMER, Target

EXAMPLES_PER_ANOMALY = 5
UNKNOWN: Literal["unknown"] = "unknown"
Validity = bool | Literal["unknown"]  # as results.json has it: true, false or "unknown"


class Verdict(StrEnum):
    """A run's or a checker's verdict in words, and the exit code ``failsafe run`` / ``check`` gives it
    (failsafe.errors).

    KNOWN is a run's verdict only: it violated something, and every violation matched an anomaly its
    scenario declares known under a stated condition (docs/checkers.md). It is never VALID.
    """

    VALID = "VALID"
    KNOWN = "KNOWN"
    INVALID = "INVALID"
    UNKNOWN = "UNKNOWN"

    @classmethod
    def of(cls, valid: object) -> Verdict:
        return cls.VALID if valid is True else cls.INVALID if valid is False else cls.UNKNOWN

    @classmethod
    def of_run(cls, results: Mapping) -> Verdict:
        """A run's verdict from its results.json: its ``verdict`` when recorded, else from ``valid``."""
        recorded = results.get("verdict")
        if recorded in cls.__members__ and (recorded != cls.KNOWN or results.get("valid") is False):
            return cls(recorded)
        return cls.of(results.get("valid"))

    @classmethod
    def worst(cls, verdicts: Iterable[Verdict]) -> Verdict:
        """Several runs as one: INVALID over UNKNOWN over KNOWN over VALID (VALID when there are none)."""
        rank = [cls.VALID, cls.KNOWN, cls.UNKNOWN, cls.INVALID]
        return max(verdicts, key=rank.index, default=cls.VALID)

    @property
    def exit_code(self) -> int:
        """The exit-code contract (README, "Exit codes"): 0 VALID, 1 INVALID, 3 UNKNOWN, 4 KNOWN."""
        return {Verdict.VALID: 0, Verdict.INVALID: 1, Verdict.UNKNOWN: 3, Verdict.KNOWN: 4}[self]


class Side(StrEnum):
    """Whose behaviour a violation is about: what a known anomaly's client and settings are matched against."""

    PRODUCERS = "producers"
    CONSUMERS = "consumers"
    CLUSTER = "cluster"  # the cluster's, under every client: matched against all of them


class CheckerResult(TypedDict, total=False):
    """What every checker returns (docs/checkers.md); each adds its own fields (faults, events, ...)."""

    valid: Validity
    counts: dict[str, int]
    examples: dict[str, list[dict[str, Any]]]
    violations: list[str]  # the counts (anomaly names) that made it invalid; empty when valid or unknown
    # Per violation about clients, the clients (processes) that showed it, where the checker can tell: a known
    # anomaly is then matched against those clients only (scenarios/known.py), not every client on its side.
    processes: dict[str, list[str]]
    error: str  # only when the checker raised: then valid is "unknown"


class CheckerOptionError(ValueError):
    """An option a checker does not know, or one of the wrong type."""


def read_options(options: Mapping | None, defaults: Mapping[str, Any], checker: str) -> dict[str, Any]:
    """The options merged over defaults; an unknown name or a wrong type raises, naming both."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise CheckerOptionError(f"{checker}: unknown option(s) {unknown}; known: {sorted(defaults)}")
    merged = dict(defaults)
    for name, value in options.items():
        default = defaults[name]
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, dict):
            # A number per name (e.g. a session per group).
            ok = isinstance(value, Mapping) and all(
                isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
                for k, v in value.items()
            )
        elif isinstance(default, int) and not name.endswith("_ms"):
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        elif isinstance(default, str):
            ok = isinstance(value, str)
        elif name.endswith("_ms"):
            ok = value is None or (isinstance(value, int | float) and not isinstance(value, bool) and value >= 0)
        else:
            ok = value is None or (isinstance(value, list | tuple) and all(isinstance(item, str) for item in value))
        if not ok:
            raise CheckerOptionError(f"{checker}: option {name!r} has the wrong type or value: {value!r}")
        merged[name] = value
    return merged


def examples(frame: pl.DataFrame, *columns: str) -> list[dict[str, Any]]:
    """A few rows as plain dicts: results name examples, never the whole list."""
    if frame.height == 0:
        return []
    picked = frame.select(columns) if columns else frame
    return picked.head(EXAMPLES_PER_ANOMALY).to_dicts()


def result(
    valid: Validity,
    counts: Mapping[str, int],
    example_rows: Mapping[str, list],
    violations: Iterable[str] = (),
    **fields: Any,
) -> CheckerResult:
    """A checker's result; ``violations`` names the counts that made it invalid (what a known anomaly may match)."""
    violations = list(dict.fromkeys(violations))
    if violations and valid is True:
        raise ValueError(f"a valid result cannot have violations: {violations}")
    return {  # type: ignore[typeddict-unknown-key]
        "valid": valid,
        "counts": {name: int(count) for name, count in counts.items()},
        "examples": {name: rows for name, rows in example_rows.items() if rows},
        "violations": violations,
        **fields,
    }


def end_ns(history: History) -> int | None:
    """The latest time anywhere in the history: where 'until the end' stops."""
    candidates = [
        history.sends["complete_ns"].max(),
        history.sends["invoke_ns"].max(),
        history.reads["time_ns"].max(),
        history.membership["time_ns"].max(),
        history.client_events["time_ns"].max(),
        history.faults["start_ns"].max(),
        history.faults["stop_ns"].max(),
        history.topology["time_ns"].max(),
        history.phases["time_ns"].max(),
        history.commits["time_ns"].max(),
    ]
    present = [int(value) for value in candidates if value is not None]
    return max(present) if present else None


def ns_to_ms(column: str | pl.Expr) -> pl.Expr:
    expr = pl.col(column) if isinstance(column, str) else column
    return expr / 1_000_000


def client_stops(history: History) -> pl.DataFrame:
    """(process, stop_ns): each crash or close of a client, and each consumer fault on it that stops it (a
    pause-consumer freezes it instead: it goes on where it was when let go)."""
    faults = history.faults.filter((pl.col("target") == Target.CONSUMER) & (pl.col("fault") != PAUSE_CONSUMER))
    return pl.concat(
        [
            history.client_events.select("process", pl.col("time_ns").alias("stop_ns")),
            faults.select(pl.col("nodes").alias("process"), pl.col("start_ns").alias("stop_ns")).explode("process"),
        ]
    )


def with_share_reads(history: History) -> History:
    """The history with every record a share group acquired among its reads (a share delivery is a read): for a checker
    that asks whether a write was read at all, not in what order or how often within a group."""
    shared = history.share_deliveries
    if shared.height == 0:
        return history
    columns = [
        pl.col(c).cast(t) if c in shared.columns else pl.lit(None, dtype=t).alias(c)
        for c, t in history.reads.schema.items()
    ]
    return replace(history, reads=pl.concat([history.reads, shared.select(columns)]))


def unread_writes(writes: pl.DataFrame, reads: pl.DataFrame, read_keys: pl.DataFrame | None = None) -> pl.DataFrame:
    """The writes (rows with topic, value, partition, offset and their key k) that no read read.

    ``read_keys``: the key k of every read with a value, when the caller has it already (hashing every read costs).
    """
    if read_keys is None:
        read_keys = reads.select(IDENTITY).drop_nulls("value").select(key(IDENTITY))
    unread = writes.join(read_keys, on="k", how="anti", maintain_order="left")
    valueless = reads.filter(pl.col("value").is_null())
    if unread.height and valueless.height:
        # A read without a value (and none in the log to fill it) still proves the offset was read.
        unread = unread.join(valueless.select(POSITION), on=list(POSITION), how="anti", maintain_order="left")
    return unread


Checker = Callable[[History, Mapping | None], CheckerResult]


@dataclass(frozen=True)
class CheckerInfo:
    """A checker as the registry (checkers/run.py) knows it: its name, function, options and violations."""

    name: str
    check: Checker | None  # None: not a function of the history alone (sales and enriched compare a sink with a ledger)
    defaults: Mapping[str, Any]
    violations: Mapping[str, Side]
    # What the options must hold beyond their types (raises CheckerOptionError); checked when a scenario is parsed.
    check_options: Callable[[Mapping], None] | None = None
