"""The tables of docs/lifecycle.md (render_docs.py renders and checks them): each step of the rolling upgrade and of
its rollback, from docs/benchmarks/lifecycle-*.json, and Kafka 4.3.1 against 4.4.0 on the same atlas cells, from
docs/benchmarks/compare-4.3.1-4.4.0.json."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, source, table

UPGRADE = "docs/benchmarks/lifecycle-rolling-upgrade.json"
ROLLBACK = "docs/benchmarks/lifecycle-rolling-upgrade-rollback.json"
UPGRADE39 = "docs/benchmarks/lifecycle-rolling-upgrade-from-3.9.json"
COMPARE = "docs/benchmarks/compare-4.3.1-4.4.0.json"
QUORUM = "docs/benchmarks/lifecycle-quorum.json"
VERSIONS = "docs/benchmarks/cluster-versions.json"
FLIPS = "docs/benchmarks/lifecycle-flips.json"
FLIPS_GROUP = "docs/benchmarks/lifecycle-flips-group.json"
REASSIGN = "docs/benchmarks/lifecycle-reassign.json"
REASSIGN_CONTROL = "docs/benchmarks/lifecycle-reassign-control.json"


def _ms(spread: dict | None) -> str:
    """A spread in ms as 'p50 / p95 s (min-max)'."""
    if not spread:
        return "—"
    return (
        f"{spread['median'] / 1000:.2f} / {spread['p95'] / 1000:.2f} s "
        f"({spread['min'] / 1000:.2f}-{spread['max'] / 1000:.2f})"
    )


def _count(spread: dict | None) -> str:
    return "—" if not spread else f"{spread['median']:,.0f} ({spread['min']:,.0f}-{spread['max']:,.0f})"


def _steps(root: Path, rel: str, whole: str) -> str:
    data = load(root, rel)
    runs = data["runs"]
    rows = [
        [
            group,
            str(s["n"]),
            _ms(s["wall_ms"]),
            _ms(s["max_unavailable_ms"]),
            _count(s["acknowledged_during"]),
            str(s["rebalances_during"]),
        ]
        for group, s in data["steps"].items()
    ]
    verdicts = ", ".join(f"{n} {v}" for v, n in data["verdicts"].items())
    lost = sum(r["lost"] or 0 for r in runs)
    dups = sum(r["duplicates"] or 0 for r in runs)
    completed = sum(1 for r in runs if r["completed"])
    header = [
        "step",
        "steps",
        "wall p50 / p95 (min-max)",
        "client-visible unavailability p50 / p95 (min-max)",
        "writes acknowledged during it",
        "rebalances during",
    ]
    return (
        table(header, rows)
        + f"\n\n{len(runs)} runs ({verdicts}); {completed} completed every step; {whole} "
        + _ms(data["upgrade_wall_ms"])
        + f"; acknowledged writes lost: {lost}; duplicates: {dups}."
        + source(root, rel)
    )


def t_lifecycle_upgrade(root: Path) -> str:
    return _steps(root, UPGRADE, "the whole upgrade")


def t_lifecycle_upgrade39(root: Path) -> str:
    return _steps(root, UPGRADE39, "the whole upgrade")


def t_lifecycle_rollback(root: Path) -> str:
    return _steps(root, ROLLBACK, "there and back")


def t_lifecycle_quorum(root: Path) -> str:
    data = load(root, QUORUM)
    rows = [
        [
            group,
            f"{c['completed']}/{c['n']}",
            _ms(c["wall_ms"]),
            _ms(c["new_controller_ms"]),
            _count(c["acknowledged_during"]),
            f"{c['topics_created_after']}/{c['n']}",
        ]
        for group, c in data["changes"].items()
    ]
    header = [
        "change",
        "completed",
        "wall p50 / p95 (min-max)",
        "to a new active controller p50 / p95 (min-max)",
        "writes acknowledged during it",
        "topic created after it",
    ]
    runs = data["runs"]
    verdicts = ", ".join(f"{n} {v}" for v, n in data["verdicts"].items())
    lost = sum(r["lost"] or 0 for r in runs)
    return (
        table(header, rows)
        + f"\n\n{len(runs)} runs ({verdicts}); acknowledged writes lost: {lost}."
        + source(root, QUORUM)
    )


def t_lifecycle_reassign(root: Path) -> str:
    data = load(root, REASSIGN)
    runs = data["runs"]
    rows = []
    for scenario, steps in data["scenarios"].items():
        mine = [r for r in runs if r["scenario"] == scenario]
        verdicts = _tally(r["verdict"] for r in mine)
        for group, s in steps.items():
            rows.append(
                [
                    scenario,
                    ", ".join(f"{n} {v}" for v, n in verdicts.items()),
                    group,
                    f"{s['completed']}/{s['n']}",
                    _ms(s["wall_ms"]),
                    _ms(s["max_unavailable_ms"]),
                    _ms(s.get("follower_stall_ms")),
                    _count(s["acknowledged_during"]),
                ]
            )
    header = [
        "scenario",
        "verdicts",
        "step",
        "completed",
        "wall p50 / p95 (min-max)",
        "client-visible unavailability p50 / p95 (min-max)",
        "longest write stall of a partition the source followed",
        "writes acknowledged during it",
    ]
    lost = sum(r["lost"] or 0 for r in runs)
    dups = sum(r["duplicates"] or 0 for r in runs)
    return (
        table(header, rows)
        + f"\n\n{len(runs)} runs; acknowledged writes lost: {lost}; duplicates: {dups}."
        + source(root, REASSIGN)
    )


def t_lifecycle_reassign_control(root: Path) -> str:
    """The move of reassign-under-load, throttled as shipped and with a throttle no move reaches."""
    rows = []
    for label, rel in (("50,000 B/s (as shipped)", REASSIGN), ("1,000,000,000 B/s (control)", REASSIGN_CONTROL)):
        data = load(root, rel)
        move = data["scenarios"]["reassign-under-load"]["reassign-partitions"]
        runs = [r for r in data["runs"] if r["scenario"] == "reassign-under-load"]
        rows.append(
            [
                label,
                str(len(runs)),
                ", ".join(f"{n} {v}" for v, n in sorted(_tally(r["verdict"] for r in runs).items())),
                _ms(move["wall_ms"]),
                _ms(move["led_stall_ms"]),
                _ms(move["follower_stall_ms"]),
            ]
        )
    header = [
        "throttle",
        "runs",
        "verdicts",
        "move wall p50 / p95 (min-max)",
        "longest stall, a partition the source led",
        "longest stall, a partition the source followed",
    ]
    return table(header, rows) + source(root, REASSIGN, REASSIGN_CONTROL)


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.2g}"


def t_compare(root: Path) -> str:
    data = load(root, COMPARE)
    a, b = (m.removeprefix("kraft-") for m in data["modes"])
    fields = (
        ("unavailable_ms", "unavailability"),
        ("new_leader_ms", "new leader"),
        ("followed_stall_ms", "follower stall"),
        ("new_controller_ms", "new controller"),
    )
    rows = []
    for cell in data["cells"]:
        for field, words in fields:
            t = cell["times"].get(field) or {}
            if not t.get("n_a") and not t.get("n_b"):
                continue
            rows.append(
                [
                    cell["cell"]["fault"],
                    words,
                    f"{t['n_a']}/{t['n_b']}",
                    "—" if t.get("p50_a") is None else f"{t['p50_a'] / 1000:.2f} / {t['p95_a'] / 1000:.2f} s",
                    "—" if t.get("p50_b") is None else f"{t['p50_b'] / 1000:.2f} / {t['p95_b'] / 1000:.2f} s",
                    _p(t.get("p")),
                    "**yes**" if t.get("significant") else "no",
                ]
            )
    header = ["fault", "measure", "runs", f"{a} p50 / p95", f"{b} p50 / p95", "Mann-Whitney p", "p < 0.05"]
    counts = []
    for cell in data["cells"]:
        for name, row in cell["anomalies"].items():
            if row.get("k_a") or row.get("k_b"):
                counts.append(
                    [
                        cell["cell"]["fault"],
                        name,
                        f"{row['k_a']}/{row['n_a']}",
                        f"{row['k_b']}/{row['n_b']}",
                        _p(row.get("p")),
                        "**yes**" if row.get("significant") else "no",
                    ]
                )
    anomalies = (
        table(["fault", "runs showing", a, b, "Fisher p", "p < 0.05"], counts)
        if counts
        else "No run of either release showed an anomaly, lost a write or was not VALID."
    )
    flagged = data["significant"]
    return (
        table(header, rows)
        + "\n\n"
        + anomalies
        + f"\n\n{len(flagged)} of the differences above {'is' if len(flagged) == 1 else 'are'} significant at p < "
        + f"{data['alpha']:g}"
        + (": " + "; ".join(flagged) if flagged else "")
        + " (no correction for multiple comparisons: at 1 in 20 by chance, some flags are expected)."
        + source(root, COMPARE)
    )


def t_cluster_versions(root: Path) -> str:
    data = load(root, VERSIONS)

    def s(spread: dict, unit: str = " s", digits: int = 1) -> str:
        return f"{spread['median']:.{digits}f}{unit} ({spread['min']:.{digits}f}-{spread['max']:.{digits}f})"

    rows = [
        [
            version,
            str(len(v["runs"])),
            s(v["create_to_ready_s"]),
            s(v["restart_to_ready_s"]),
            s(v["broker_rss_mib"], " MiB", 0),
            s(v["kill_to_new_leader_s"]),
        ]
        for version, v in data["versions"].items()
    ]
    header = [
        "Kafka",
        "runs",
        "up, made, to ready",
        "up, restarted, to ready",
        "broker memory (RSS)",
        "kill -9 of a leader to a new leader",
    ]
    return (
        table(header, rows)
        + f"\n\nMedian (min-max); the releases alternated, {' then '.join(data['order'][:2])} in each round."
        + source(root, VERSIONS)
    )


def t_lifecycle_flips(root: Path) -> str:
    return _flips(root, FLIPS)


def t_lifecycle_flips_group(root: Path) -> str:
    return _flips(root, FLIPS_GROUP)


def _flips(root: Path, rel: str) -> str:
    data = load(root, rel)
    groups: dict[str, list[dict]] = {}
    for run in data["runs"]:
        name = run["scenario"] + (" (control: " + ", ".join(run["overrides"]) + ")" if run["overrides"] else "")
        groups.setdefault(name, []).append(run)

    def counts(runs: list[dict], field: str) -> str:
        values = [r.get(field) for r in runs if r.get(field) is not None]
        return ", ".join(f"{v:,}" for v in values) if values else "—"

    rows = [
        [
            name,
            str(len(runs)),
            ", ".join(f"{n} {v}" for v, n in sorted(_tally(r["verdict"] for r in runs).items())),
            "; ".join(sorted({f["description"] for r in runs for f in r["flips"]})),
            f"{sum(1 for r in runs for f in r['flips'] if f['completed'])} of {sum(len(r['flips']) for r in runs)}",
            counts(runs, "lost"),
            counts(runs, "lost_in_log_not_consumed"),
            counts(runs, "lost_after_read"),
            counts(runs, "lost_committed_writes"),
        ]
        for name, runs in groups.items()
    ]
    header = [
        "scenario",
        "runs",
        "verdicts",
        "flips",
        "flips taken",
        "lost (per run)",
        "of which in the log, never consumed",
        "lost after read (per run)",
        "committed writes lost (per run)",
    ]
    return table(header, rows) + source(root, rel)


def _tally(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out
