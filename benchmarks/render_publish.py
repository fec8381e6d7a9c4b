"""The table of docs/pipeline.md, "Publishing exactly once": the two publish modes through the same faults."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bench_publish_modes import MODES, summarise
from benchmarks.render_base import load, num, secs, source, table

REL = "docs/benchmarks/pipeline-publish-modes.json"
# pipeline-txn-coordinator-kill again, after its exactly-once run in REL was INVALID (the marker's read gave up on an
# unflagged NOT_COORDINATOR): docs/pipeline.md says what was fixed.
AGAIN = "docs/benchmarks/pipeline-publish-coordinator.json"


def _verdicts(runs: list[dict]) -> str:
    said = [r.get("verdict") or f"not run (exit {r.get('exit')}: {_reason(r.get('error', ''))})" for r in runs]
    return ", ".join(f"{v} {said.count(v)}" if v in ("VALID", "INVALID", "UNKNOWN") else v for v in dict.fromkeys(said))


def _reason(error: str) -> str:
    return "no transactional ids to name" if "transactional ids" in error else error.strip().splitlines()[-1][:80]


def _judged(runs: list[dict], count: str) -> str:
    """A count of checkers.pipeline.published per run; a run it did not judge: —."""
    return ", ".join(num(r["counts"].get(count, 0)) if r.get("counts") else "—" for r in runs) or "—"


def _rows(d: dict, note: str) -> list[list[str]]:
    rows = []
    for s in d["summary"]:
        runs = [r for r in d["rows"] if r["scenario"] == s["scenario"] and r["publish"] == s["publish"]]
        judged = [r for r in runs if r.get("counts")]
        aborted = sum((r["uncommitted"].get("records") or 0) - r["counts"].get("records", 0) for r in judged)
        job = s.get("publish_job_ms_median")
        rows.append(
            [
                s["scenario"] + note,
                s["publish"],
                _verdicts(runs),
                _judged(runs, "duplicate"),
                _judged(runs, "lost_purchases"),
                num(aborted) if judged else "—",
                secs(s["batch_ms_median"]) if s["batch_ms_median"] else "—",
                "—" if job is None else secs(job),
            ]
        )
    return rows


MODES_HEADER = [
    "scenario",
    "publish",
    "verdicts",
    "copies of a batch's total at read_committed, per run",
    "purchases lost, per run",
    "records only read_uncommitted saw (all runs)",
    "micro-batch, median (s)",
    "publishing job per batch, median (s)",
]


def t_pipeline_publish_modes(root: Path) -> str:
    rows = _rows(load(root, REL), "") + _rows(load(root, AGAIN), " (again, fixed)")
    return table(MODES_HEADER, rows) + source(root, REL, AGAIN)


# The same faults with the producers kept per Python worker (the pipeline of 19c6a55): five rounds, six more, and one
# more run of the fault whose run in one mode could not be carried out.
KEPT = (
    "docs/benchmarks/pipeline-publish-modes-5.json",
    "docs/benchmarks/pipeline-publish-modes-6.json",
    "docs/benchmarks/pipeline-publish-modes-extra.json",
)


def t_pipeline_publish_modes_kept(root: Path) -> str:
    """The runs of KEPT's files taken together (summarised again), and a line per mode over every fault."""
    files = [load(root, rel) for rel in KEPT]
    runs = [r for d in files for r in d["rows"]]
    note = "\n" + " ".join(_rounds_said(rel, d) for rel, d in zip(KEPT, files, strict=True))
    for mode in MODES:
        mine = [r for r in runs if r["publish"] == mode and r.get("counts")]
        note += (
            f"\n\n{mode}, every fault: {num(len(mine))} runs judged, "
            f"{num(sum(r['counts'].get('duplicate', 0) for r in mine))} copies of a batch's total, "
            f"{num(sum(bool(r['counts'].get('duplicate', 0)) for r in mine))} runs with copies, "
            f"{num(sum(r['counts'].get('lost_purchases', 0) for r in mine))} purchases lost."
        )
    merged = {"rows": runs, "summary": summarise(runs)}
    return table(MODES_HEADER, _rows(merged, "")) + note + source(root, *KEPT)


