"""The profiles' tables in docs/failover.md (render_docs.py renders and checks them): what fast-failover buys under a
kill -9 of a leader against Kafka's defaults in the same session, and what it costs under a GC-like pause and under
load."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, source, table

KILL = "docs/benchmarks/profiles-kill.json"
JAVA = "docs/benchmarks/profiles-java.json"
PAUSE = "docs/benchmarks/profiles-pause.json"
LOAD = "docs/benchmarks/profiles-load.json"
CLIENT_WORDS = {"": "librdkafka", "java": "Kafka's Java producer (VerifiableProducer)"}


def _parts(job: str) -> tuple[str, str, str]:
    scenario, _, rest = job.partition(":")
    profile, _, client = rest.partition(":")
    return scenario, profile, CLIENT_WORDS.get(client, client)


def _s(spread: dict | None, key: str = "median", ms: bool = True) -> str:
    if not spread:
        return "—"
    value = spread[key] / 1000 if ms else spread[key]
    return f"{value:.2f} s"


def _runs(job: dict) -> str:
    return f"{len(job['runs'])} ({job['valid_runs']} valid)"


def t_profiles_failover(root: Path) -> str:
    jobs = load(root, KILL)["jobs"] + load(root, JAVA)["jobs"]
    rows = []
    for job in jobs:
        _, profile, client = _parts(job["job"])
        b = job["breakdown_s"]
        rows.append(
            [
                f"`{profile}`",
                client,
                _runs(job),
                str(job["unavailable_ms"]["n"] if job["unavailable_ms"] else 0),
                f"**{_s(job['unavailable_ms'])}**",
                _s(job["unavailable_ms"], "p95"),
                _s(job["unavailable_ms"], "max"),
                _s(job["new_leader_ms"]),
                _s(b["detection_s"], ms=False),
                _s(b["election_s"], ms=False),
                f"{_s(b['propagation_s'], ms=False)} / {_s(b['propagation_s'], 'p95', ms=False)}",
                str(job["lost_total"]),
            ]
        )
    by = {job["job"]: job for job in jobs}
    ratio = ""
    fast, defaults = by.get("kill:fast-failover"), by.get("kill:defaults")
    if fast and defaults and fast["unavailable_ms"] and defaults["unavailable_ms"]:
        ratio = (
            f"\n\nfast-failover against defaults, librdkafka, same session: client-visible unavailability p50 "
            f"{fast['unavailable_ms']['median'] / defaults['unavailable_ms']['median']:.2f}, p95 "
            f"{fast['unavailable_ms']['p95'] / defaults['unavailable_ms']['p95']:.2f} of Kafka's defaults."
        )
    return (
        table(
            [
                "profile",
                "producer",
                "runs",
                "partitions measured",
                "client-visible unavailability p50",
                "p95",
                "max",
                "new leader p50",
                "detection p50",
                "election p50",
                "propagation p50 / p95",
                "acknowledged writes lost",
            ],
            rows,
        )
        + ratio
        + source(root, KILL, JAVA)
    )


def t_profiles_price(root: Path) -> str:
    rows = []
    for job in load(root, PAUSE)["jobs"] + load(root, LOAD)["jobs"]:
        scenario, profile, _ = _parts(job["job"])
        what = (
            f"leader paused {scenario.partition('-')[2]} s"
            if scenario.startswith("pause")
            else "no fault, 2 x 2,000 records/s for 60 s"
        )
        rows.append(
            [
                what,
                f"`{profile}`",
                _runs(job),
                f"{job['runs_with_a_fenced_broker']} of {len(job['runs'])}",
                f"{job['runs_with_isr_shrinks']} of {len(job['runs'])}",
                _s(job["unavailable_ms"]),
                _s(job["unavailable_ms"], "max"),
                _s(job["new_leader_ms"]),
                str(job["lost_total"]),
            ]
        )
    return table(
        [
            "what",
            "profile",
            "runs",
            "runs in which the controller fenced a broker",
            "runs with ISR shrinks",
            "client-visible unavailability p50",
            "max",
            "new leader p50",
            "acknowledged writes lost",
        ],
        rows,
    ) + source(root, PAUSE, LOAD)
