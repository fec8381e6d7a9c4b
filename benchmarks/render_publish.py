"""The table of docs/pipeline.md, "Publishing exactly once": the two publish modes through the same faults."""

from __future__ import annotations

from pathlib import Path

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


def t_pipeline_publish_modes(root: Path) -> str:
    rows = _rows(load(root, REL), "") + _rows(load(root, AGAIN), " (again, fixed)")
    header = [
        "scenario",
        "publish",
        "verdicts",
        "copies of a batch's total at read_committed, per run",
        "purchases lost, per run",
        "records only read_uncommitted saw (all runs)",
        "micro-batch, median (s)",
        "publishing job per batch, median (s)",
    ]
    return table(header, rows) + source(root, REL, AGAIN)


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
