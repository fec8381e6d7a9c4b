"""DR: what moving a workload from one cluster to another mirrored by MirrorMaker 2 cost, and what it broke.

The history spans both clusters, ``clusters = [source, target]``. Every client is named ``NAME@ALIAS``:
the alias after the last ``@`` is the cluster it talked to. A write is known by its value alone
(values are unique across the run, and MirrorMaker copies them unchanged into ``<source>.<topic>``
on the target). The log is the final read of the target; its mirrored topics are ``<source>.T`` for
every topic T the source's producers wrote.

T0, the move: the first fault on the source (a fault whose target is the source's alias, or a
region loss, target ``cluster``), else the first ``dr-switch`` op (a planned move). Only a move
after the source's clients began counts, so a failback's T0 is never the failover before it.

Measured: RPO (writes acknowledged on the source, before T0 or after it, that the target's mirror lacks, and
how many seconds of data before T0 they span: a planned move records T0 before its producers stop, and what they
wrote in between is the source's too), RTO (from T0 to the first record read on the target, and
to each group having read every mirrored partition to its end), records a group read twice (expected:
MirrorMaker translates offsets conservatively), mirror duplicates (MirrorMaker is at-least-once).
Violations: a mirrored partition out of the source's order (``mirror-reordered``), a mirrored write a
group never read anywhere (``skipped``), a write acknowledged on the target after T0 that no group
read (``target-unread``), a group that never caught up on the target (``groups-not-caught-up``), a partition
that never recovered after the heal (``never-recovered``, checkers/liveness.py). A skipped or unread write of a
writer that may lose (evidence.lossy_writers) is counted, never a violation; one of any other writer always is. Whether
each cluster's own log still holds what was acknowledged on it is the durability checker's question (the final read
reads both clusters).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerOptionError, CheckerResult, Side, examples, read_options, result
from failsafe.checkers.evidence import allowed_loss, cluster_of, lossy_writers
from failsafe.checkers.liveness import never_recovered
from failsafe.history.model import History
from failsafe.history.ops import Op, OpType, Target

# clusters: [source, target] of the move judged; expect_unrecovered: partitions ("topic-N") expected to stay down.
DEFAULTS: dict[str, Any] = {"clusters": ["primary", "backup"], "expect_unrecovered": None}
VIOLATIONS = {
    "mirror-reordered": Side.CLUSTER,
    "skipped": Side.CONSUMERS,
    "target-unread": Side.CONSUMERS,
    "groups-not-caught-up": Side.CONSUMERS,
    "never-recovered": Side.CLUSTER,
}
_NS = 1_000_000_000
_PARTITION = ["topic", "partition"]
_SEND_EXAMPLE = ("id", "process", "topic", "partition", "offset", "value", "complete_ns")


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "dr")
    source, target = _clusters(opts["clusters"])
    t0, t0_kind = move_time(history, source, target)
    fields: dict[str, Any] = {"source": source, "target": target, "t0_ns": t0, "t0_kind": t0_kind}
    sends = history.sends.filter(pl.col("value").is_not_null()).with_columns(cluster=cluster_of())
    by_source = sends.filter((pl.col("cluster") == source) & (pl.col("outcome") == OpType.OK))
    acked_source = by_source if t0 is not None else by_source.head(0)
    topics = [f"{source}.{topic}" for topic in sends.filter(pl.col("cluster") == source)["topic"].unique().drop_nulls()]
    mirrored = history.log.filter(
        pl.col("topic").is_in(topics)
        & pl.col("value").is_not_null()
        & (pl.col("cluster").is_null() | (pl.col("cluster") == target))
    )
    reason = (
        "no fault on the source and no dr-switch after its clients began: the run never moved"
        if t0 is None
        else f"no write was acknowledged on the {source} before the move"
        if not acked_source.height
        else f"the log read of the {target} holds no topic mirrored from the {source} ({source}.*)"
        if not mirrored.height
        else None
    )
    if reason is not None or t0 is None:
        return result(UNKNOWN, {}, {}, reason=reason, **fields)

    reads = history.reads.with_columns(cluster=cluster_of())
    group_reads = reads.filter(pl.col("group").is_not_null() & pl.col("value").is_not_null())
    groups = sorted(group_reads["group"].unique().to_list())
    rpo = acked_source.join(mirrored.select("value").unique(), on="value", how="anti").sort("complete_ns")
    duplicates = (
        mirrored.filter(pl.col("value").is_duplicated())
        .group_by(*_PARTITION, "value", maintain_order=True)
        .agg("offset")
    )
    reordered = _mirror_reordered(mirrored, by_source)
    twice = _consumed_twice(group_reads, acked_source, source, target)
    twice_after_move = twice.filter(pl.col("on_source") & pl.col("on_target"))
    skipped = _skipped(
        acked_source.join(mirrored.select("value").unique(), on="value", how="semi"), group_reads, groups
    )
    acked_target = sends.filter(
        (pl.col("cluster") == target) & (pl.col("outcome") == OpType.OK) & (pl.col("invoke_ns") >= t0)
    )
    target_unread = acked_target.join(group_reads.select("value").unique(), on="value", how="anti").sort("id")
    on_target = group_reads.filter((pl.col("cluster") == target) & (pl.col("time_ns") >= t0))
    caught = {
        group: _caught_up(
            group_reads.filter(pl.col("group") == group), on_target.filter(pl.col("group") == group), mirrored
        )
        for group in groups
    }
    not_caught = [{"group": group, "missing": missing} for group, (_, at, missing) in caught.items() if at is None]
    lossy = lossy_writers(history)
    skipped_allowed = skipped.filter(allowed_loss(lossy)).height
    unread_allowed = target_unread.filter(allowed_loss(lossy)).height
    unrecovered = never_recovered(history, opts["expect_unrecovered"])

    counts = {
        "acknowledged-on-source": acked_source.height,
        "rpo-records": rpo.height,
        "mirrored": mirrored["value"].n_unique(),
        "mirror-duplicates": duplicates["value"].n_unique(),
        "mirror-reordered": reordered.height,
        "consumed-twice": twice.height,
        "consumed-twice-after-move": twice_after_move.height,
        "skipped": skipped.height,
        "skipped-allowed": skipped_allowed,
        "acknowledged-on-target": acked_target.height,
        "target-unread": target_unread.height,
        "target-unread-allowed": unread_allowed,
        "groups-not-caught-up": len(not_caught),
        "never-recovered": unrecovered.height,
    }
    twice_example = ("group", "value", "reads", "processes", "topics", "times_ns")
    example_rows = {
        "rpo-records": examples(rpo, *_SEND_EXAMPLE),
        "mirror-duplicates": examples(duplicates, *_PARTITION, "value", "offset"),
        "mirror-reordered": examples(
            reordered, *_PARTITION, "offset", "value", "source_partition", "source_offset", "previous_source_offset"
        ),
        "consumed-twice": examples(twice, *twice_example),
        "consumed-twice-after-move": examples(twice_after_move, *twice_example),
        "skipped": examples(skipped, "group", *_SEND_EXAMPLE),
        "target-unread": examples(target_unread, *_SEND_EXAMPLE),
        "groups-not-caught-up": not_caught[:5],
        "never-recovered": examples(unrecovered),
    }
    caught_up = [at for _, at, _ in caught.values()]
    first_read = reads.filter((pl.col("cluster") == target) & (pl.col("time_ns") >= t0))["time_ns"].min()
    fields |= {
        "rpo_records": rpo.height,
        "rpo_seconds": max(t0 - int(rpo["complete_ns"].min()), 0) / _NS if rpo.height else 0.0,  # type: ignore[arg-type]
        "rpo_by_partition": _rpo_by_partition(rpo, t0),
        "rto_first_read_s": _seconds(first_read, t0),
        "rto_caught_up_s": None if not caught_up or None in caught_up else _seconds(max(caught_up), t0),  # type: ignore[type-var]
        "groups": {
            group: {
                "first_read_s": _seconds(first, t0),
                "caught_up_s": _seconds(at, t0),
                "consumed_twice": twice.filter(pl.col("group") == group).height,
                "skipped": skipped.filter(pl.col("group") == group).height,
            }
            for group, (first, at, _) in caught.items()
        },
    }
    allowed = {"skipped": skipped_allowed, "target-unread": unread_allowed}
    violations = [name for name in VIOLATIONS if counts[name] > allowed.get(name, 0)]
    return result(not violations, counts, example_rows, violations, **fields)


def check_options(options: Mapping) -> None:
    """What a scenario's [checkers.dr] must hold, checked when it is parsed (CheckerOptionError otherwise)."""
    _clusters(read_options(options, DEFAULTS, "dr")["clusters"])


