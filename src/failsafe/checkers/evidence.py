"""What the history proves about its writers, its final read and its clocks: the facts every checker judges by.

    lossy_writers       the writers the scenario let lose acknowledged writes: declared ``may_lose`` (the ``declare``
    op)
                        by every client they may be, and recorded with acks 0 or 1 (their ``client-config`` op, read as
                        their library reads it). Every other writer is durable, one
                        with no recorded settings included: no option of a checker widens this set.
    read_partitions     each partition the final read was asked to read, and whether it read it completely
    clock_bounds        how far each client's times may be from failsafe's clock (clients on hosts; 0 elsewhere)
    cluster_of          the cluster a DR client talked to, from its name (``NAME@ALIAS``)
    share_starts        where each share group that began late (latest, by_duration) began, at the highest: the first
                        offset it delivered of each partition

Pure: functions of the history alone.
"""

from __future__ import annotations

import re

import polars as pl

from failsafe.history.model import History
from failsafe.history.ops import Role

# The settings by which a writer promises durability: acks=all (-1), in librdkafka's or Kafka's names.
ACKS_NAMES = ("acks", "request.required.acks")
DURABLE_ACKS = ("all", "-1")
NON_DURABLE_ACKS = ("0", "1")
JAVA_CLIENT = "kafka-java"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
_PARTITION = ["cluster", "topic", "partition"]


def recorded_acks(history: History) -> dict[str, str]:
    """Each client's acks as its client-config op recorded it, read as its library reads it: librdkafka takes the last
    of its two names, Kafka's Java client only ``acks`` (it ignores request.required.acks). A client whose library is
    not recorded counts as durable if any acks it recorded is (what excuses least)."""
    clients = history.clients.explode("config").drop_nulls("config").unnest("config")
    named = clients.filter(
        pl.col("name").is_in(ACKS_NAMES)
        & ((pl.col("client") != JAVA_CLIENT) | (pl.col("name") == "acks")).fill_null(True)
    )
    acks = (
        named.sort("time_ns", maintain_order=True)
        .group_by("process", maintain_order=True)
        .agg(
            pl.col("value").last().str.to_lowercase(),
            pl.col("value").str.to_lowercase().is_in(DURABLE_ACKS).any().alias("any_durable"),
            pl.col("client").is_null().all().alias("unrecorded"),
        )
    )
    return {
        row["process"]: "all" if row["unrecorded"] and row["any_durable"] else row["value"] for row in acks.to_dicts()
    }


def recorded_setting(history: History, name: str) -> dict[str, str]:
    """Each client's value of setting ``name`` as its client-config op recorded it (the last one given), lower case."""
    config = history.clients.explode("config").drop_nulls("config").unnest("config").filter(pl.col("name") == name)
    last = (
        config.sort("time_ns", maintain_order=True)
        .group_by("process", maintain_order=True)
        .agg(pl.col("value").last().str.to_lowercase())
    )
    return dict(zip(last["process"].to_list(), last["value"].to_list(), strict=True))


def idempotent_writers(history: History) -> set[str]:
    """The writers that recorded enable.idempotence=true: each of their writes is in the log once, or the producer
    failed."""
    return {process for process, value in recorded_setting(history, "enable.idempotence").items() if value == "true"}


def durable_writers(history: History) -> set[str]:
    """The processes whose client-config op says they write with acks=all (what reports show as durable)."""
    return {process for process, acks in recorded_acks(history).items() if acks in DURABLE_ACKS}


def declared_as(history: History, process: str) -> list[dict]:
    """The declared clients (rows of ``history.declared``) ``process`` is an incarnation of: the one it names exactly,
    else every one whose ``matches`` it fully matches."""
    rows = history.declared.to_dicts()
    exact = [row for row in rows if row["process"] == process]
    return exact or [row for row in rows if row["matches"] and re.fullmatch(row["matches"], process)]