def _rounds_said(rel: str, d: dict) -> str:
    rounds = max((s["runs"] for s in d["summary"]), default=0)
    faults = len({s["scenario"] for s in d["summary"]})
    said = (
        f"`{Path(rel).name}`: {_count(rounds, 'round')} of {_count(faults, 'fault')} in each mode, "
        "the faults and the modes taking turns."
    )
    if d.get("set_aside"):
        said += f" {len(d['set_aside']['rows'])} runs of its last round set aside: {d['set_aside']['why']}."
    return said


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


TIMED = "docs/benchmarks/pipeline-publish-timed-kill.json"


def t_pipeline_publish_timed_kill(root: Path) -> str:
    """pipeline-kill-while-publishing in both modes: the same columns as the faults' table, and what the exactly-once
    replays did (partitions the marker skipped; which producer each partition's task used)."""
    d = load(root, TIMED)
    rows = []
    for row in _rows(d, ""):
        runs = [r for r in d["rows"] if r["scenario"] == row[0] and r["publish"] == row[1]]
        writers: dict[str, int] = {}
        for r in runs:
            for kind, n in (r.get("partition_writers") or {}).items():
                writers[kind] = writers.get(kind, 0) + n
        exactly_once = row[1] == "exactly-once"
        rows.append(
            [
                *row[1:3],
                f"{sum(bool(r.get('killed_batch_ran_again')) for r in runs)} of {len(runs)}",
                *row[3:6],
                num(sum(r.get("partitions_already_published", 0) for r in runs)) if exactly_once else "—",
                ", ".join(f"{kind} {num(writers[kind])}" for kind in ("kept", "opened", "reopened") if kind in writers)
                or "—",
            ]
        )
    header = [
        "publish",
        "verdicts",
        "runs whose killed batch ran again (Spark had not committed it)",
        "copies of a batch's total at read_committed, per run",
        "purchases lost, per run",
        "records only read_uncommitted saw (all runs)",
        "partitions a replay found published (all runs)",
        "producer per partition and batch (all runs)",
    ]
    return table(header, rows) + source(root, TIMED)


COST = "docs/benchmarks/pipeline-publish-cost.json"


def _p(latency: dict | None, key: str) -> str:
    return "—" if not latency or key not in latency else f"{latency[key]:.2f}"


def t_pipeline_publish_cost(root: Path) -> str:
    """The backlog and the live run in each publish mode, the modes taking turns: bench_pipeline.py --publish."""
    rows = []
    for r in load(root, COST)["runs"]:
        b, live = r.get("backlog") or {}, r.get("live") or {}
        sink, topic = live.get("latency_after_warmup"), live.get("latency_published_after_warmup")
        rows.append(
            [
                r["publish"],
                str(r["round"] + 1),
                num(b.get("steady_records_per_s", 0)),
                str(b.get("pipeline_steady_over_ceiling", "—")),
                str(b.get("first_batch_s", "—")),
                num(live.get("rate_per_s", 0)),
                f"{_p(sink, 'p50_s')} / {_p(sink, 'p99_s')}",
                f"{_p(topic, 'p50_s')} / {_p(topic, 'p99_s')}",
                "yes" if live.get("bounded") else "no",
                "yes" if b.get("sink_equals_ledger") is True and live.get("sink_equals_ledger") is True else "**no**",
            ]
        )
    header = [
        "publish",
        "round",
        "backlog steady (purchases/s)",
        "of the ceiling query's",
        "first batch (s)",
        "live rate (/s)",
        "in the sink, p50 / p99 after the warm-up (s)",
        "in the topic, p50 / p99 (s)",
        "bounded",
        "sink equals ledger",
    ]
    return table(header, rows) + source(root, COST)


