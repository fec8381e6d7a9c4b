"""The randomized campaigns' tables in docs/ (render_docs.py renders and checks them)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import RenderError, command_of, load, num, source, spread_ms, table

CAMPAIGNS = (
    ("safe", "docs/benchmarks/campaign-safe.json"),
    ("anything-goes", "docs/benchmarks/campaign-anything-goes.json"),
)


def _present(root: Path) -> list[tuple[str, str, dict]]:
    return [(label, rel, load(root, rel)) for label, rel in CAMPAIGNS if (root / rel).is_file()]


def _s(spread: dict | None) -> str:
    return "—" if not spread else f"{spread['median']:.1f} (p95 {spread['p95']:.1f}, max {spread['max']:.1f})"


def t_campaigns(root: Path) -> str:
    rows, rels = [], []
    for label, rel, data in _present(root):
        c, s = data["campaign"], data["summary"]
        verdicts = ", ".join(f"{v} {n}" for v, n in s["verdicts"].items() if n) or "none"
        rows.append(
            [
                f"{label}: `{c['workload']}`, {c['envelope']}, seed {c['seed']}",
                ", ".join(c["faults"]),
                f"{s['runs_done']}/{c['runs']}",
                verdicts,
                str(s["lost_acknowledged"]),
                _s(s["wall_s"]),
                _s(s["overhead_s"]),
                f"{c['duration_s']:g}",
            ]
        )
        rels.append(rel)
    header = [
        "campaign",
        "faults drawn",
        "runs",
        "verdicts",
        "acknowledged writes lost (acks=all)",
        "wall s per run, median",
        "overhead s per run (wall − chaos)",
        "chaos s asked",
    ]
    return (
        table(header, rows)
        + "\n\nRendered from "
        + ", ".join(f"`{r}`" for r in rels)
        + "; made by "
        + "; ".join(f"`{command_of(root, r)}`" for r in rels[:1])
        + " (`safe` or `anything-goes` as its argument)."
    )


def t_campaign_anomalies(root: Path) -> str:
    rows = []
    for label, _, data in _present(root):
        for anomaly, entry in data["summary"]["anomalies"].items():
            combos = sorted(
                ((k, v) for k, v in entry["combinations"].items() if v["runs"]),
                key=lambda kv: -kv[1]["runs"] / kv[1]["of"],
            )
            shown = "; ".join(f"{k}: {v['runs']} of {v['of']}" for k, v in combos[:4]) + (
                "; ..." if len(combos) > 4 else ""
            )
            rows.append(
                [
                    label,
                    f"`{anomaly}`",
                    f"{entry['runs']} ({entry['decided_runs']} decided the verdict)",
                    num(entry["total"]),
                    shown,
                ]
            )
    if not rows:
        rows.append(["—", "no anomaly in any run", "", "", ""])
    return (
        table(
            [
                "campaign",
                "anomaly",
                "runs showing it",
                "total count",
                "fault combinations (runs showing it of runs under it)",
            ],
            rows,
        )
        + "\n\nRendered from `docs/benchmarks/campaign-*.json`."
    )


def t_campaign_unavailability(root: Path) -> str:
    rows = []
    for label, _, data in _present(root):
        for fault, entry in sorted(data["summary"]["unavailability"].items()):
            worst, leader = entry.get("max_unavailable_ms"), entry.get("new_leader_ms")
            rows.append(
                [
                    label,
                    f"`{fault}`",
                    str(entry["started"]),
                    spread_ms(worst) if worst else "—",
                    spread_ms(leader) if leader else "—",
                ]
            )
    return (
        table(
            [
                "campaign",
                "fault",
                "started",
                "longest unavailability of a partition it affected, ms: median (range, n)",
                "slowest new leader, ms: median (range, n)",
            ],
            rows,
        )
        + "\n\nRendered from `docs/benchmarks/campaign-*.json`."
    )


SHRINK_GLOB = "docs/benchmarks/shrink-*.json"


def _size(size: dict) -> str:
    return f"{size['faults']:g} faults, {size['fault_seconds']:.1f} fault-s, {size['chaos_s']:.1f} s chaos"


def t_campaign_shrinks(root: Path) -> str:
    rows, rels = [], sorted(str(p.relative_to(root)) for p in root.glob(SHRINK_GLOB))
    if not rels:
        raise RenderError(f"no {SHRINK_GLOB}")
    for rel in rels:
        d = load(root, rel)
        original, smallest = d["original"], d["smallest"]
        sizes = [f"{len(s['faults'])}" for s in (original, smallest)]
        before = _size(d["steps"][0]["before"]) if d["steps"] else f"{sizes[0]} faults"
        after = _size(d["steps"][-1]["after"]) if d["steps"] else "not shrunk"
        rows.append(
            [
                f"`{d['run']}`",
                f"`{d['anomaly']}`",
                before,
                after,
                str(len(d["steps"])),
                f"{d['runs']} ({d['reproductions']} reproduced)",
                f"{d['confirm']['reproduced']} of {d['confirm']['runs']}",
                "; ".join(
                    f"{f['fault']} {f.get('role') or f.get('sides') or ''} at {f['at_s']:g} s"
                    + (f" for {f['duration_s']:g} s" if f.get("duration_s") else "")
                    for f in smallest["faults"]
                ),
            ]
        )
    header = [
        "run",
        "anomaly kept",
        "before",
        "after",
        "steps",
        "runs of candidates",
        "the smallest schedule reproduced",
        "smallest schedule",
    ]
    return table(header, rows) + source(root, *rels)
