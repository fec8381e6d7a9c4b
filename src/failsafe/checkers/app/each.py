"""App: every acknowledged input record appears in the application's output as its contract says. Pure.

The app kind (scenarios/kinds/app) runs a user's application between failsafe's verifying producers, which write
unique values to its input topics, and the final read of its output topics (read_committed). The app carries each input
record's identity, the value failsafe's producer wrote, into what it writes: as the output's value, its key, a field
of a JSON value, or a header (``identity``). ``delivery`` is what the app promises of each acknowledged input record:

    exactly-once    it appears once in the output
    at-least-once   it appears, once or more
    at-most-once    it appears at most once (an input it never processed is no violation)

Anomalies, in Jepsen's words where they fit:

    lost            an acknowledged input that is not in the output (never for at-most-once); a loss is never KNOWN
    duplicate       an identity that appears more than once (never for at-least-once)
    phantom         an output record whose identity no producer of the run ever sent
    aborted-read    a record a read_committed reader of the output (``committed_readers``) was given that the committed
                    log does not hold: read from a transaction that did not commit
    reordered       (``order`` "per-key") an input's output after that of a later input of its key (order.py)

The verdict is "unknown" when an output partition was not read completely (what it holds is not known), or when the
app had not read all its input when the run ended (``drained`` false: what it had not processed yet is no loss).

``form`` "totals" is the contract's other form, a running total per key (totals.py); this checker judges both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.app.order import reordered
from failsafe.checkers.app.output import aborted_reads, app_result, uncommitted_view, unread_partitions
from failsafe.checkers.app.pace import pace
from failsafe.checkers.app.totals import JSON, check_totals
from failsafe.checkers.common import (
    CheckerOptionError,
    CheckerResult,
    Side,
    examples,
    read_options,
)
from failsafe.history.model import History
from failsafe.history.ops import OpType

HEADER = "header:"
DELIVERIES = ("exactly-once", "at-least-once", "at-most-once")
FORMS = ("each", "totals")
ORDERS = ("none", "per-key")
DEFAULTS: dict[str, Any] = {
    "input_topics": [],
    "output_topics": [],
    "form": "each",
    "delivery": "exactly-once",
    "identity": "value",
    "total": "value",
    "order": "none",
    "committed_readers": [],
    "uncommitted_readers": [],
}
VIOLATIONS = {
    "lost": Side.CONSUMERS,
    "duplicate": Side.CONSUMERS,
    "phantom": Side.CONSUMERS,
    "aborted-read": Side.CONSUMERS,
    "under-counted": Side.CONSUMERS,
    "over-counted": Side.CONSUMERS,
    "went-back": Side.CONSUMERS,
    "reordered": Side.CONSUMERS,
}
_EXAMPLE = (
    "identity",
    "topic",
    "partition",
    "offset",
    "copies",
    "input_copies",
    "partitions",
    "offsets",
    "values",
    "input_topic",
    "input_partition",
    "input_offset",
    "after_input_offset",
    "input_key",
    "process",
)


def check_options(options: Mapping) -> None:
    form = options.get("form", DEFAULTS["form"])
    if form not in FORMS:
        raise CheckerOptionError(f"app: form {form!r} is not one of {', '.join(FORMS)}")
    order = options.get("order", DEFAULTS["order"])
    if order not in ORDERS:
        raise CheckerOptionError(f"app: order {order!r} is not one of {', '.join(ORDERS)}")
    total = options.get("total", DEFAULTS["total"])
    if total != "value" and not (total.startswith(JSON) and len(total) > len(JSON)):
        raise CheckerOptionError(f"app: total {total!r} is not value or json:FIELD")
    delivery = options.get("delivery", DEFAULTS["delivery"])
    if delivery not in DELIVERIES:
        raise CheckerOptionError(f"app: delivery {delivery!r} is not one of {', '.join(DELIVERIES)}")
    identity = options.get("identity", DEFAULTS["identity"])
    if not identity_is_valid(identity):
        raise CheckerOptionError(f"app: identity {identity!r} is not value, key, json:FIELD or header:NAME")


def identity_is_valid(identity: object) -> bool:
    return isinstance(identity, str) and (
        identity in ("value", "key")
        or any(identity.startswith(prefix) and len(identity) > len(prefix) for prefix in (JSON, HEADER))
    )


def identity_of(identity: str) -> pl.Expr:
    """The identity an output record carries, as the contract names it: its value, its key, a field of its JSON value,
    or the text of one of its headers (the final read keeps a record's headers as a JSON object)."""
    if identity == "key":
        return pl.col("key")
    if identity.startswith(JSON):
        return pl.col("value").str.json_path_match(f"$.{identity[len(JSON) :]}")
    if identity.startswith(HEADER):
        return pl.col("headers").str.json_path_match(f"$[{json.dumps(identity[len(HEADER) :])}]")
    return pl.col("value")


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "app")
    check_options(opts)
    if opts["form"] == "totals":
        return check_totals(history, opts)
    delivery, inputs, outputs = opts["delivery"], opts["input_topics"], opts["output_topics"]
    sends = history.sends.filter(pl.col("topic").is_in(inputs))
    acked = sends.filter(pl.col("outcome") == OpType.OK).select(
        "process", "key", "value", "topic", "partition", "offset"
    )
    log = history.log.filter(pl.col("topic").is_in(outputs)).with_columns(
        identity_of(opts["identity"]).alias("identity")
    )
    seen = log.group_by("identity", maintain_order=True).agg(
        pl.len().alias("copies"),
        pl.col("topic").first(),
        pl.col("partition").first(),
        pl.col("offset").first(),
        pl.col("partition").alias("partitions"),
        pl.col("offset").alias("offsets"),
        pl.col("value").alias("values"),
    )

    # What each identity is owed: one output per copy of it in the input (at least one for an acknowledged write). A
    # writer without idempotence may have written one twice (a retry across a leader change): the input then holds two
    # records of it, and an app that processes each input record once writes it twice. That copy is the producer's,
    # judged by durability; the app is held to the records it was given.
    given = history.log.filter(pl.col("topic").is_in(inputs)).group_by("value").agg(pl.len().alias("input_copies"))
    seen = seen.join(given, left_on="identity", right_on="value", how="left").with_columns(
        pl.max_horizontal(pl.col("input_copies").fill_null(0), pl.lit(1)).alias("owed")
    )
    unread = unread_partitions(history, outputs)

    lost = (
        acked.join(seen.select("identity", "copies", "owed"), left_on="value", right_on="identity", how="left")
        .join(given, on="value", how="left")
        .with_columns(pl.col("copies").fill_null(0), pl.col("owed").fill_null(pl.col("input_copies")).fill_null(1))
        .filter(pl.col("copies") < pl.col("owed"))
        .rename({"value": "identity"})
    )
    # Where each duplicated input was written and acknowledged, for its explanation.
    duplicate = seen.filter(pl.col("copies") > pl.col("owed")).join(
        acked.select(
            pl.col("value").alias("identity"),
            pl.col("topic").alias("input_topic"),
            pl.col("partition").alias("input_partition"),
            pl.col("offset").alias("input_offset"),
        ),
        on="identity",
        how="left",
    )
    # An output record without the identity its contract names (null) is one no producer sent either.
    phantom = seen.join(sends.select("value"), left_on="identity", right_on="value", how="anti")
    aborted = aborted_reads(history, outputs, opts["committed_readers"]).with_columns(
        identity_of(opts["identity"]).alias("identity")
    )
    found = {
        "lost": lost if delivery != "at-most-once" else lost.clear(),
        "duplicate": duplicate if delivery != "at-least-once" else duplicate.clear(),
        "phantom": phantom,
        "aborted-read": aborted,
        "reordered": reordered(log, acked) if opts["order"] == "per-key" else log.clear(),
    }
    counts = {
        "acknowledged-inputs": acked.height,
        "output-records": log.height,
        "distinct-outputs": seen.height,
        "lost": found["lost"].height,
        "duplicate": found["duplicate"].height,
        "duplicate-copies": int((found["duplicate"]["copies"] - found["duplicate"]["owed"]).sum() or 0),
        "input-duplicates": given.filter(pl.col("input_copies") > 1).height,
        "phantom": phantom.height,
        "aborted-read": aborted.height,
        "reordered": found["reordered"].height,
        "unread-output-partitions": len(unread),
    }
    rows = {name: examples(frame, *[c for c in _EXAMPLE if c in frame.columns]) for name, frame in found.items()}
    violations = [name for name, frame in found.items() if frame.height]
    view = uncommitted_view(history, outputs, opts["uncommitted_readers"], identity_of(opts["identity"]))
    beside = {
        "pace": pace(history, inputs, outputs, identity_of(opts["identity"])),
        **({"uncommitted_view": view} if view is not None else {}),
    }
    # Only what more reading could not undo decides an unfinished run: a duplicate or a phantom stays one; a loss is
    # unverified.
    undone = ("duplicate", "phantom", "aborted-read", "reordered")
    return app_result(history, (inputs, outputs), unread, counts, rows, violations, undone, delivery=delivery, **beside)