def lossy_writers(history: History) -> set[str]:
    """The writers whose acknowledged writes may be lost without a violation: the scenario declared that they may lose
    (``may_lose``, allowed for acks 0 or 1 only), every declared client they could be an incarnation of says so, and
    they recorded acks 0 or 1. Any other writer is durable."""
    acks = recorded_acks(history)
    if not history.declared["may_lose"].any():
        return set()
    writers = history.sends["process"].drop_nulls().unique().to_list()
    return {
        p
        for p in writers
        if acks.get(p) in NON_DURABLE_ACKS and (rows := declared_as(history, p)) and all(r["may_lose"] for r in rows)
    }


def allowed_loss(lossy: set[str]) -> pl.Expr:
    """An expression over a frame's ``process`` column: the rows whose writer may lose (see :func:`lossy_writers`)."""
    return pl.col("process").is_in(sorted(lossy))


def cluster_of(column: str = "process") -> pl.Expr:
    """The alias after the last ``@`` of a client's name (a DR pair's client: NAME@ALIAS); null for a name without
    one."""
    return pl.col(column).str.extract(r"@([^@]*)$", 1)


def multi_cluster(history: History) -> bool:
    """Whether the final read read more than the one cluster of the run (a DR pair's, each read named by its alias)."""
    return history.log_reads["cluster"].drop_nulls().len() > 0


def read_partitions(history: History) -> pl.DataFrame:
    """(cluster, topic, partition, complete, log_start_offset, high_watermark, records, read_ns, retention_ms,
    retention_bytes, cleanup_policy): every partition the final read was asked to read. complete: some read of it was ok
    and none failed (a read that failed, or one cut short, proves nothing of what the log holds); ``records`` the count
    an ok read found, zero for an empty log read completely; ``read_ns`` when its last ok read ended, with its topic's
    retention as described then (null when not described)."""
    reads = history.log_reads
    ok = pl.col("ok")
    return reads.group_by(_PARTITION, maintain_order=True).agg(
        (ok.any() & ok.all()).alias("complete"),
        pl.col("log_start_offset").filter(ok).max(),
        pl.col("high_watermark").filter(ok).max(),
        pl.col("records").filter(ok).max(),
        pl.col("time_ns").filter(ok).max().alias("read_ns"),
        # The most lenient retention any read saw: a write is called deleted early only against all of them (a read
        # that did not describe it, null, leaves it unknown).
        _lenient(
            pl.when(pl.col("retention_ms") >= 0)
            .then(pl.col("retention_ms"))
            .filter(ok)
            .min()
            .fill_null(pl.col("retention_ms").filter(ok).min()),  # -1 (forever) only when every read saw it
            "retention_ms",
        ),
        _lenient(pl.col("retention_bytes").filter(ok).max(), "retention_bytes"),
        _lenient(pl.col("cleanup_policy").filter(ok).min(), "cleanup_policy"),  # "compact..." sorts before "delete"
    )


def _lenient(value: pl.Expr, column: str) -> pl.Expr:
    """``value`` of a partition's ok reads, or null when one of them did not record ``column``."""
    return pl.when(pl.col(column).filter(pl.col("ok")).is_null().any()).then(None).otherwise(value).alias(column)


def known_partitions(history: History) -> pl.DataFrame:
    """(topic, partition) of every partition the run saw: sampled, written to, or read at the end."""
    frames = [
        history.topology.select("topic", "partition"),
        history.log_reads.select("topic", "partition"),
        history.sends.select("topic", "partition"),
    ]
    return pl.concat(frames).drop_nulls().unique()


def clock_bounds(history: History) -> dict[str, int]:
    """Per client that ran on a host (workloads/verifiable/on_host.py), how far one of its times may be from failsafe's
    clock (``clock_error_ns`` of its client-config op). A client absent here read failsafe's own clock: bound 0.

    Two events are ordered by more than the sum of their clients' bounds, or not known to be ordered: two events of
    failsafe's clock need none."""
    rows = history.clients.select("process", "clock_error_ns").drop_nulls()
    bounds: dict[str, int] = {}
    for process, bound in rows.iter_rows():
        bounds[process] = max(bounds.get(process, 0), int(bound))
    return {p: b for p, b in bounds.items() if b > 0}