# benchmarks/profile_pipeline.py --publish, each mode before (the pipeline of de8cd90) and after the writers kept per
# Python worker, the catalogue read before the query starts and the sink's warm-up: (version, file).
PROFILES = (
    ("de8cd90", "docs/benchmarks/pipeline-profile-de8cd90-exactly-once.json"),
    ("de8cd90", "docs/benchmarks/pipeline-profile-de8cd90-at-least-once.json"),
    ("now", "docs/benchmarks/pipeline-profile-exactly-once.json"),
    ("now", "docs/benchmarks/pipeline-profile-at-least-once.json"),
)
_PARTS = ("body", "parquet", "publishing", "other")


def _job_part(job: dict) -> str:
    """What a job of a micro-batch is, from its stages' names (Spark names a stage by the call that ran it)."""
    names = {stage["name"] for stage in job["stages"]}
    if "parquet" in names:
        return "parquet"
    if "save" in names or "collect" in names:
        return "publishing"  # Spark's Kafka sink (save), or the transactions' mapPartitions (collect)
    return "body" if len(job["stages"]) >= 3 else "other"


def _parts(batch: dict) -> dict[str, int]:
    parts = dict.fromkeys(_PARTS, 0)
    for job in batch["jobs"]:
        parts[_job_part(job)] += job["duration_ms"] or 0
    return parts