def _clusters(clusters: list[str] | None) -> tuple[str, str]:
    clusters = list(DEFAULTS["clusters"] if clusters is None else clusters)
    if len(clusters) != 2 or clusters[0] == clusters[1]:
        raise CheckerOptionError(
            f"dr: option 'clusters' must name two different clusters [source, target], not {clusters!r}"
        )
    return clusters[0], clusters[1]


def move_time(history: History, source: str, target: str) -> tuple[int | None, str | None]:
    """T0 and its kind: the first fault on the source ("fault"), else the first dr-switch ("dr-switch"), after the
    source's first client op.

    A region loss (cluster-loss) is recorded with target "cluster": the engine's cluster, the source.
    """
    began = pl.concat(
        [
            history.sends.filter(cluster_of() == source).select(pl.col("invoke_ns").alias("t")),
            history.reads.filter(cluster_of() == source).select(pl.col("time_ns").alias("t")),
        ]
    )["t"].min()

    def after(column: str) -> pl.Expr:
        return pl.col(column) >= began if began is not None else pl.col(column).is_not_null()

    # A region loss is recorded with target "cluster" (the engine's cluster, the source, unless it names the target).
    on_source = (pl.col("target") == source) | (pl.col("target") == Target.CLUSTER)
    losses = history.faults.filter(on_source & after("start_ns"))
    if losses.height:
        return int(losses["start_ns"].min()), "fault"  # type: ignore[arg-type]
    switches = history.events.filter((pl.col("f") == Op.DR_SWITCH) & after("time_ns"))
    if switches.height:
        return int(switches["time_ns"].min()), "dr-switch"  # type: ignore[arg-type]
    return None, None


