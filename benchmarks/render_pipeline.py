"""The Spark pipeline's tables in docs/benchmarks.md (render_docs.py renders and checks them)."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.render_base import RenderError, load, num, source, table


def _backlog_cells(d: dict) -> list[str]:
    b = d["backlog"]
    c = b["ceiling"]
    return [
        f"{num(c['steady_records_per_s'])}/s, {c['wall_s_with_spark_start']:.1f} s",
        f"**{num(b['steady_records_per_s'])}/s** ({b['pipeline_steady_over_ceiling']:.2f})",
        f"{b['wall_s_with_spark_start']:.1f} s ({b['pipeline_wall_s_over_ceiling']:.2f})",
        f"{b['first_batch_s']:.1f} s",
        "yes" if b["sink_equals_ledger"] else "**no**",
    ]


def t_pipeline_backlog(root: Path) -> str:
    runs = (
        ("docs/benchmarks/pipeline.json", "the pipeline as `make bench` last measured it"),
        ("docs/benchmarks/pipeline-one-query.json", "one query, totals on the driver, 2026-11-24"),
        (
            "docs/benchmarks/pipeline-two-queries-same-session.json",
            "two queries (commit 23a8813), same session as the row above",
        ),
    )
    rows = []
    for rel, what in runs:
        d = load(root, rel)
        b = d["backlog"]
        rows.append(
            [
                f"{what} (`{Path(rel).name}`)",
                f"{num(b['records'])} / {num(b['max_records_per_batch'])}",
                *_backlog_cells(d),
            ]
        )
    header = [
        "run",
        "backlog / batch",
        "ceiling query: steady rate, wall with Spark's start",
        "pipeline: steady rate (ratio of the ceiling's)",
        "pipeline: wall with Spark's start (ratio)",
        "pipeline: first batch",
        "sink equals ledger",
    ]
    return table(header, rows) + source(root, *(rel for rel, _ in runs))


def t_pipeline_live(root: Path) -> str:
    rel = "docs/benchmarks/pipeline.json"
    live = load(root, rel)["live_at_half_rate"]
    if not live:
        return "Not measured in the stored file (`--live-s 0`)." + source(root, rel)
    a = live["latency_after_warmup"]
    row = [
        f"{num(live['rate_per_s'])}/s for {live['duration_s']:.0f} s, {live['trigger_s']} s trigger",
        num(live["latency_all"]["records"]),
        f"{a['p50_s']:.2f} / **{a['p99_s']:.2f}** / {a['max_s']:.2f} s",
        f"{live['latency_all']['p99_s']:.1f} s",
        f"{live['latency_slope_s_per_s']:+.3f}",
        "yes" if live["bounded"] else "**no**",
        "yes" if live["sink_equals_ledger"] else "**no**",
    ]
    header = [
        "live at half the backlog's steady rate",
        "purchases",
        f"latency after {live['warmup_s']:.0f} s: p50 / p99 / max",
        "all purchases: p99",
        "slope (s/s)",
        "bounded",
        "sink = ledger",
    ]
    return table(header, [row]) + source(root, rel)


def sustained_rows(d: dict) -> list[list[str]]:
    rows = []
    for r in d["runs"]:
        a = r["latency_after_warmup"]
        rows.append(
            [
                f"{num(r['rate_per_s'])}/s",
                f"{r['duration_s']:.0f} s",
                f"{a['p50_s']:.2f} / {a['p99_s']:.2f} / {a['max_s']:.2f} s",
                f"{r['latency_all']['p99_s']:.1f} s",
                f"{r['latency_slope_s_per_s']:+.3f}",
                "yes" if r["bounded"] else "**no**",
                "yes" if r["sink_equals_ledger"] else "**no**",
            ]
        )
    return rows


SUSTAINED_HEADER = [
    "rate",
    "run",
    "latency after the warm-up: p50 / p99 / max",
    "all purchases: p99",
    "slope (s/s)",
    "bounded",
    "sink = ledger",
]


def sustained_note(d: dict) -> str:
    """The line under a sustained table: the rate it found and what bounded means."""
    rate = d["sustained_rate_per_s"]
    return (
        "\n\nSustained rate (the highest rate tried whose latency stayed bounded): "
        + (f"**{num(rate)}/s**; " if rate else "**none of them**; ")
        + f"bounded = slope of each second's worst latency at most {d['bounded_slope_s_per_s']} s/s."
    )


def t_pipeline_sustained(root: Path, rel: str = "docs/benchmarks/pipeline-state-sustained.json") -> str:
    d = load(root, rel)
    return table(SUSTAINED_HEADER, sustained_rows(d)) + sustained_note(d) + source(root, rel)


def t_pipeline_live_pair(root: Path) -> str:
    """Live at 5,000/s, the tree before this pass and after it, one after the other in one session."""
    rels = ("docs/benchmarks/pipeline-live-5000-115b35b.json", "docs/benchmarks/pipeline-live-5000-after.json")
    rows = []
    for rel, what in zip(rels, ("before (115b35b)", "after (this pass)"), strict=True):
        rows += [[what, *row] for row in sustained_rows(load(root, rel))]
    return table(["tree", *SUSTAINED_HEADER], rows) + source(root, *rels)


def t_pipeline_sustained_two_queries(root: Path) -> str:
    rel = "docs/benchmarks/pipeline-sustained.json"
    d = load(root, rel)
    return table(SUSTAINED_HEADER, sustained_rows(d)) + source(root, rel)


def t_pipeline_targets(root: Path) -> str:
    backlog_rel, sustained_rel = "docs/benchmarks/pipeline.json", "docs/benchmarks/pipeline-state-sustained.json"
    realtime_rels = ("docs/benchmarks/realtime.json", "docs/benchmarks/realtime-checkpoint-5s-10s.json")
    b = load(root, backlog_rel)["backlog"]
    sustained = load(root, sustained_rel)
    at_5000 = [r for r in sustained["runs"] if r["rate_per_s"] == 5000]
    if not at_5000:
        raise RenderError(f"{sustained_rel}: no run at 5,000/s")
    p99_5000 = at_5000[0]["latency_after_warmup"]["p99_s"]
    realtime = [
        r["latency_after_warmup"]["p99_s"]
        for rel in realtime_rels
        for r in load(root, rel)["runs"]
        if r["trigger"] == "real-time" and float(r["args"][1]) <= 10
    ]
    under = [p for p in realtime if p <= 1]
    over = [p for p in realtime if p > 1]

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    rt = f"met in {len(under)} of {len(realtime)} runs" + (f" ({min(under):.2f}-{max(under):.2f} s)" if under else "")
    if over:
        rt += "; " + ", ".join(f"{p:.2f} s" for p in over) + " in the other" + ("s" if len(over) > 1 else "")
    rows = [
        [
            "live at 5,000 purchases/s: latency p99 (after the warm-up) ≤ 5 s",
            f"{p99_5000:.2f} s",
            met(p99_5000 <= 5),
            f"`{Path(sustained_rel).name}`",
        ],
        [
            "real-time trigger (checkpoint 5 or 10 s): p99 ≤ 1 s",
            ", ".join(f"{p:.2f} s" for p in realtime),
            rt,
            ", ".join(f"`{Path(r).name}`" for r in realtime_rels),
        ],
        [
            "at least 10,000 purchases/s on local[2]",
            f"sustained live: at least {num(sustained['sustained_rate_per_s'])}/s"
            + (
                " (the highest rate tried)"
                if sustained["sustained_rate_per_s"] == max(r["rate_per_s"] for r in sustained["runs"])
                else ""
            )
            + f"; backlog steady: {num(b['steady_records_per_s'])}/s",
            f"live: {met(sustained['sustained_rate_per_s'] >= 10000)}; backlog: "
            f"{met(b['steady_records_per_s'] >= 10000)}",
            f"`{Path(sustained_rel).name}`, `{Path(backlog_rel).name}`",
        ],
        [
            "backlog steady rate ≥ 0.6 of the ceiling query's, same run",
            f"{b['pipeline_steady_over_ceiling']:.2f}",
            met(b["pipeline_steady_over_ceiling"] >= 0.6),
            f"`{Path(backlog_rel).name}`",
        ],
        [
            "the whole backlog in ≤ 2x the ceiling query's wall time",
            f"{b['pipeline_wall_s_over_ceiling']:.2f}x",
            met(b["pipeline_wall_s_over_ceiling"] <= 2),
            f"`{Path(backlog_rel).name}`",
        ],
        [
            "first micro-batch under 10 s (the backlog's first batch)",
            f"{b['first_batch_s']:.1f} s",
            met(b["first_batch_s"] < 10),
            f"`{Path(backlog_rel).name}`",
        ],
    ]
    return table(["target", "measured", "", "raw file (docs/benchmarks/)"], rows)


def t_realtime(root: Path) -> str:
    rels = (
        "docs/benchmarks/realtime.json",
        "docs/benchmarks/realtime-checkpoint-5s-10s.json",
        "docs/benchmarks/realtime-checkpoint-30s.json",
    )
    rows = []
    for rel in rels:
        for r in load(root, rel)["runs"]:
            args = r["args"]
            master = args[args.index("--master") + 1]
            trigger = (
                f"real-time, checkpoint {args[1]} s"
                if r["trigger"] == "real-time"
                else f"micro-batch, `--trigger-s {args[1]}`"
            )
            if r.get("note"):
                trigger += f" ({r['note'].split(', ', 1)[1]})" if ", " in r["note"] else ""
            a = r["latency_after_warmup"]
            rows.append(
                [
                    f"{trigger}, {master}",
                    f"`{Path(rel).name}`",
                    f"{a['p50_s']:.3f} / **{a['p99_s']:.3f}** / {a['max_s']:.3f} s",
                    f"{r['latency_all']['p99_s']:.2f} s",
                    f"{r['first_batch_s']:.1f} s",
                    f"{num(r['acknowledged'])}, {r['missing']} missing, {r['duplicates']} duplicates",
                ]
            )
    header = [
        "trigger",
        "file",
        "latency after 30 s: p50 / p99 / max",
        "all purchases: p99",
        "first batch",
        "purchases",
    ]
    return table(header, rows) + source(root, *rels)


def t_pipeline_sustained_driver_state(root: Path) -> str:
    return t_pipeline_sustained(root, "docs/benchmarks/pipeline-one-query-sustained.json")


def t_pipeline_state(root: Path) -> str:
    """The backlog before and after the running totals went back into Spark's state store, same session."""
    runs = (
        ("docs/benchmarks/pipeline-driver-state.json", "before: the totals on the driver (commit d7756c3)"),
        ("docs/benchmarks/pipeline-state-spark.json", "after: Spark's stateful aggregation, RocksDB (commit 0deba24)"),
    )
    rows = []
    for rel, what in runs:
        d = load(root, rel)
        rows.append([f"{what} (`{Path(rel).name}`)", *_backlog_cells(d)])
    header = [
        "run (200,000 purchases, batches of 50,000)",
        "ceiling query: steady rate, wall with Spark's start",
        "pipeline: steady rate (ratio of the ceiling's)",
        "pipeline: wall with Spark's start (ratio)",
        "pipeline: first batch",
        "sink equals ledger",
    ]
    return table(header, rows) + source(root, *(rel for rel, _ in runs))


