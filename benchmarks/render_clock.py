"""Tables of docs/clock-faults.md: what a JVM sees of libfaketime, and the clock-fault scenarios' runs."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, source, table, verdicts_of

# The counts each scenario's row shows (a count a run did not record is 0: clock_runs.py keeps those not zero).
SHOWN = {
    "retention-clock-jump": (("durability", "lost"), ("durability", "lost-deleted-early")),
    "txn-coordinator-clock-jump": (
        ("transactions", "committed"),
        ("transactions", "aborted"),
        ("transactions", "unknown"),
        ("transactions", "aborted-read"),
        ("transactions", "lost-write"),
    ),
    "group-coordinator-clock-jump": (("availability", "rebalances-during-faults"), ("delivery", "lost")),
    "share-lock-clock-jump": (
        ("share", "deliveries"),
        ("share", "records-delivered"),
        ("share", "unexplained-redelivery"),
    ),
}


def t_clock_probe(root: Path) -> str:
    rel = "docs/benchmarks/clock-probe.json"
    d = load(root, rel)
    rows = []
    for name, s in d["settings"].items():
        env = " ".join(f"{k}={v}" for k, v in s["env"].items()) or "(none: the library's defaults)"
        waits = s["timed_waits_ms"]
        rows.append(
            [
                f"**{name}**" if name == "failsafe" else name,
                env,
                f"{s['wall_offset_during_jump_s']:+.3f} / {s['wall_offset_after_s']:+.3f}",
                f"{s['nano_offset_during_jump_s']:+.3f} / {s['nano_offset_after_s']:+.3f}",
                f"{s['jump_seen_after_s']} / {s['back_seen_after_s']}",
                f"{waits['median']:.0f} (max {waits['max']:.0f})",
            ]
        )
    header = [
        "setting",
        "environment",
        f"currentTimeMillis apart, s (during a {d['jump_s']:g} s jump / after)",
        "nanoTime apart, s (during / after)",
        "change seen after, s (jump / back)",
        f"{200} ms of timed waits took, ms",
    ]
    return table(header, rows) + source(root, rel)


def t_clock_runs(root: Path) -> str:
    rel = "docs/benchmarks/clock-runs.json"
    d = load(root, rel)
    rows = []
    for name, cell in d["cells"].items():
        runs = cell["runs"]
        shown = [
            f"{checker} {key} "
            + "/".join(str(r.get("checkers", {}).get(checker, {}).get("counts", {}).get(key, 0)) for r in runs)
            for checker, key in SHOWN.get(cell["args"][0], ())
        ]
        invalid = sorted({c for r in runs for c, v in r.get("checkers", {}).items() if v.get("valid") is False})
        rows.append(
            [
                name,
                " ".join(cell["args"]),
                verdicts_of(runs),
                ", ".join(invalid) or "none",
                "; ".join(shown) or "none",
            ]
        )
    header = ["cell", "failsafe run", "verdicts", "checkers INVALID", "counts per run"]
    return table(header, rows) + source(root, rel)


def t_clock_retention(root: Path) -> str:
    """The retention cells of clock-runs.json alone (docs/findings.md)."""
    rel = "docs/benchmarks/clock-runs.json"
    d = load(root, rel)
    rows = []
    for name, cell in d["cells"].items():
        if cell["args"][0] != "retention-clock-jump":
            continue
        runs = cell["runs"]
        durability = [r.get("checkers", {}).get("durability", {}).get("counts", {}) for r in runs]
        rows.append(
            [
                name,
                str(len(runs)),
                verdicts_of(runs),
                " / ".join(f"{c.get('lost', 0)} ({c.get('lost-deleted-early', 0)})" for c in durability),
            ]
        )
    header = ["cell", "runs", "verdicts", "acknowledged writes lost (of them deleted early), per run"]
    return table(header, rows) + source(root, rel)