def t_pipeline_publish_profile(root: Path) -> str:
    """The first and a steady (the median full one) micro-batch of the backlog per mode, job by job."""
    rows = []
    for version, rel in PROFILES:
        d = load(root, rel)
        before = [b for b in d["batches"] if b.get("before_the_query_started")]
        batches = [b for b in d["batches"] if "batch_id" in b]
        full = [b for b in batches[1:] if b["num_input_rows"] >= 0.9 * d["max_records_per_batch"]]
        steady = sorted(full, key=lambda b: b["duration_ms"]["triggerExecution"])[len(full) // 2]
        pre = sum(j["duration_ms"] or 0 for b in before for j in b["jobs"])
        for which, batch in (("first", batches[0]), ("steady", steady)):
            parts = _parts(batch)
            rows.append(
                [
                    version,
                    d["publish"],
                    f"{which} (batch {batch['batch_id']})",
                    num(batch["duration_ms"]["triggerExecution"]),
                    *(num(parts[p]) for p in _PARTS),
                    num(pre) if which == "first" and before else "—",
                ]
            )
    header = [
        "pipeline",
        "publish",
        "micro-batch",
        "Spark's triggerExecution (ms)",
        "the batch's body: read, parse, join, state, count (ms)",
        "Parquet write (ms)",
        "publishing job (ms)",
        "other jobs: the catalogue's read and broadcast (ms)",
        "jobs before the query started (ms)",
    ]
    note = (
        "\n\nJobs' wall times from Spark's event log; the Parquet write and the publishing job run side by side, so a "
        "batch takes about its body plus the longer of the two, plus planning."
    )
    return table(header, rows) + note + source(root, *(rel for _, rel in PROFILES))


COST_BEFORE = "docs/benchmarks/pipeline-publish-cost-de8cd90.json"


def _target_rows(runs: list[dict]) -> list[tuple[str, list[str]]]:
    def live_p99(r: dict, key: str) -> str:
        latency = (r.get("live") or {}).get(key)
        return "—" if not latency else f"{latency['p99_s']:.2f} s"

    def backlog(r: dict, key: str, unit: str = "") -> str:
        value = (r.get("backlog") or {}).get(key)
        return "—" if value is None else f"{value}{unit}"

    return [
        (
            "backlog steady rate ≥ 0.6 of the ceiling query's, same run",
            [backlog(r, "pipeline_steady_over_ceiling") for r in runs],
        ),
        (
            "the whole backlog in ≤ 2x the ceiling query's wall time",
            [backlog(r, "pipeline_wall_s_over_ceiling", "x") for r in runs],
        ),
        ("first micro-batch under 10 s (the backlog's first batch)", [backlog(r, "first_batch_s", " s") for r in runs]),
        (
            "live at 5,000 purchases/s: p99 in the sink after the warm-up ≤ 5 s",
            [live_p99(r, "latency_after_warmup") for r in runs],
        ),
        ("the same, in the topic (published)", [live_p99(r, "latency_published_after_warmup") for r in runs]),
    ]


def t_pipeline_targets_before_after(root: Path) -> str:
    """Issue 55's speed targets (and the wall-time one) per publish mode, de8cd90 and now, one after the other."""
    columns = [("de8cd90", r) for r in load(root, COST_BEFORE)["runs"]] + [("now", r) for r in load(root, COST)["runs"]]
    rows = [[target, *values] for target, values in _target_rows([r for _, r in columns])]
    header = ["target", *(f"{version}, {r['publish']}" for version, r in columns)]
    return table(header, rows) + source(root, COST_BEFORE, COST)


PINNED = "docs/benchmarks/pipeline-pinned.json"


def t_pipeline_cpu_placement(root: Path) -> str:
    d = load(root, PINNED)
    rows = []
    for r in d["rounds"]:
        for query, run in r["runs"].items():
            busy = run["busy_cpu_s"]
            rows.append(
                [
                    str(r["round"] + 1),
                    f"{r['placement']} (Spark on CPU {', '.join(map(str, r['spark_cpus']))})",
                    "ceiling query" if query == "ceiling" else f"pipeline, {query}",
                    num(run["steady_records_per_s"]),
                    f"{run['steady_over_ceiling']:.2f}" if "steady_over_ceiling" in run else "—",
                    f"{run['first_batch_s']:.1f}",
                    f"{run['wall_s_with_spark_start']:.1f}",
                    f"{run['kafka_cpu_s']:.1f}",
                    f"{sum(busy) - run['kafka_cpu_s']:.1f}",
                    " / ".join(f"{b:.1f}" for b in busy),
                    {True: "yes", False: "NO"}.get(run.get("sink_equals_ledger"), "—"),
                ]
            )
    header = [
        "round",
        "placement",
        "query",
        "steady (purchases/s)",
        "of the ceiling's, same placement and round",
        "first batch (s)",
        "wall with Spark's start (s)",
        "Kafka nodes' CPU (s)",
        "the rest of the machine's busy CPU (s)",
        "busy per CPU: 0 / 1 (s)",
        "sink equals ledger",
    ]
    note = (
        f"\n{num(d['records'])} purchases in batches of at most {num(d['max_records_per_batch'])}, "
        f"{d['kafka_nodes']} Kafka nodes, {d['cpus']} CPUs; CPU seconds over the whole run, Spark's start included.\n"
    )
    return table(header, rows) + note + source(root, PINNED)


SUSTAINED = "docs/benchmarks/pipeline-publish-sustained.json"


def t_pipeline_publish_sustained(root: Path) -> str:
    """bench_pipeline.py --sustained in each --publish mode: each rate in each mode, the modes taking turns."""
    d = load(root, SUSTAINED)
    rows = []
    for r in d["runs"]:
        sink, topic = r["latency_after_warmup"], r.get("latency_published_after_warmup")
        slope = r["latency_slope_s_per_s"]
        rows.append(
            [
                f"{num(r['rate_per_s'])}/s",
                r["publish"],
                f"{_p(sink, 'p50_s')} / {_p(sink, 'p99_s')} / {_p(sink, 'max_s')}",
                f"{_p(topic, 'p50_s')} / {_p(topic, 'p99_s')}",
                "—" if slope is None else f"{slope:+.3f}",
                "yes" if r["bounded"] else "**no**",
                "yes" if r["sink_equals_ledger"] else "**no**",
            ]
        )
    header = [
        "rate",
        "publish",
        "in the sink after the warm-up: p50 / p99 / max (s)",
        "in the topic after the warm-up: p50 / p99 (s)",
        "slope (s/s)",
        "bounded",
        "sink = ledger",
    ]
    rates = d["sustained_rate_per_s"]
    if not isinstance(rates, dict):
        rates = {d["runs"][0]["publish"]: rates}
    note = "\n\nSustained rate (the highest rate tried whose latency stayed bounded): " + "; ".join(
        f"{mode} **{num(rate)}/s**" if rate else f"{mode} **none of them**" for mode, rate in rates.items()
    )
    note += f"; bounded = slope of each second's worst latency at most {d['bounded_slope_s_per_s']} s/s."
    return table(header, rows) + note + source(root, SUSTAINED)