def t_pipeline_state_store(root: Path) -> str:
    rel = "docs/benchmarks/pipeline-state-store.json"
    d = load(root, rel)
    rows = [
        [
            f"`{r['variant']}`",
            r["provider"].removesuffix("StateStoreProvider") + (", changelog" if r["changelog_checkpointing"] else ""),
            str(r["shuffle_partitions"]),
            r["sink"] + (" (Kafka producer's defaults)" if r.get("results_producer") == "Kafka's defaults" else ""),
            f"**{num(r['steady_records_per_s'])}/s**",
            f"{r['first_batch_s']:.1f} s",
            f"{num(r['mean_add_batch_ms'])} ms",
            num(r["mean_state_rows"]),
            f"{r['mean_state_update_ms']} / {r['mean_state_removal_ms']} / {r['mean_state_commit_ms']} ms",
        ]
        for r in d["runs"]
    ]
    header = [
        "variant",
        "state store",
        "partitions",
        "sink",
        "steady rate",
        "first batch",
        "addBatch (mean)",
        "state rows (mean)",
        "state update / removal / commit (mean, summed over partitions)",
    ]
    note = (
        f"\n\n{num(d['records'])} purchases in batches of at most {num(d['max_records_per_batch'])}, one run per "
        "variant, each in a Spark of its own on local[2]; the means are over the full batches after the first."
    )
    return table(header, rows) + note + source(root, rel)


