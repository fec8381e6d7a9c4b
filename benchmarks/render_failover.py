"""The failover tables in docs/failover.md, docs/zookeeper.md, docs/findings.md and docs/benchmarks.md: a leader killed
under Kafka's defaults, the cluster's modes (ZooKeeper, KRaft) and the migration between them, disaster recovery to a
second cluster, and the seed lab's scenarios (render_docs.py renders and checks them)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from benchmarks.render_base import RenderError, command_of, dr_ms, dr_records, load, num, secs, source, spread_s, table


def t_failover(root: Path) -> str:
    rel = "docs/benchmarks/failover.json"
    d = load(root, rel)
    runs = d["runs"]
    valid = sum(1 for r in runs if r["valid"])
    windows = [r["max_unavailable_ms"] for r in runs]
    leaders = [r["median_new_leader_ms"] for r in runs]
    lost = sorted({r["lost"] for r in runs})
    row = [
        "broker-failover: kill -9 the leader of a partition",
        "Kafka's defaults (`broker.session.timeout.ms` 9000, heartbeat 2000), acks=all, idempotent producer at "
        "200/s, RF 3, min.insync.replicas 2, 1 controller",
        f"{len(runs)}, " + ("all valid" if valid == len(runs) else f"{valid} valid"),
        f"**{secs(statistics.median(windows))}** ({min(windows) / 1000:.1f}–{max(windows) / 1000:.1f})",
        f"**{secs(statistics.median(leaders))}** ({min(leaders) / 1000:.1f}–{max(leaders) / 1000:.1f})",
        "0 in every run" if lost == [0] else ", ".join(str(x) for x in lost),
    ]
    header = [
        "scenario",
        "settings",
        "runs",
        "unavailability window (max over the affected partitions)",
        "time to a new leader",
        "acknowledged writes lost",
    ]
    return table(header, [row]) + f"\n\nMeasured {d['measured_utc'][:10]}." + source(root, rel)


MODES = (
    ("zookeeper-3.9.2", "ZooKeeper", "3.9.2", "controller-broker-failover", "`zookeeper.session.timeout.ms` 18000"),
    ("kraft-3.9.2", "KRaft (3 controllers)", "3.9.2", "controller-failover", "`broker.session.timeout.ms` 9000"),
    ("kraft-4.3.1", "KRaft (3 controllers)", "4.3.1", "controller-failover", "`broker.session.timeout.ms` 9000"),
)


def t_modes_failover(root: Path) -> str:
    rows, rels = [], []
    for label, mode, version, controller_scenario, detection in MODES:
        broker_rel = f"docs/benchmarks/modes/{label}-broker-failover.json"
        controller_rel = f"docs/benchmarks/modes/{label}-{controller_scenario}.json"
        broker, controller = load(root, broker_rel), load(root, controller_rel)
        rels += [broker_rel, controller_rel]
        verdicts = "; ".join(
            f"{s['runs']} runs: " + ", ".join(f"{n} {v}" for v, n in sorted(s["verdicts"].items()))
            for s in (broker, controller)
        )
        lost = sum(s["anomalies"].get("delivery.lost", {}).get("total", 0) for s in (broker, controller))
        rows.append(
            [
                mode,
                version,
                detection,
                spread_s(broker["times"]["availability.median_new_leader_ms"]),
                spread_s(broker["times"]["availability.max_unavailable_ms"]),
                spread_s(controller["times"]["measurements.new_controller_ms"]),
                verdicts,
                str(lost),
            ]
        )
    header = [
        "mode",
        "Kafka",
        "failure detection",
        "broker kill -9: new leader",
        "broker kill -9: longest unavailability",
        "controller kill -9: new controller",
        "verdicts",
        "acknowledged writes lost",
    ]
    return (
        table(header, rows)
        + "\n\nRendered from `docs/benchmarks/modes/*-failover.json`; made by "
        + f"`{command_of(root, rels[0])}`."
    )


def t_modes_migration(root: Path) -> str:
    rows, files = [], sorted((root / "docs/benchmarks/modes").glob("migration-[0-9].json"))
    if not files:
        raise RenderError("docs/benchmarks/modes/migration-N.json: none")
    for path in files:
        r = json.loads(path.read_text())
        counts = r["checkers"]["delivery"]["counts"]
        migration = r["measurements"]["migration"]
        steps = [f for f in r["checkers"]["availability"]["faults"] if f.get("max_unavailable_ms") is not None]
        worst = max(steps, key=lambda f: f["max_unavailable_ms"])["role"].split(": ", 1)[-1] if steps else "—"
        rows.append(
            [
                path.stem.split("-")[-1],
                r["verdict"] + ("" if migration.get("completed") else " (not completed)"),
                secs(migration["wall_ms"]),
                secs(r["checkers"]["availability"]["max_unavailable_ms"], 2),
                worst,
                num(counts["acknowledged"]),
                str(counts["lost"]),
                str(counts["duplicate"]),
            ]
        )
    header = [
        "run",
        "verdict",
        "wall time of the migration",
        "longest unavailability of a partition",
        "during the step",
        "acknowledged writes",
        "lost",
        "duplicates",
    ]
    rel = files[0].relative_to(root).as_posix()
    return (
        table(header, rows)
        + f"\n\nRendered from `docs/benchmarks/modes/migration-N.json`; made by `{command_of(root, rel)}`."
    )


def t_migration_clients(root: Path) -> str:
    rows = []
    for client, label in (
        ("librdkafka", "librdkafka (failsafe's producer)"),
        ("java", "Kafka's Java producer 3.9.2 (`producers[*].driver=kafka-verifiable`)"),
    ):
        files = sorted((root / "docs/benchmarks/modes").glob(f"migration-{client}-[0-9].json"))
        results = [json.loads(p.read_text()) for p in files]
        dup = [r["checkers"]["delivery"]["counts"]["duplicate-acknowledged"] for r in results]
        lost = sum(r["checkers"]["delivery"]["counts"]["lost"] for r in results)
        done = sum(1 for r in results if r["measurements"]["migration"].get("completed"))
        rows.append(
            [
                label,
                str(len(results)),
                f"{sum(1 for x in dup if x)} ({sum(dup)})",
                str(lost),
                f"{done} of {len(results)}",
            ]
        )
    header = ["producer", "runs", "runs with delivery.duplicate-acknowledged (values)", "lost", "migration completed"]
    rel = "docs/benchmarks/modes/migration-librdkafka-1.json"
    return (
        table(header, rows)
        + f"\n\nRendered from `docs/benchmarks/modes/migration-{{librdkafka,java}}-N.json`; made by "
        f"`{command_of(root, rel)}`."
    )


DR_FILES = (
    ("docs/benchmarks/dr-tuned.json", "failover, tuned"),
    ("docs/benchmarks/dr-defaults.json", "failover, defaults"),
    ("docs/benchmarks/dr-failback.json", "failback, tuned"),
)


def t_dr(root: Path) -> str:
    cols = [(load(root, rel), what) for rel, what in DR_FILES]
    header = ["per run: median (range)", *(f"{what} ({d['runs']} runs)" for d, what in cols)]
    rows = [
        ["verdicts", *(", ".join(f"{n} {v}" for v, n in sorted(d["verdicts"].items())) for d, _ in cols)],
        [
            "RPO, records (acknowledged, never mirrored)",
            *(
                dr_records(d["times"].get("dr.rpo-records (records)"), d["runs"])
                + (
                    f"; in {d['anomalies']['dr.rpo-records']['runs']} run(s), "
                    f"{d['anomalies']['dr.rpo-records']['total']} in all"
                    if "dr.rpo-records" in d["anomalies"]
                    else ""
                )
                for d, _ in cols
            ),
        ],
        ["RPO, seconds of data", *(dr_records(d["times"].get("dr.rpo_ms"), d["runs"]) for d, _ in cols)],
        ["RTO, first read on the target", *(dr_ms(d["times"]["dr.rto_first_read_ms"]) for d, _ in cols)],
        ["RTO, group caught up", *(dr_ms(d["times"]["dr.rto_caught_up_ms"]) for d, _ in cols)],
        [
            "records read twice after the move",
            *(dr_records(d["times"].get("dr.consumed-twice (records)"), d["runs"]) for d, _ in cols),
        ],
    ]
    return table(header, rows) + source(root, *(rel for rel, _ in DR_FILES))


SEEDLAB_REL = "docs/benchmarks/seed-lab.json"
PHASES = ("setup", "warm-up", "chaos", "heal", "recover", "drain")


def t_seed_lab(root: Path) -> str:
    d = load(root, SEEDLAB_REL)
    rows = []
    for i, run in enumerate(d["runs"], 1):
        for name, sc in run["scenarios"].items():
            t = sc["timings_s"]
            delivery = sc["counts"].get("delivery", {})
            rows.append(
                [
                    str(i),
                    name,
                    sc["verdict"],
                    *(f"{t.get(p, 0):.1f}" for p in PHASES),
                    f"**{sum(t.values()):.1f}**",
                    num(delivery.get("acknowledged", 0)),
                    str(delivery.get("lost", 0)),
                ]
            )
    header = ["run", "scenario", "verdict", *(f"{p} s" for p in PHASES), "all phases s", "acknowledged", "lost"]
    walls = ", ".join(f"**{r['wall_s']:.0f} s** (exit {r['exit_code']})" for r in d["runs"])
    note = (
        "\n\nThe whole `bash scripts/demo.sh` (cluster start, the ten scenarios with their checks and reports, "
        f"`down`), measured {d['measured_utc'][:10]}: {walls}; target 5 minutes (300 s). The phases of a scenario do "
        "not add up to its wall time: checking and drawing the report come after them."
    )
    return table(header, rows) + note + source(root, SEEDLAB_REL)


def _by_process(sc: dict) -> str:
    return "; ".join(
        f"{name}: {num(p['acknowledged'])} acknowledged, {p['lost']} lost"
        + (f", {num(p['unknown'])} unknown" if p.get("unknown") else "")
        for name, p in sc["by_process"].items()
    )


def t_seed_lab_scenarios(root: Path) -> str:
    d = load(root, SEEDLAB_REL)
    run = d["runs"][-1]
    rows = []
    for name, sc in run["scenarios"].items():
        a = sc["availability"]
        parts = []
        broker_fault = any(f["fault"] not in ("quorum-loss", "kill-consumer") for f in sc.get("faults", []))
        if broker_fault and a.get("median_new_leader_ms") is not None:
            parts.append(f"new leader after {secs(a['median_new_leader_ms'])} (median over the affected partitions)")
        if a.get("max_unavailable_ms") is not None:
            parts.append(f"longest unavailability {secs(a['max_unavailable_ms'])}")
        for fault in sc.get("faults", []):
            if fault.get("new_controller_ms") is not None:
                parts.append(f"{fault['fault']}: new controller after {secs(fault['new_controller_ms'])}")
            if fault["fault"] in ("quorum-loss", "stop") and fault.get("acknowledged_during"):
                parts.append(f"{fault['fault']}: {num(fault['acknowledged_during'])} writes acknowledged during it")
        create = sc["measurements"].get("create_topic") or {}
        for when, c in create.items():
            if c.get("attempts"):
                outcomes = {"ok": "succeeded", "fail": "failed", "info": "outcome unknown (timed out)"}
                parts.append(
                    f"topic creation {when.replace('_', ' ')}: "
                    + ", ".join(f"{n} {outcomes.get(k, k)}" for k, n in c.items() if k != "attempts" and n)
                )
        errors = sc["measurements"].get("send_errors") or {}
        if errors:
            parts.append("send errors: " + ", ".join(f"{num(n)} {e}" for e, n in errors.items()))
        order = sc["counts"].get("order", {})
        if order.get("nonmonotonic-send"):
            parts.append(f"nonmonotonic-send {order['nonmonotonic-send']}")
        rows.append([name, sc["verdict"], _by_process(sc), "; ".join(parts) or "—"])
    header = ["scenario", "verdict", "writes per producer", "measured"]
    return (
        table(header, rows) + f"\n\nRendered from `{SEEDLAB_REL}` (its last run, {d['measured_utc'][:10]}); made by "
        f"`{command_of(root, SEEDLAB_REL)}`."
    )
