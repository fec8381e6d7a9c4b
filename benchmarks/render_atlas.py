"""The failover atlas's tables in docs/atlas.md, from docs/benchmarks/atlas.json (a copy of an atlas directory's
atlas.json: every cell with its runs and their p50/p95); an empty one renders as a sentence saying no atlas is stored.
render_docs.py renders and checks them; reads only JSON."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import RenderError, load, source, table

ATLAS_REL = "docs/benchmarks/atlas.json"
AXES = ("fault", "profile", "client", "mode")
# The grid's orders (src/failsafe/atlas/grid.py; not imported: the renderers read JSON only).
ORDER = {
    "fault": ("kill", "sigterm", "pause", "leader-isolated", "follower-cut-off", "controller-kill", "quorum-loss"),
    "profile": ("defaults", "fast-failover", "durable"),
    "client": ("librdkafka", "kafka-java"),
    "mode": ("kraft-4.3.1", "kraft-3.9.2", "zookeeper-3.9.2"),
}
EMPTY = (
    "No atlas is stored yet: `docs/benchmarks/atlas.json` holds 0 cells and 0 runs. The numbers appear here "
    "once an atlas "
    'has been run on this machine and its atlas.json stored (see "Storing an atlas for these docs" below).'
)


def _cells(root: Path) -> list[dict]:
    data = load(root, ATLAS_REL)
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise RenderError(f"{ATLAS_REL}: no cells list")
    return cells


def _rank(axis: str, value: str) -> tuple[int, str]:
    order = ORDER[axis]
    return (order.index(value) if value in order else len(order), value)


def _key(cell: dict) -> tuple:
    return tuple(_rank(a, str(cell["key"][a])) for a in ("fault", "mode", "client", "profile"))


def _s(ms: float) -> str:
    return f"{ms / 1000:.2f}" if ms < 10_000 else f"{ms / 1000:.1f}"


def _spread(summary: dict, name: str) -> str:
    s = summary.get(name)
    if not s:
        return "—"
    return f"{_s(s['p50'])} / {_s(s['p95'])}" + (f" (n={s['n']})" if s["n"] != summary.get("runs") else "")


def t_atlas_cells(root: Path) -> str:
    cells = sorted(_cells(root), key=_key)
    if not cells:
        return EMPTY + source(root, ATLAS_REL)
    rows = []
    for c in cells:
        summary = c.get("summary") or {}
        verdicts = ", ".join(f"{v} {n}" for v, n in sorted((summary.get("verdicts") or {}).items()))
        lost = summary.get("lost_acknowledged_total", 0)
        rows.append(
            [
                *(str(c["key"][a]) for a in AXES),
                f"{summary.get('runs', 0)}/{c.get('runs_wanted')}",
                verdicts or "—",
                _spread(summary, "unavailable_ms"),
                _spread(summary, "followed_stall_ms"),
                _spread(summary, "new_leader_ms"),
                _spread(summary, "new_controller_ms"),
                "0" if not lost else f"**{lost}** in {summary.get('runs_with_loss')} of {summary.get('runs')} runs",
            ]
        )
    header = [
        *AXES,
        "runs",
        "verdicts",
        "client-visible unavailability, s (p50 / p95)",
        "write stall on followed partitions, s",
        "new leader, s",
        "new controller, s",
        "acknowledged writes lost",
    ]
    return table(header, rows) + source(root, ATLAS_REL)


def t_atlas_unavailability(root: Path) -> str:
    cells = _cells(root)
    if not cells:
        return EMPTY + source(root, ATLAS_REL)
    columns = sorted(
        {(c["key"]["mode"], c["key"]["client"], c["key"]["profile"]) for c in cells},
        key=lambda col: (_rank("mode", col[0]), _rank("client", col[1]), _rank("profile", col[2])),
    )
    faults = sorted({c["key"]["fault"] for c in cells}, key=lambda f: _rank("fault", f))
    by_key = {(c["key"]["fault"], c["key"]["mode"], c["key"]["client"], c["key"]["profile"]): c for c in cells}
    rows = []
    for fault in faults:
        row = [fault]
        for mode, client, profile in columns:
            cell = by_key.get((fault, mode, client, profile))
            row.append("·" if cell is None else _spread(cell.get("summary") or {}, "unavailable_ms"))
        rows.append(row)
    header = ["fault", *(f"{m} {cl} {p}" for m, cl, p in columns)]
    return table(header, rows) + source(root, ATLAS_REL)


FIT_REL = "docs/benchmarks/atlas-fit.json"


def t_atlas_fit(root: Path) -> str:
    """The stored atlas's wall time against the 3-hour target, and the estimate's overheads fitted to its runs."""
    fit = load(root, FIT_REL)
    guessed, fitted = fit["guessed"], fit["fitted"]
    words = {
        "run_overhead_s": "a run's overhead beyond its phases (librdkafka)",
        "java_client_extra_s": "what Kafka's Java clients add per run",
        "cluster_start_stop_s": "a group's cluster, started and deleted",
    }
    rows = [[words[k], f"{guessed[k]:.0f} s", f"{fitted[k]:.1f} s" if fitted[k] is not None else "—"] for k in words]
    inv_rows = [
        [
            i["started_at"],
            f"`{i['command']}`",
            str(i["planned_runs"]),
            str(i["runs"]),
            str(i["groups"]),
            f"{i['total_s'] / 3600:.2f} h",
            f"{i['runs_wall_s'] / 3600:.2f} h",
        ]
        for i in fit["invocations"]
    ]
    head = (
        f"{fit['runs']} runs stored in {fit['groups']} groups (target for the whole default grid: "
        f"{fit['budget_s'] / 3600:.0f} h).\n\n"
        + table(
            [
                "invocation",
                "command",
                "runs it made",
                "of them stored",
                "groups",
                "start to its last run's end",
                "its stored runs' own wall time",
            ],
            inv_rows,
        )
    )
    return (
        head
        + "\n\n"
        + table(["overhead", "guessed (atlas/grid.py before)", "fitted to these runs"], rows)
        + source(root, FIT_REL)
    )