def _rounds_table(root: Path, steps: tuple[tuple[str, str], ...], first_column: str) -> str:
    """One row per tree or setting (``steps``: file-name prefix under docs/benchmarks/, label), each the median
    (min-max) of its ``bench_pipeline.py`` backlog runs ``PREFIX-r*.json``, taken in turn round after round in one
    session."""

    def spread(values: list[float], fmt: str) -> str:
        return f"**{format(statistics.median(values), fmt)}** ({format(min(values), fmt)}-{format(max(values), fmt)})"

    rows, rels = [], []
    for prefix, what in steps:
        found = sorted(p.relative_to(root).as_posix() for p in (root / "docs/benchmarks").glob(f"{prefix}-r*.json"))
        if not found:
            raise RenderError(f"docs/benchmarks/{prefix}-r*.json: missing")
        runs = [load(root, rel)["backlog"] for rel in found]
        rels += found
        rows.append(
            [
                what,
                str(len(runs)),
                spread([r["ceiling"]["steady_records_per_s"] for r in runs], ",.0f") + "/s",
                spread([r["steady_records_per_s"] for r in runs], ",.0f") + "/s",
                spread([r["pipeline_steady_over_ceiling"] for r in runs], ".2f"),
                spread([r["pipeline_wall_s_over_ceiling"] for r in runs], ".2f"),
                spread([r["first_batch_s"] for r in runs], ".1f") + " s",
                "yes" if all(r["sink_equals_ledger"] for r in runs) else "**no**",
            ]
        )
    header = [
        first_column,
        "runs",
        "ceiling query: steady rate",
        "pipeline: steady rate",
        "pipeline / ceiling: steady rate",
        "pipeline / ceiling: wall with Spark's start",
        "pipeline: first batch",
        "sink equals ledger",
    ]
    return (
        table(header, rows)
        + "\n\nMedian (min-max) over the runs; a run is one `bench_pipeline.py` backlog (the pipeline, then the "
        "ceiling query, each a Spark of its own)." + source(root, *rels)
    )


