"""The Spark pipeline's tables in docs/benchmarks.md (render_docs.py renders and checks them)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import RenderError, load, num, source, table


def _backlog_cells(d: dict) -> list[str]:
    b = d["backlog"]
    c = b["ceiling"]
    return [f"{num(c['steady_records_per_s'])}/s, {c['wall_s_with_spark_start']:.1f} s",
            f"**{num(b['steady_records_per_s'])}/s** ({b['pipeline_steady_over_ceiling']:.2f})",
            f"{b['wall_s_with_spark_start']:.1f} s ({b['pipeline_wall_s_over_ceiling']:.2f})",
            f"{b['first_batch_s']:.1f} s", "yes" if b["sink_equals_ledger"] else "**no**"]


def t_pipeline_backlog(root: Path) -> str:
    runs = (("docs/benchmarks/pipeline.json", "the pipeline as `make bench` last measured it"),
            ("docs/benchmarks/pipeline-one-query.json", "one query, totals on the driver, 2026-11-24"),
            ("docs/benchmarks/pipeline-two-queries-same-session.json", "two queries (commit 23a8813), same session as the row above"))
    rows = []
    for rel, what in runs:
        d = load(root, rel)
        b = d["backlog"]
        rows.append([f"{what} (`{Path(rel).name}`)", f"{num(b['records'])} / {num(b['max_records_per_batch'])}", *_backlog_cells(d)])
    header = ["run", "backlog / batch", "ceiling query: steady rate, wall with Spark's start", "pipeline: steady rate (ratio of the ceiling's)",
              "pipeline: wall with Spark's start (ratio)", "pipeline: first batch", "sink equals ledger"]
    return table(header, rows) + source(root, *(rel for rel, _ in runs))


def t_pipeline_live(root: Path) -> str:
    rel = "docs/benchmarks/pipeline.json"
    live = load(root, rel)["live_at_half_rate"]
    if not live:
        return "Not measured in the stored file (`--live-s 0`)." + source(root, rel)
    a = live["latency_after_warmup"]
    row = [f"{num(live['rate_per_s'])}/s for {live['duration_s']:.0f} s, {live['trigger_s']} s trigger", num(live["latency_all"]["records"]),
           f"{a['p50_s']:.2f} / **{a['p99_s']:.2f}** / {a['max_s']:.2f} s", f"{live['latency_all']['p99_s']:.1f} s",
           f"{live['latency_slope_s_per_s']:+.3f}", "yes" if live["bounded"] else "**no**", "yes" if live["sink_equals_ledger"] else "**no**"]
    header = ["live at half the backlog's steady rate", "purchases", f"latency after {live['warmup_s']:.0f} s: p50 / p99 / max", "all purchases: p99",
              "slope (s/s)", "bounded", "sink = ledger"]
    return table(header, [row]) + source(root, rel)


def _sustained_rows(d: dict) -> list[list[str]]:
    rows = []
    for r in d["runs"]:
        a = r["latency_after_warmup"]
        rows.append([f"{num(r['rate_per_s'])}/s", f"{r['duration_s']:.0f} s", f"{a['p50_s']:.2f} / {a['p99_s']:.2f} / {a['max_s']:.2f} s",
                     f"{r['latency_all']['p99_s']:.1f} s", f"{r['latency_slope_s_per_s']:+.3f}", "yes" if r["bounded"] else "**no**",
                     "yes" if r["sink_equals_ledger"] else "**no**"])
    return rows


SUSTAINED_HEADER = ["rate", "run", "latency after the warm-up: p50 / p99 / max", "all purchases: p99", "slope (s/s)", "bounded", "sink = ledger"]


def t_pipeline_sustained(root: Path, rel: str = "docs/benchmarks/pipeline-state-sustained.json") -> str:
    d = load(root, rel)
    note = (f"\n\nSustained rate (the highest rate tried whose latency stayed bounded): **{num(d['sustained_rate_per_s'])}/s**; "
            f"bounded = slope of each second's worst latency at most {d['bounded_slope_s_per_s']} s/s.")
    return table(SUSTAINED_HEADER, _sustained_rows(d)) + note + source(root, rel)


def t_pipeline_sustained_two_queries(root: Path) -> str:
    rel = "docs/benchmarks/pipeline-sustained.json"
    d = load(root, rel)
    return table(SUSTAINED_HEADER, _sustained_rows(d)) + source(root, rel)


def t_pipeline_targets(root: Path) -> str:
    backlog_rel, sustained_rel = "docs/benchmarks/pipeline.json", "docs/benchmarks/pipeline-state-sustained.json"
    realtime_rels = ("docs/benchmarks/realtime.json", "docs/benchmarks/realtime-checkpoint-5s-10s.json")
    b = load(root, backlog_rel)["backlog"]
    sustained = load(root, sustained_rel)
    at_5000 = [r for r in sustained["runs"] if r["rate_per_s"] == 5000]
    if not at_5000:
        raise RenderError(f"{sustained_rel}: no run at 5,000/s")
    p99_5000 = at_5000[0]["latency_after_warmup"]["p99_s"]
    realtime = [r["latency_after_warmup"]["p99_s"] for rel in realtime_rels for r in load(root, rel)["runs"]
                if r["trigger"] == "real-time" and float(r["args"][1]) <= 10]
    under = [p for p in realtime if p <= 1]
    over = [p for p in realtime if p > 1]

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    rt = f"met in {len(under)} of {len(realtime)} runs" + (f" ({min(under):.2f}-{max(under):.2f} s)" if under else "")
    if over:
        rt += "; " + ", ".join(f"{p:.2f} s" for p in over) + " in the other" + ("s" if len(over) > 1 else "")
    rows = [
        ["live at 5,000 purchases/s: latency p99 (after the warm-up) ≤ 5 s", f"{p99_5000:.2f} s", met(p99_5000 <= 5), f"`{Path(sustained_rel).name}`"],
        ["real-time trigger (checkpoint 5 or 10 s): p99 ≤ 1 s", ", ".join(f"{p:.2f} s" for p in realtime), rt,
         ", ".join(f"`{Path(r).name}`" for r in realtime_rels)],
        ["at least 10,000 purchases/s on local[2]",
         f"sustained live: at least {num(sustained['sustained_rate_per_s'])}/s"
         + (" (the highest rate tried)" if sustained["sustained_rate_per_s"] == max(r["rate_per_s"] for r in sustained["runs"]) else "")
         + f"; backlog steady: {num(b['steady_records_per_s'])}/s",
         f"live: {met(sustained['sustained_rate_per_s'] >= 10000)}; backlog: {met(b['steady_records_per_s'] >= 10000)}",
         f"`{Path(sustained_rel).name}`, `{Path(backlog_rel).name}`"],
        ["backlog steady rate ≥ 0.6 of the ceiling query's, same run", f"{b['pipeline_steady_over_ceiling']:.2f}",
         met(b["pipeline_steady_over_ceiling"] >= 0.6), f"`{Path(backlog_rel).name}`"],
        ["the whole backlog in ≤ 2x the ceiling query's wall time", f"{b['pipeline_wall_s_over_ceiling']:.2f}x",
         met(b["pipeline_wall_s_over_ceiling"] <= 2), f"`{Path(backlog_rel).name}`"],
        ["first micro-batch under 10 s (the backlog's first batch)", f"{b['first_batch_s']:.1f} s", met(b["first_batch_s"] < 10),
         f"`{Path(backlog_rel).name}`"],
    ]
    return table(["target", "measured", "", "raw file (docs/benchmarks/)"], rows)


def t_realtime(root: Path) -> str:
    rels = ("docs/benchmarks/realtime.json", "docs/benchmarks/realtime-checkpoint-5s-10s.json", "docs/benchmarks/realtime-checkpoint-30s.json")
    rows = []
    for rel in rels:
        for r in load(root, rel)["runs"]:
            args = r["args"]
            master = args[args.index("--master") + 1]
            trigger = f"real-time, checkpoint {args[1]} s" if r["trigger"] == "real-time" else f"micro-batch, `--trigger-s {args[1]}`"
            if r.get("note"):
                trigger += f" ({r['note'].split(', ', 1)[1]})" if ", " in r["note"] else ""
            a = r["latency_after_warmup"]
            rows.append([f"{trigger}, {master}", f"`{Path(rel).name}`", f"{a['p50_s']:.3f} / **{a['p99_s']:.3f}** / {a['max_s']:.3f} s",
                         f"{r['latency_all']['p99_s']:.2f} s", f"{r['first_batch_s']:.1f} s",
                         f"{num(r['acknowledged'])}, {r['missing']} missing, {r['duplicates']} duplicates"])
    header = ["trigger", "file", "latency after 30 s: p50 / p99 / max", "all purchases: p99", "first batch", "purchases"]
    return table(header, rows) + source(root, *rels)


def t_pipeline_sustained_driver_state(root: Path) -> str:
    return t_pipeline_sustained(root, "docs/benchmarks/pipeline-one-query-sustained.json")


def t_pipeline_state(root: Path) -> str:
    """The backlog before and after the running totals went back into Spark's state store, same session."""
    runs = (("docs/benchmarks/pipeline-driver-state.json", "before: the totals on the driver (commit d7756c3)"),
            ("docs/benchmarks/pipeline-state-spark.json", "after: Spark's stateful aggregation, RocksDB (commit 0deba24)"))
    rows = []
    for rel, what in runs:
        d = load(root, rel)
        rows.append([f"{what} (`{Path(rel).name}`)", *_backlog_cells(d)])
    header = ["run (200,000 purchases, batches of 50,000)", "ceiling query: steady rate, wall with Spark's start",
              "pipeline: steady rate (ratio of the ceiling's)", "pipeline: wall with Spark's start (ratio)", "pipeline: first batch",
              "sink equals ledger"]
    return table(header, rows) + source(root, *(rel for rel, _ in runs))


def t_pipeline_state_store(root: Path) -> str:
    rel = "docs/benchmarks/pipeline-state-store.json"
    d = load(root, rel)
    rows = [[f"`{r['variant']}`", r["provider"].removesuffix("StateStoreProvider") + (", changelog" if r["changelog_checkpointing"] else ""),
             str(r["shuffle_partitions"]), r["sink"], f"**{num(r['steady_records_per_s'])}/s**", f"{r['first_batch_s']:.1f} s",
             f"{num(r['mean_add_batch_ms'])} ms", num(r["mean_state_rows"]),
             f"{r['mean_state_update_ms']} / {r['mean_state_removal_ms']} / {r['mean_state_commit_ms']} ms"] for r in d["runs"]]
    header = ["variant", "state store", "partitions", "sink", "steady rate", "first batch", "addBatch (mean)", "state rows (mean)",
              "state update / removal / commit (mean, summed over partitions)"]
    note = (f"\n\n{num(d['records'])} purchases in batches of at most {num(d['max_records_per_batch'])}, one run per variant, "
            "each in a Spark of its own on local[2]; the means are over the full batches after the first.")
    return table(header, rows) + note + source(root, rel)