def bound_ns(column: str, bounds: dict[str, int]) -> pl.Expr:
    """An expression: the clock bound of the client named in ``column`` (0 for failsafe's clock and unnamed
    processes)."""
    if not bounds:
        return pl.lit(0, dtype=pl.Int64)
    return pl.col(column).replace_strict(bounds, default=0, return_dtype=pl.Int64).fill_null(0)


def late_share_groups(history: History) -> pl.DataFrame:
    """(group, topic): each share group that did not begin at the log's start, with each topic it read (delivered or
    declared). Its share.auto.offset.reset, as the cluster described it (its last ``group-config`` op), is latest
    (Kafka's default) or by_duration:…; a group whose reset was not recorded counts as beginning at the start (earliest:
    what excuses least)."""
    configs = history.group_configs.filter(pl.col("name") == SHARE_AUTO_OFFSET_RESET).sort(
        "time_ns", maintain_order=True
    )
    reset = configs.group_by("group", maintain_order=True).agg(pl.col("value").last().str.to_lowercase())
    late = reset.filter(pl.col("value") != "earliest")["group"]
    declared = (
        history.declared.filter(pl.col("role") == Role.SHARE_CONSUMER)
        .select("group", pl.col("topics").alias("topic"))
        .explode("topic")
    )
    read = pl.concat([history.share_deliveries.select("group", "topic"), declared]).drop_nulls().unique()
    return read.filter(pl.col("group").is_in(late.implode())).sort("group", "topic")


def share_starts(history: History) -> pl.DataFrame:
    """(group, topic, partition, first): the first offset each late share group (:func:`late_share_groups`) delivered of
    each partition, the highest its start can be. A write below it was never the group's to get; one of a partition the
    group delivered nothing of is undecided (the group may have begun after it, or lost it)."""
    late = late_share_groups(history)
    deliveries = history.share_deliveries.join(late, on=["group", "topic"], how="semi")
    return (
        deliveries.group_by("group", "topic", "partition")
        .agg(pl.col("offset").min().alias("first"))
        .sort("group", "topic", "partition")
    )


def before_share_start(history: History, writes: pl.DataFrame) -> pl.Series:
    """For each of ``writes`` (rows with topic, partition, offset), on a topic that late share groups alone read (no
    consumer group, no other reader declared or seen): "before" when its offset is below every such group's first
    delivered offset of its partition, "undecided" when one of them delivered nothing of that partition and none began
    at or before it; null otherwise (judged as any write)."""
    late = late_share_groups(history)
    if late.height == 0 or writes.height == 0:
        return pl.Series("share_start", [None] * writes.height, dtype=pl.String)
    others = pl.concat(
        [
            history.reads.select("topic"),
            history.declared.filter(pl.col("role").is_in([Role.CONSUMER, Role.PROCESSOR]))
            .select(pl.col("topics").alias("topic"))
            .explode("topic"),
            history.declared.filter(
                (pl.col("role") == Role.SHARE_CONSUMER) & ~pl.col("group").is_in(late["group"].implode())
            )
            .select(pl.col("topics").alias("topic"))
            .explode("topic"),
            history.share_deliveries.filter(~pl.col("group").is_in(late["group"].implode())).select("topic"),
        ]
    ).drop_nulls()
    late = late.filter(~pl.col("topic").is_in(others["topic"].implode()))
    rows = writes.select("topic", "partition", "offset").with_row_index("_w")
    pairs = rows.join(late, on="topic", how="inner").join(
        share_starts(history), on=["group", "topic", "partition"], how="left"
    )
    decided = pairs.group_by("_w").agg(
        (pl.col("offset") >= pl.col("first")).fill_null(False).any().alias("_judged"),
        pl.col("first").is_null().any().alias("_unknown"),
    )
    status = (
        pl.when(pl.col("_judged") | pl.col("_judged").is_null())
        .then(None)
        .when(pl.col("_unknown"))
        .then(pl.lit("undecided"))
        .otherwise(pl.lit("before"))
    )
    return (
        rows.join(decided, on="_w", how="left")
        .sort("_w")
        .select(status.cast(pl.String).alias("share_start"))["share_start"]
    )