SPEED_STEPS = (
    ("pipeline-speed-115b35b", "before: the pipeline as issue 28's state change left it (115b35b)"),
    ("pipeline-speed-9b35d00", "+ the results topic's producer sends larger batches (9b35d00)"),
    (
        "pipeline-speed-9f9d5b1",
        "+ each record parsed once (the object check in from_json's corrupt-record field) (9f9d5b1)",
    ),
)


def t_pipeline_speed(root: Path) -> str:
    """What each speed change bought: the same backlog through each commit, the commits in turn, round after round, in
    one session."""
    return _rounds_table(root, SPEED_STEPS, "tree (200,000 purchases, batches of 50,000)")


def t_pipeline_partitions(root: Path) -> str:
    """spark.sql.shuffle.partitions (the state partitions) 4 against 2 on local[2], in turn, round after round."""
    steps = (
        ("pipeline-partitions-4", "4 shuffle (and state) partitions, the pipeline's"),
        ("pipeline-partitions-2", "2 shuffle (and state) partitions"),
    )
    return _rounds_table(root, steps, "setting (200,000 purchases, batches of 50,000)")


def t_pipeline_scale(root: Path) -> str:
    """One worker against two on a Spark standalone cluster, with a state of about --products x windows rows."""
    rel = "docs/benchmarks/pipeline-scale.json"
    d = load(root, rel)
    rows = []
    for r in d["runs"]:
        by_executor = ", ".join(num(n) for _, n in sorted(r["state_rows_by_executor"].items()))
        rows.append(
            [
                f"{r['workers']} x {r['cores_per_worker']} core",
                f"**{num(r['steady_records_per_s'])}/s**",
                f"{r['first_batch_s']:.1f} s",
                " / ".join(f"{s:.1f}" for s in r["batch_s"]) + " s",
                num(r["state_rows_after_batch"][-1]),
                by_executor,
                " / ".join(num(n) for _, n in sorted(r["state_rows_by_partition"].items(), key=lambda kv: int(kv[0]))),
            ]
        )
    header = [
        "workers",
        "steady rate",
        "first batch",
        "each batch",
        "state rows (Spark's numRowsTotal)",
        "state rows per executor",
        "state rows per partition",
    ]
    note = (
        f"\n\n{num(d['records'])} purchases of {num(d['products'])} products over {d['spread_s']:.0f} s of "
        f"event time, batches of at most "
        f"{num(d['max_records_per_batch'])}; the runs' final totals ({num(d['sink_rows'])} rows) "
        + ("are equal." if d["totals_equal"] else "**differ**.")
    )
    return table(header, rows) + note + source(root, rel)


# What each stage of a steady batch is (benchmarks/profile_pipeline.py lists a job's stages in Spark's order, parents
# first).
_AFTER_READ = (
    "partial sums, shuffled again",
    "stateful aggregation and the dead letters (the reused shuffle), union, cached, counted per kind",
    "count per kind (final)",
)