def _seconds(ns: Any, t0: int) -> float | None:
    return None if ns is None else (int(ns) - t0) / _NS


def _rpo_by_partition(rpo: pl.DataFrame, t0: int) -> list[dict[str, Any]]:
    """The RPO set per source partition: its records, and the seconds of data before T0 they span."""
    by_partition = rpo.group_by(_PARTITION).agg(records=pl.len(), first=pl.col("complete_ns").min()).sort(_PARTITION)
    return by_partition.select(
        *_PARTITION, "records", seconds=(pl.lit(t0) - pl.col("first")).clip(lower_bound=0) / _NS
    ).to_dicts()


def _mirror_reordered(mirrored: pl.DataFrame, by_source: pl.DataFrame) -> pl.DataFrame:
    """Mirrored records placed after a record of the same source partition that the source acknowledged at a higher
    offset: the mirror did not keep the source's order per partition, hence per key.

    Only each value's first copy is compared: a later copy is MirrorMaker sending again (a mirror duplicate), not a
    reorder."""
    sources = by_source.select(
        "value", pl.col("partition").alias("source_partition"), pl.col("offset").alias("source_offset")
    )
    placed = (
        mirrored.sort(*_PARTITION, "offset")
        .unique(subset="value", keep="first", maintain_order=True)
        .join(sources.drop_nulls().unique(subset="value", keep="first"), on="value", how="inner", maintain_order="left")
    )
    keys = [*_PARTITION, "source_partition"]
    placed = placed.with_columns(previous_source_offset=pl.col("source_offset").cum_max().shift(1).over(keys))
    return placed.filter(pl.col("source_offset") < pl.col("previous_source_offset"))


def _consumed_twice(group_reads: pl.DataFrame, acked_source: pl.DataFrame, source: str, target: str) -> pl.DataFrame:
    """(group, value) of writes acknowledged on the source that the group read more than once, on either cluster:
    by which processes, in which topics, when, and whether on the source and on the target."""
    # A total order (reads at one instant by process, then cluster), so the lists below are the same on every check.
    reads = group_reads.join(acked_source.select("value"), on="value", how="semi").sort(
        "time_ns", "process", "cluster", "topic"
    )
    per_value = reads.group_by("group", "value", maintain_order=True).agg(
        reads=pl.len(),
        processes="process",
        topics="topic",
        times_ns="time_ns",
        on_source=(pl.col("cluster") == source).any(),
        on_target=(pl.col("cluster") == target).any(),
    )
    return per_value.filter(pl.col("reads") > 1).sort("group", pl.col("times_ns").list.first())


def _skipped(in_mirror: pl.DataFrame, group_reads: pl.DataFrame, groups: list[str]) -> pl.DataFrame:
    """(group, write) of mirrored writes acknowledged on the source that the group never read, on either cluster."""
    wanted = pl.DataFrame({"group": groups}, schema={"group": pl.String}).join(in_mirror, how="cross")
    return wanted.join(group_reads.select("group", "value").unique(), on=["group", "value"], how="anti").sort(
        "group", "id"
    )


def _caught_up(
    mine: pl.DataFrame, mine_on_target: pl.DataFrame, mirrored: pl.DataFrame
) -> tuple[Any, int | None, list[dict]]:
    """A group's first read on the target since T0, when it had caught up (None: never) and the partitions it never
    reached.

    A mirrored partition is reached by a read on the target at or past its last offset, or by any read of its last value
    (read on the source before T0, the group has nothing of it left to read on the target). Caught up: every non-empty
    mirrored partition reached, and the group reading on the target; at the latest of those times.
    """
    ends = mirrored.group_by(_PARTITION).agg(
        end=pl.col("offset").max(), end_value=pl.col("value").sort_by("offset").last()
    )
    by_offset = (
        mine_on_target.join(ends, on=_PARTITION)
        .filter(pl.col("offset") >= pl.col("end"))
        .select(*_PARTITION, "time_ns")
    )
    last_values = ends.select(*_PARTITION, value=pl.col("end_value"))
    by_value = mine.select("value", "time_ns").join(last_values, on="value").select(*_PARTITION, "time_ns")
    reached = pl.concat([by_offset, by_value]).group_by(_PARTITION).agg(at=pl.col("time_ns").min())
    missing = ends.join(reached, on=_PARTITION, how="anti").sort(_PARTITION).select(*_PARTITION, "end")
    first = mine_on_target["time_ns"].min()
    if missing.height or first is None:
        return first, None, missing.head(5).to_dicts()
    return first, max(int(first), int(reached["at"].max())), []  # type: ignore[arg-type]
