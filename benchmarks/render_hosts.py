"""The table of docs/hosts.md (render_docs.py renders and checks it): a cluster on test hosts over SSH against the same
cluster on this machine, from docs/benchmarks/hosts.json."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, source, table

HOSTS = "docs/benchmarks/hosts.json"
BEFORE = "docs/benchmarks/hosts-before-shells.json"


def _s(spread: dict | None, scale: float = 1.0, digits: int = 2, unit: str = " s") -> str:
    if not spread:
        return "—"
    return (
        f"{spread['median'] * scale:.{digits}f}{unit} "
        f"({spread['min'] * scale:.{digits}f}-{spread['max'] * scale:.{digits}f})"
    )


def t_hosts(root: Path) -> str:
    data, before = load(root, HOSTS), load(root, BEFORE)
    rows = []
    for d, words in (
        (data["local"], "this machine (127.0.0.x)"),
        (data["hosts"], "3 test hosts over SSH"),
        (before["hosts"], "the same, one SSH session per command (dd535e3)"),
    ):
        f = d["failover"]
        rows.append(
            [
                words,
                _s(d["up_s"], digits=1),
                _s(d["state_s"], 1000, 1, " ms"),
                _s(d["kill_s"], 1000, 0, " ms"),
                _s(d["restart_ready_s"], digits=1),
                f"{len(f['runs'])} ({f['valid_runs']} valid)",
                _s(
                    {k: v / 1000 for k, v in f["unavailable_ms"].items() if k in ("median", "min", "max")}
                    if f["unavailable_ms"]
                    else None
                ),
                _s(
                    {k: v / 1000 for k, v in f["new_leader_ms"].items() if k in ("median", "min", "max")}
                    if f["new_leader_ms"]
                    else None
                ),
                ", ".join(f"{lag:.2f} s" for lag in f.get("fault_lag_s", [])) or "—",
                str(f["lost_total"]),
            ]
        )
    ups = ", ".join(f"{u['up_s']:.1f} s" for u in data["hosts"]["ups"])
    note = (
        f"\n\nThe `up`s on the hosts, in order: {ups}. The first copies Kafka's jars to each host, and the "
        f"later ones find "
        "them there. Nodes on this machine start with the class-data sharing archive, which is not copied to hosts."
        if ups
        else ""
    )
    return (
        table(
            [
                "where",
                "`failsafe up`, median (min-max)",
                "reading a node's state",
                "kill -9 of a broker, call to process gone",
                "its restart until the cluster is ready",
                "broker-failover runs",
                "client-visible unavailability p50 (min-max)",
                "new leader p50 (min-max)",
                "kill in force after its fault-start, per run",
                "acknowledged writes lost",
            ],
            rows,
        )
        + note
        + source(root, HOSTS, BEFORE)
    )