def _stage_roles(job: dict) -> list[tuple[str, str]]:
    """(role, records read) of each stage of a job."""
    stages = job["stages"]
    if not stages:
        return []
    read = max(range(len(stages)), key=lambda i: stages[i]["input_records"])
    if stages[read]["input_records"] < 1000:  # a job of the sink, or the catalogue's broadcast
        roles = {
            "save": "Kafka publish of the changed totals",
            "parquet": "Parquet write of the changed totals (one file)",
        }
        return [
            (roles.get(st["name"], "the catalogue's broadcast (the join is planned again each batch)"), "-")
            for st in stages
        ]
    after = len(stages) - read - 1
    out = []
    for i, st in enumerate(stages):
        if i < read:
            out.append(("the catalogue's cached rows", "-"))
        elif i == read:
            out.append(("read from Kafka, parse, join the catalogue, shuffle by key", num(st["input_records"])))
        else:
            role = _AFTER_READ[i - read - 1] if after == len(_AFTER_READ) else st["name"]
            out.append((role, num(st["shuffle_read_records"])))
    return out


def t_pipeline_profile_before(root: Path) -> str:
    return t_pipeline_profile(root, "docs/benchmarks/pipeline-profile-115b35b.json")


def t_pipeline_profile(root: Path, rel: str = "docs/benchmarks/pipeline-profile.json") -> str:
    """One steady micro-batch (the median of the full ones after the first) stage by stage, from Spark's event log."""
    d = load(root, rel)
    batches = [b for b in d["batches"] if "batch_id" in b]  # not the jobs before the query started
    full = [b for b in batches[1:] if b["num_input_rows"] >= 0.9 * d["max_records_per_batch"]]
    if not full:
        raise RenderError(f"{rel}: no full batch after the first")
    batch = sorted(full, key=lambda b: b["duration_ms"]["triggerExecution"])[len(full) // 2]
    rows = []
    for job in batch["jobs"]:
        for stage, (role, records) in zip(job["stages"], _stage_roles(job), strict=True):
            rows.append(
                [
                    role,
                    str(stage["tasks"]),
                    num(stage["duration_ms"]),
                    num(stage["run_ms"]),
                    num(stage["cpu_ms"]),
                    num(stage["gc_ms"]),
                    records,
                ]
            )
    op = batch["state_operator"]
    note = (
        f"\n\nBatch {batch['batch_id']} ({num(batch['num_input_rows'])} purchases): Spark's `triggerExecution` "
        f"{num(batch['duration_ms']['triggerExecution'])} ms, `addBatch` {num(batch['duration_ms']['addBatch'])} ms; "
        f"the state operator: {num(op['numRowsTotal'])} rows, {num(op['numRowsUpdated'])} updated, update / removal "
        f"/ commit {op['allUpdatesTimeMs']} / {op['allRemovalsTimeMs']} / {op['commitTimeMs']} ms summed over "
        f"{op['numShufflePartitions']} partitions. Task run time is wall time summed over the stage's tasks; CPU "
        "time is what their threads got."
    )
    header = [
        "stage",
        "tasks",
        "wall (ms)",
        "task run time (ms)",
        "CPU (ms)",
        "GC (ms)",
        "records read (Kafka or shuffle)",
    ]
    return table(header, rows) + note + source(root, rel)


SINK_DUPLICATES = "docs/benchmarks/pipeline-sink-duplicates.json"


def t_pipeline_sink_duplicates(root: Path) -> str:
    d = load(root, SINK_DUPLICATES)
    rows = []
    for i, r in enumerate(d["rows"], start=1):
        c = r["counts"]
        batches = ", ".join(str(b["batch_id"]) for b in r["replayed"]) or "—"
        rows.append(
            [
                str(i),
                str(r["verdict"]),
                "exact" if r["sales_valid"] is True else f"**{r['sales_valid']}**",
                num(c.get("acknowledged", 0)),
                num(c.get("records", 0)),
                str(c.get("missing", 0)),
                num(c.get("duplicate", 0)),
                f"{num(c.get('duplicate_in_replayed_batch', 0))} (batch {batches}, "
                f"{num(r['replayed_source_records'])} source records)",
            ]
        )
    s = d["summary"]
    rows.append(
        [
            "**all**",
            ", ".join(f"{v} {n}" for v, n in s["verdicts"].items()),
            "",
            "",
            "",
            f"**{s['missing_total']}**",
            f"**{num(s['copies_total'])}** in {s['runs_with_copies']} of {s['runs']} runs",
            f"outside it: {s['copies_outside_replayed_batch']}",
        ]
    )
    return table(
        [
            "run",
            "verdict",
            "sales totals (foreachBatch sink)",
            "acknowledged purchases",
            "enriched records in the topic",
            "missing",
            "copies (Kafka sink)",
            "of them in the batch run first after the restart",
        ],
        rows,
    ) + source(root, SINK_DUPLICATES)
