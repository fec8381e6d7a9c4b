"""What the history proves about its writers, its final read and its clocks: the facts every checker judges by.

    lossy_writers       the writers the scenario let lose acknowledged writes: declared ``may_lose`` (the ``declare`` op)
                        and recorded with acks 0 or 1 (their ``client-config`` op). Every other writer is durable, one
                        with no recorded settings included: no option of a checker widens this set.
    read_partitions     each partition the final read was asked to read, and whether it read it completely
    clock_bounds        how far each client's times may be from failsafe's clock (clients on hosts; 0 elsewhere)
    cluster_of          the cluster a DR client talked to, from its name (``NAME@ALIAS``)

Pure: functions of the history alone.
"""

from __future__ import annotations

import re

import polars as pl

from failsafe.history.model import History

# The settings by which a writer promises durability: acks=all (-1), in librdkafka's or Kafka's names.
ACKS_NAMES = ("acks", "request.required.acks")
DURABLE_ACKS = ("all", "-1")
NON_DURABLE_ACKS = ("0", "1")
_PARTITION = ["cluster", "topic", "partition"]


def recorded_acks(history: History) -> dict[str, str]:
    """Each client's acks as its client-config op recorded it: the last setting given (librdkafka takes the last one)."""
    clients = history.clients.explode("config").drop_nulls("config").unnest("config")
    acks = clients.filter(pl.col("name").is_in(ACKS_NAMES)).sort("time_ns", maintain_order=True).group_by("process", maintain_order=True) \
        .agg(pl.col("value").last().str.to_lowercase())
    return dict(zip(acks["process"].to_list(), acks["value"].to_list(), strict=True))


def recorded_setting(history: History, name: str) -> dict[str, str]:
    """Each client's value of setting ``name`` as its client-config op recorded it (the last one given), lower case."""
    config = history.clients.explode("config").drop_nulls("config").unnest("config").filter(pl.col("name") == name)
    last = config.sort("time_ns", maintain_order=True).group_by("process", maintain_order=True).agg(pl.col("value").last().str.to_lowercase())
    return dict(zip(last["process"].to_list(), last["value"].to_list(), strict=True))


def idempotent_writers(history: History) -> set[str]:
    """The writers that recorded enable.idempotence=true: each of their writes is in the log once, or the producer failed."""
    return {process for process, value in recorded_setting(history, "enable.idempotence").items() if value == "true"}


def durable_writers(history: History) -> set[str]:
    """The processes whose client-config op says they write with acks=all (what reports show as durable)."""
    return {process for process, acks in recorded_acks(history).items() if acks in DURABLE_ACKS}


def declared_as(history: History, process: str, frame: pl.DataFrame | None = None) -> list[dict]:
    """The declared clients (rows of ``history.declared``) ``process`` is an incarnation of."""
    rows = (history.declared if frame is None else frame).to_dicts()
    return [row for row in rows if row["process"] == process or (row["matches"] and re.fullmatch(row["matches"], process))]


def lossy_writers(history: History) -> set[str]:
    """The writers whose acknowledged writes may be lost without a violation: the scenario declared that they may lose
    (``may_lose``, allowed for acks 0 or 1 only) and they recorded acks 0 or 1. Any other writer is durable."""
    acks = recorded_acks(history)
    declared = history.declared.filter(pl.col("may_lose"))
    if declared.height == 0:
        return set()
    writers = history.sends["process"].drop_nulls().unique().to_list()
    return {p for p in writers if acks.get(p) in NON_DURABLE_ACKS and declared_as(history, p, declared)}


def allowed_loss(lossy: set[str]) -> pl.Expr:
    """An expression over a frame's ``process`` column: the rows whose writer may lose (see :func:`lossy_writers`)."""
    return pl.col("process").is_in(sorted(lossy))


def cluster_of(column: str = "process") -> pl.Expr:
    """The alias after the last ``@`` of a client's name (a DR pair's client: NAME@ALIAS); null for a name without one."""
    return pl.col(column).str.extract(r"@([^@]*)$", 1)


def multi_cluster(history: History) -> bool:
    """Whether the final read read more than the one cluster of the run (a DR pair's, each read named by its alias)."""
    return history.log_reads["cluster"].drop_nulls().len() > 0


def read_partitions(history: History) -> pl.DataFrame:
    """(cluster, topic, partition, complete, log_start_offset, high_watermark, records): every partition the final read was
    asked to read. complete: some read of it was ok and none failed (a read that failed, or one cut short, proves nothing of
    what the log holds); ``records`` the count an ok read found, zero for an empty log read completely."""
    reads = history.log_reads
    return reads.group_by(_PARTITION, maintain_order=True).agg(
        (pl.col("ok").any() & pl.col("ok").all()).alias("complete"),
        pl.col("log_start_offset").filter(pl.col("ok")).max(),
        pl.col("high_watermark").filter(pl.col("ok")).max(),
        pl.col("records").filter(pl.col("ok")).max())


def known_partitions(history: History) -> pl.DataFrame:
    """(topic, partition) of every partition the run saw: sampled, written to, or read at the end."""
    frames = [history.topology.select("topic", "partition"), history.log_reads.select("topic", "partition"),
              history.sends.select("topic", "partition")]
    return pl.concat(frames).drop_nulls().unique()


def clock_bounds(history: History) -> dict[str, int]:
    """Per client that ran on a host (workloads/on_host.py), how far one of its times may be from failsafe's clock
    (``clock_error_ns`` of its client-config op). A client absent here read failsafe's own clock: bound 0.

    Two events are ordered by more than the sum of their clients' bounds, or not known to be ordered: two events of
    failsafe's clock need none."""
    rows = history.clients.select("process", "clock_error_ns").drop_nulls()
    bounds: dict[str, int] = {}
    for process, bound in rows.iter_rows():
        bounds[process] = max(bounds.get(process, 0), int(bound))
    return {p: b for p, b in bounds.items() if b > 0}


def bound_ns(column: str, bounds: dict[str, int]) -> pl.Expr:
    """An expression: the clock bound of the client named in ``column`` (0 for failsafe's clock and unnamed processes)."""
    if not bounds:
        return pl.lit(0, dtype=pl.Int64)
    return pl.col(column).replace_strict(bounds, default=0, return_dtype=pl.Int64).fill_null(0)
