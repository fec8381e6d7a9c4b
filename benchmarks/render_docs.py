"""Render the tables of docs/ from the stored raw files, and check that the docs still hold them.

    .venv/bin/python benchmarks/render_docs.py --check   # exit 1, with a diff, when a doc differs from what its files render
    .venv/bin/python benchmarks/render_docs.py --write   # rewrite every rendered block in place
    .venv/bin/python benchmarks/render_docs.py --show NAME   # print one rendered table

A rendered block in a doc (docs/*.md, README.md) is

    <!-- rendered: NAME -->
    ...what TABLES[NAME] renders from its files...
    <!-- /rendered -->

and the text between the markers is never edited by hand. Each table names the files it was
rendered from and the command that makes them. --check also fails when a raw file under
docs/benchmarks/ or docs/findings/ has no entry in RAW (no command says how it was made), when an
entry matches no file, when a table is placed in no doc, and when `make bench` does not run a
command RAW says it runs. Reads only JSON and markdown: no cluster, no import of failsafe.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.render_base import (  # noqa: E402
    RAW,
    RenderError,
    command_of,
    load,
    num,
    raw_index,
    secs,
    source,
    spread_ms,
    spread_s,
    table,
)
from benchmarks.render_pipeline import (  # noqa: E402
    t_pipeline_backlog,
    t_pipeline_live,
    t_pipeline_state,
    t_pipeline_state_store,
    t_pipeline_sustained,
    t_pipeline_sustained_driver_state,
    t_pipeline_sustained_two_queries,
    t_pipeline_targets,
    t_realtime,
)

BLOCK = re.compile(r"<!-- rendered: (?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)<!-- /rendered -->", re.DOTALL)


# -- the tables ----------------------------------------------------------------------------------


def t_cluster(root: Path) -> str:
    rel = "docs/benchmarks/cluster.json"
    d = load(root, rel)

    def row(what: str, key: str, unit: str, digits: int) -> list[str]:
        s = d[key]
        return [what, f"{num(s['median'], digits)} {unit}", f"{num(s['min'], digits)} {unit}", f"{num(s['max'], digits)} {unit}"]

    rows = [
        row("`failsafe up` of a new cluster to ready (config, storage format of every node, start, every broker registered "
            "and unfenced in every broker's metadata)", "create_to_ready_s", "s", 1),
        row("`failsafe up` of a stopped cluster (no format) to ready", "restart_to_ready_s", "s", 1),
        row("resident memory per broker, right after ready", "broker_rss_mib", "MiB", 0),
        row("resident memory of the controller", "controller_rss_mib", "MiB", 0),
        row("kill -9 of partition 0's leader to a new leader in the metadata (polled every 50 ms)", "kill_to_new_leader_s", "s", 1),
        row("the same, to the ISR without the killed broker", "kill_to_isr_shrunk_s", "s", 1),
    ]
    header = [f"Kafka {d['kafka_version']}, {len(d['runs'])} runs", "median", "min", "max"]
    return table(header, rows) + source(root, rel)


def t_cds(root: Path) -> str:
    rel = "docs/benchmarks/cds.json"
    d = load(root, rel)
    with_, without = d["medians"]["with_cds"], d["medians"]["without_cds"]
    n = len(d["rounds"]["with_cds"])

    def row(what: str, key: str) -> list[str]:
        return [what, f"**{with_[key]:.1f} s**", f"{without[key]:.1f} s", f"{(with_[key] / without[key] - 1) * 100:+.0f} %"]

    rows = [row("`failsafe up` of a new 3-broker cluster to ready", "up_s"),
            row("`failsafe broker start 1` after kill -9 and fencing, to registered", "broker_restart_s")]
    return table([f"median of {n} rounds", "with the archive", "without", ""], rows) + source(root, rel)


def t_producer(root: Path) -> str:
    rel = "docs/benchmarks/producer.json"
    d = load(root, rel)
    rows = [[str(i), f"{num(r['perf_test_records_per_s'])} rec/s", f"{num(r['failsafe_records_per_s'])} rec/s", f"{r['ratio']:.2f}"]
            for i, r in enumerate(d["rounds"], 1)]
    rows.append(["**median ratio**", "", "", f"**{d['median_ratio']:.2f}**"])
    return table(["round", "producer-perf-test", "failsafe (with history)", "ratio"], rows) + source(root, rel)


CHECK_STEPS = ("load", "delivery", "order", "semantics", "availability", "rebalance", "total")


def t_check(root: Path) -> str:
    rel = "docs/benchmarks/check.json"
    d = load(root, rel)
    h, cli, rec = d["history"], d["check_s"], d["recording"]
    copy, plain = d["from_copy_median"], d["from_json_median"]
    rows = [[f"**{step}**" if step == "total" else step,
             f"{copy['wall_s'][step]:.1f} s", f"{copy['cpu_s'][step]:.1f} s",
             f"{plain['wall_s'][step]:.1f} s", f"{plain['cpu_s'][step]:.1f} s"] for step in CHECK_STEPS]
    runs = len(d["from_copy"])
    header = [f"{num(h['ops'])} ops, {num(h['file_mb'] / 1000, 1)} GB ({'median of ' + str(runs) + ' runs' if runs > 1 else 'one run'})",
              "as the run left it (the recorder's copy): wall", "CPU", "without a copy (parses the JSON): wall", "CPU"]
    with_copy, without = rec["with_copy"], rec["without_copy"]
    note = (f"\n\n`failsafe check RUN_DIR` end to end (a process of its own: start-up, load, checkers, measurements, explanations, "
            f"summary): **{cli['first_median']:.1f} s** as the run left it ({', '.join(f'{x:.1f}' for x in cli['first'])}), "
            f"{cli['without_copy_median']:.1f} s without a copy ({', '.join(f'{x:.1f}' for x in cli['without_copy'])}).\n\n"
            f"What the copy cost the recording, fed at {rec['rate_mb_s']:g} MB/s ({num(with_copy['ops_per_s'])} ops/s): "
            f"**{rec['copy_cpu_s_per_million_ops_while_recording']:.1f} CPU s per million ops** while recording, "
            f"{rec['copy_cpu_s_per_million_ops']:.1f} in all; its close took {with_copy['close_wall_s']:.1f} s "
            f"({without['close_wall_s']:.1f} s without the copy). "
            f"1-minute load average at the start: {d['load_average_1m']['start']}, at the checks: {d['load_average_1m']['checks']}; "
            f"polars {d['polars']}, {d['threads']} threads.")
    return table(header, rows) + note + source(root, rel)


def t_failover(root: Path) -> str:
    rel = "docs/benchmarks/failover.json"
    d = load(root, rel)
    runs = d["runs"]
    valid = sum(1 for r in runs if r["valid"])
    windows = [r["max_unavailable_ms"] for r in runs]
    leaders = [r["median_new_leader_ms"] for r in runs]
    lost = sorted({r["lost"] for r in runs})
    row = ["broker-failover: kill -9 the leader of a partition",
           "Kafka's defaults (`broker.session.timeout.ms` 9000, heartbeat 2000), acks=all, idempotent producer at 200/s, RF 3, "
           "min.insync.replicas 2, 1 controller",
           f"{len(runs)}, " + ("all valid" if valid == len(runs) else f"{valid} valid"),
           f"**{secs(statistics.median(windows))}** ({min(windows) / 1000:.1f}–{max(windows) / 1000:.1f})",
           f"**{secs(statistics.median(leaders))}** ({min(leaders) / 1000:.1f}–{max(leaders) / 1000:.1f})",
           "0 in every run" if lost == [0] else ", ".join(str(x) for x in lost)]
    header = ["scenario", "settings", "runs", "unavailability window (max over the affected partitions)", "time to a new leader",
              "acknowledged writes lost"]
    return table(header, [row]) + f"\n\nMeasured {d['measured_utc'][:10]}." + source(root, rel)


def _sim_row(d: dict) -> list[str]:
    ratios = [r["ratio"] for r in d["rounds"]]
    same = [r["ratio_same_batching"] for r in d["rounds"]]
    return [str(d["instances"]), str(len(d["rounds"])), f"{num(d['median_perf_test_records_per_s'])}/s",
            f"{num(d['median_simulator_records_per_s'])}/s",
            f"**{d['median_ratio']:.2f}** ({min(ratios):.2f}-{max(ratios):.2f})",
            f"{d['median_ratio_same_batching']:.2f} ({min(same):.2f}-{max(same):.2f})"]


def t_simulator(root: Path) -> str:
    rels = ("docs/benchmarks/simulator.json", "docs/benchmarks/simulator-2-instances.json")
    rows = [_sim_row(load(root, rel)) for rel in rels]
    header = ["instances", "rounds", "producer-perf-test (median)", "simulator (median)", "ratio (median, range)",
              "ratio against perf-test with the simulator's batching"]
    return table(header, rows) + source(root, *rels)


def t_simulator_rounds(root: Path) -> str:
    rel = "docs/benchmarks/simulator.json"
    d = load(root, rel)
    rows = [[str(i), f"{num(r['perf_test_records_per_s'])} rec/s", f"{num(r['perf_test_same_batching_records_per_s'])} rec/s",
             f"{num(r['simulator_records_per_s'])} rec/s", f"{r['ratio']:.2f}", f"{r['ratio_same_batching']:.2f}"]
            for i, r in enumerate(d["rounds"], 1)]
    rows.append(["**median**", f"{num(d['median_perf_test_records_per_s'])} rec/s", "", f"{num(d['median_simulator_records_per_s'])} rec/s",
                 f"**{d['median_ratio']:.2f}**", f"**{d['median_ratio_same_batching']:.2f}**"])
    header = ["round", "perf-test (Java defaults)", "perf-test (simulator's batching)", "simulator", "ratio to perf-test", "ratio, same batching"]
    return table(header, rows) + source(root, rel)


def t_console(root: Path) -> str:
    rel = "docs/benchmarks/console.json"
    d = load(root, rel)
    rounds = d["rounds"]
    m2p = d["metadata_to_page_ms"]
    k2p = [r["kill_to_page_ms"] for r in rounds]
    k2m = [r["kill_to_metadata_ms"] for r in rounds]
    idle = d["idle_cpu_percent_of_one_core"]
    rows = [
        ["metadata has a new leader -> the page shows it", f"**{m2p['median']} ms** median, {m2p['min']} to {m2p['max']} ms "
         f"({len(rounds)} rounds; probe every {d['probe_interval_ms']:.0f} ms)"],
        ["kill -9 of the leader -> the page shows a new leader", f"{secs(statistics.median(k2p))} median ({min(k2p) / 1000:.1f}-{max(k2p) / 1000:.1f} s), "
         f"of which kill -> metadata {min(k2m) / 1000:.1f}-{max(k2m) / 1000:.1f} s"],
        [f"console CPU while idle, {d['idle_s']:.0f} s", ", ".join(f"{v:.2f} % ({k})" for k, v in idle.items()) + " of one core"],
    ]
    return table([f"{d['cluster']['brokers']} brokers, Kafka {d['cluster']['kafka_version']}", "result"], rows) + source(root, rel)


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
        verdicts = "; ".join(f"{s['runs']} runs: " + ", ".join(f"{n} {v}" for v, n in sorted(s["verdicts"].items())) for s in (broker, controller))
        lost = sum(s["anomalies"].get("delivery.lost", {}).get("total", 0) for s in (broker, controller))
        rows.append([mode, version, detection, spread_s(broker["times"]["availability.median_new_leader_ms"]),
                     spread_s(broker["times"]["availability.max_unavailable_ms"]), spread_s(controller["times"]["measurements.new_controller_ms"]),
                     verdicts, str(lost)])
    header = ["mode", "Kafka", "failure detection", "broker kill -9: new leader", "broker kill -9: longest unavailability",
              "controller kill -9: new controller", "verdicts", "acknowledged writes lost"]
    return table(header, rows) + "\n\nRendered from `docs/benchmarks/modes/*-failover.json`; made by " + f"`{command_of(root, rels[0])}`."


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
        rows.append([path.stem.split("-")[-1], r["verdict"] + ("" if migration.get("completed") else " (not completed)"),
                     secs(migration["wall_ms"]), secs(r["checkers"]["availability"]["max_unavailable_ms"], 2), worst,
                     num(counts["acknowledged"]), str(counts["lost"]), str(counts["duplicate"])])
    header = ["run", "verdict", "wall time of the migration", "longest unavailability of a partition", "during the step",
              "acknowledged writes", "lost", "duplicates"]
    rel = files[0].relative_to(root).as_posix()
    return table(header, rows) + f"\n\nRendered from `docs/benchmarks/modes/migration-N.json`; made by `{command_of(root, rel)}`."


def t_migration_clients(root: Path) -> str:
    rows = []
    for client, label in (("librdkafka", "librdkafka (failsafe's producer)"),
                          ("java", "Kafka's Java producer 3.9.2 (`producers[*].driver=kafka-verifiable`)")):
        files = sorted((root / "docs/benchmarks/modes").glob(f"migration-{client}-[0-9].json"))
        results = [json.loads(p.read_text()) for p in files]
        dup = [r["checkers"]["delivery"]["counts"]["duplicate-acknowledged"] for r in results]
        lost = sum(r["checkers"]["delivery"]["counts"]["lost"] for r in results)
        done = sum(1 for r in results if r["measurements"]["migration"].get("completed"))
        rows.append([label, str(len(results)), f"{sum(1 for x in dup if x)} ({sum(dup)})", str(lost), f"{done} of {len(results)}"])
    header = ["producer", "runs", "runs with delivery.duplicate-acknowledged (values)", "lost", "migration completed"]
    rel = "docs/benchmarks/modes/migration-librdkafka-1.json"
    return table(header, rows) + f"\n\nRendered from `docs/benchmarks/modes/migration-{{librdkafka,java}}-N.json`; made by `{command_of(root, rel)}`."


DR_FILES = (("docs/benchmarks/dr-tuned.json", "failover, tuned"), ("docs/benchmarks/dr-defaults.json", "failover, defaults"),
            ("docs/benchmarks/dr-failback.json", "failback, tuned"))


def _dr_records(spread: dict | None, runs: int) -> str:
    if spread is None:
        return "not measured"
    if spread["max"] == 0:
        return f"0 in all {runs}"
    return f"{num(spread['median'])} ({num(spread['min'])}-{num(spread['max'])})"


def _dr_ms(spread: dict) -> str:
    if spread["median"] >= 1000:
        return f"{spread['median'] / 1000:.2f} s ({spread['min'] / 1000:.2f}-{spread['max'] / 1000:.2f} s)"
    return f"{spread['median']:.0f} ms ({spread['min']:.0f}-{spread['max']:.0f} ms)"


def t_dr(root: Path) -> str:
    cols = [(load(root, rel), what) for rel, what in DR_FILES]
    header = ["per run: median (range)", *(f"{what} ({d['runs']} runs)" for d, what in cols)]
    rows = [
        ["verdicts", *(", ".join(f"{n} {v}" for v, n in sorted(d["verdicts"].items())) for d, _ in cols)],
        ["RPO, records (acknowledged, never mirrored)",
         *(_dr_records(d["times"].get("dr.rpo-records (records)"), d["runs"]) +
           (f"; in {d['anomalies']['dr.rpo-records']['runs']} run(s), {d['anomalies']['dr.rpo-records']['total']} in all"
            if "dr.rpo-records" in d["anomalies"] else "") for d, _ in cols)],
        ["RPO, seconds of data", *(_dr_records(d["times"].get("dr.rpo_ms"), d["runs"]) for d, _ in cols)],
        ["RTO, first read on the target", *(_dr_ms(d["times"]["dr.rto_first_read_ms"]) for d, _ in cols)],
        ["RTO, group caught up", *(_dr_ms(d["times"]["dr.rto_caught_up_ms"]) for d, _ in cols)],
        ["records read twice after the move", *(_dr_records(d["times"].get("dr.consumed-twice (records)"), d["runs"]) for d, _ in cols)],
    ]
    return table(header, rows) + source(root, *(rel for rel, _ in DR_FILES))


FINDINGS_ANOMALIES = ("delivery.duplicate-acknowledged", "delivery.duplicate-unacknowledged", "delivery.lost", "order.nonmonotonic-send")
FINDINGS_DUPLICATES = (
    ("leader-pause-timeout-librdkafka", ""),
    ("leader-pause-timeout-librdkafka-max-in-flight-1", ""),
    ("leader-pause-timeout-java", ""),
    ("two-brokers-down-librdkafka", ""),
    ("two-brokers-down-librdkafka-max-in-flight-1", ""),
    ("two-brokers-down-java", ""),
    ("broker-restart-librdkafka", ""),
    ("broker-restart-librdkafka-max-in-flight-1", ""),
    ("broker-restart-java", ""),
    ("two-brokers-down-librdkafka-loaded", " (both cores kept busy by two spinning processes)"),
)


def _anomaly(stats: dict, name: str) -> str:
    entry = stats["anomalies"].get(name)
    return "0" if entry is None else f"{entry['runs']} ({num(entry['total'])})"


def t_findings_duplicates(root: Path) -> str:
    rows, rels = [], []
    for label, what in FINDINGS_DUPLICATES:
        rel = f"docs/findings/{label}.json"
        stats = load(root, rel)
        rels.append(rel)
        rows.append([label + what, str(stats["runs"]), *(_anomaly(stats, a) for a in FINDINGS_ANOMALIES)])
    header = ["configuration", "runs", *(f"runs with {a} (count)" for a in FINDINGS_ANOMALIES)]
    commands = sorted({command_of(root, rel) for rel in rels}, key=lambda c: [r.command for r in RAW].index(c))
    return (table(header, rows) + "\n\nRendered from `docs/findings/LABEL.json` (LABEL: the first column); made by "
            + "; ".join(f"`{c}`" for c in commands) + ".")


FINDINGS_STALLS = (
    ("stall-rf3-acks-all-librdkafka", "RF 3, acks=all, librdkafka", "— (none: RF 3 on 3 brokers)"),
    ("stall-rf3-acks-all-java", "RF 3, acks=all, Java producer", "—"),
    ("stall-rf3-acks-1-librdkafka", "RF 3, acks=1, librdkafka", "—"),
    ("stall-rf2-acks-all-librdkafka", "RF 2, `min.insync.replicas` 1, acks=all, librdkafka", None),
    ("stall-rf2-acks-all-java", "RF 2, `min.insync.replicas` 1, acks=all, Java producer", None),
)


def t_findings_stalls(root: Path) -> str:
    rows = []
    for label, what, unreplicated in FINDINGS_STALLS:
        stats = load(root, f"docs/findings/{label}.json")
        times = stats["times"]
        rows.append([f"{what} (`{label}`)", str(stats["runs"]), spread_ms(times["availability.stall_by_group.led"]),
                     spread_ms(times["availability.stall_by_group.follower"]),
                     unreplicated if unreplicated is not None else spread_ms(times["availability.stall_by_group.unreplicated"])])
    header = ["settings (broker-failover: kill -9 the leader of partition 0, 13 partitions, 200 writes/s)", "runs",
              "`led` max stall ms, median (range, n)", "`follower` max stall ms", "`unreplicated` max stall ms"]
    rel = f"docs/findings/{FINDINGS_STALLS[0][0]}.json"
    return table(header, rows) + f"\n\nRendered from `docs/findings/LABEL.json`; made by `{command_of(root, rel)}`."


FINDINGS_STALLS_OTHER = ("broker-restart-librdkafka", "two-brokers-down-librdkafka", "leader-pause-timeout-librdkafka")


def t_findings_stalls_other(root: Path) -> str:
    rows = []
    for label in FINDINGS_STALLS_OTHER:
        stats = load(root, f"docs/findings/{label}.json")
        times = stats["times"]
        rows.append([f"`{label}`", str(stats["runs"]), secs(times["availability.stall_by_group.led"]["median"]),
                     secs(times["availability.stall_by_group.follower"]["median"])])
    header = ["configuration", "runs", "`led` max stall, median", "`follower` max stall, median"]
    return table(header, rows) + "\n\nRendered from `docs/findings/LABEL.json` (section 1's runs)."


FINDINGS_ZOOKEEPER = (
    ("two-brokers-down-zookeeper-librdkafka", "ZooKeeper (3.9.2), librdkafka"),
    ("two-brokers-down-zookeeper-java", "ZooKeeper (3.9.2), Java producer"),
    ("two-brokers-down-kraft-chaos32-librdkafka", "KRaft (4.3.1), librdkafka, chaos 32 s"),
)


def t_findings_zookeeper(root: Path) -> str:
    rows, rels = [], []
    for label, what in FINDINGS_ZOOKEEPER:
        rel = f"docs/findings/{label}.json"
        stats = load(root, rel)
        rels.append(rel)
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(stats["verdicts"].items()))
        rows.append([f"{what} (`{label}`)", str(stats["runs"]), verdicts, _anomaly(stats, "delivery.duplicate-acknowledged"),
                     _anomaly(stats, "delivery.duplicate-unacknowledged"), _anomaly(stats, "delivery.lost"),
                     secs(stats["times"]["availability.stall_by_group.follower"]["median"])])
    header = ["configuration", "runs", "verdicts", "runs with delivery.duplicate-acknowledged (values)",
              "runs with delivery.duplicate-unacknowledged (values)", "runs with delivery.lost",
              "longest stall of a partition the dead brokers only followed (median)"]
    commands = []
    for rel in rels:
        if command_of(root, rel) not in commands:
            commands.append(command_of(root, rel))
    return table(header, rows) + "\n\nRendered from `docs/findings/LABEL.json`; made by " + "; ".join(f"`{c}`" for c in commands) + "."


SEEDLAB_REL = "docs/benchmarks/seed-lab.json"
PHASES = ("setup", "warm-up", "chaos", "heal", "recover", "drain")


def t_seed_lab(root: Path) -> str:
    d = load(root, SEEDLAB_REL)
    rows = []
    for i, run in enumerate(d["runs"], 1):
        for name, sc in run["scenarios"].items():
            t = sc["timings_s"]
            delivery = sc["counts"].get("delivery", {})
            rows.append([str(i), name, sc["verdict"], *(f"{t.get(p, 0):.1f}" for p in PHASES), f"**{sum(t.values()):.1f}**",
                         num(delivery.get("acknowledged", 0)), str(delivery.get("lost", 0))])
    header = ["run", "scenario", "verdict", *(f"{p} s" for p in PHASES), "all phases s", "acknowledged", "lost"]
    walls = ", ".join(f"**{r['wall_s']:.0f} s** (exit {r['exit_code']})" for r in d["runs"])
    note = (f"\n\nThe whole `bash scripts/demo.sh` (cluster start, the ten scenarios with their checks and reports, `down`), "
            f"measured {d['measured_utc'][:10]}: {walls}; target 5 minutes (300 s). The phases of a scenario do not add up to its wall "
            "time: checking and drawing the report come after them.")
    return table(header, rows) + note + source(root, SEEDLAB_REL)


def _by_process(sc: dict) -> str:
    return "; ".join(f"{name}: {num(p['acknowledged'])} acknowledged, {p['lost']} lost" + (f", {num(p['unknown'])} unknown" if p.get("unknown") else "")
                     for name, p in sc["by_process"].items())


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
                parts.append(f"topic creation {when.replace('_', ' ')}: " + ", ".join(f"{n} {outcomes.get(k, k)}" for k, n in c.items()
                                                                                    if k != "attempts" and n))
        errors = sc["measurements"].get("send_errors") or {}
        if errors:
            parts.append("send errors: " + ", ".join(f"{num(n)} {e}" for e, n in errors.items()))
        order = sc["counts"].get("order", {})
        if order.get("nonmonotonic-send"):
            parts.append(f"nonmonotonic-send {order['nonmonotonic-send']}")
        rows.append([name, sc["verdict"], _by_process(sc), "; ".join(parts) or "—"])
    header = ["scenario", "verdict", "writes per producer", "measured"]
    return table(header, rows) + f"\n\nRendered from `{SEEDLAB_REL}` (its last run, {d['measured_utc'][:10]}); made by `{command_of(root, SEEDLAB_REL)}`."


NETWORK_DIR = "docs/benchmarks/network"


def _net(root: Path, label: str) -> tuple[str, dict]:
    rel = f"{NETWORK_DIR}/{label}.json"
    return rel, load(root, rel)


def _fault_view(results: dict) -> tuple[dict, dict]:
    """The first fault's first affected partition and its stalls by group, from the availability checker."""
    faults = results["checkers"]["availability"]["faults"]
    if not faults:
        raise RenderError(f"{results.get('scenario')}: no fault in the availability checker's results")
    fault = faults[0]
    partition = fault["affected_partitions"][0] if fault["affected_partitions"] else {}
    return partition, fault.get("stalls", {})


def _lost_of(p: dict) -> str:
    return f"{num(p['lost'])} of {num(p['acknowledged'])}"


def _stall(stalls: dict, group: str) -> str:
    st = stalls.get(group)
    return "—" if not st else f"{secs(st['max_stall_ms'])}" + (f" ({st['open']} never acknowledged again)" if st.get("open") else "")


def t_network_leader_isolated(root: Path) -> str:
    cols = [_net(root, "leader-isolated-librdkafka"), _net(root, "leader-isolated-java")]
    views = [(r, *_fault_view(r)) for _, r in cols]
    rows = [
        ["verdict", *(r["verdict"] for r, _, _ in views)],
        ["new leader of events-0 after the fault began", *(secs(p["new_leader_ms"]) if p.get("new_leader_ms") is not None else "none"
                                                            for _, p, _ in views)],
        ["longest stall of acknowledgements on events-0 (the isolated leader's)", *(_stall(st, "led") for _, _, st in views)],
        ["the same on the partitions the isolated broker followed", *(_stall(st, "follower") for _, _, st in views)],
        ["availability window of events-0 (`unavailable_ms`)", *(secs(p["unavailable_ms"], 3) if p.get("unavailable_ms") is not None else "—"
                                                              for _, p, _ in views)],
        ["acks=all: acknowledged writes lost", *(_lost_of(r["checkers"]["delivery"]["by_process"]["acksall"]) for r, _, _ in views)],
        ["acks=1: acknowledged writes lost", *(_lost_of(r["checkers"]["delivery"]["by_process"]["acks1"]) for r, _, _ in views)],
    ]
    header = ["leader-isolated, one run each", "librdkafka", "Kafka's Java producer (`--set 'producers[*].driver=kafka-verifiable'`)"]
    return table(header, rows) + source(root, *(rel for rel, _ in cols))


WHERE_REL = "docs/findings/leader-pause-timeout-duplicates-where.json"


def t_findings_where(root: Path) -> str:
    d = load(root, WHERE_REL)
    gaps = d["offsets_between_first_and_last_copy"]
    rows = [[str(d["runs"]), num(d["values_written_more_than_once"]), num(d["sent_during_a_broker_fault"]),
             f"{num(d['acknowledged_at_the_later_copy'])} of {num(d['acknowledged'])}",
             "—" if gaps is None else f"{num(gaps['min'])} / {num(gaps['median'])} / {num(gaps['max'])}"]]
    header = ["leader-pause-timeout runs (librdkafka)", "values written more than once", "of them sent while the broker was frozen",
              "acknowledged at the later copy", "offsets between the first and last copy: min / median / max"]
    return table(header, rows) + source(root, WHERE_REL)


DR_FLUSH = (("docs/benchmarks/dr-failback-flush-60s.json", "60000 (Connect's default)"), ("docs/benchmarks/dr-failback.json", "1000 (the catalog's)"))


def t_findings_dr_flush(root: Path) -> str:
    rows = []
    for rel, flush in DR_FLUSH:
        d = load(root, rel)
        t = d["times"]
        rows.append([flush, str(d["runs"]), ", ".join(f"{n} {v}" for v, n in sorted(d["verdicts"].items())),
                     _dr_records(t.get("dr.consumed-twice (records)"), d["runs"]), _dr_records(t.get("dr.rpo-records (records)"), d["runs"]),
                     _dr_ms(t["dr.rto_first_read_ms"]), _dr_ms(t["dr.rto_caught_up_ms"])])
    header = ["Connect's `offset.flush.interval.ms`", "dr-failback runs (3+3 brokers)", "verdicts", "records read twice after the move",
              "records lost (RPO)", "RTO, first read on the primary", "RTO, group caught up"]
    return table(header, rows) + source(root, *(rel for rel, _ in DR_FLUSH))


COLD_COORDINATOR = (("docs/findings/cold-coordinator-librdkafka.json", "a fresh cluster for each run (cold group coordinator)", "4.3.1"),
                    ("docs/findings/warm-coordinator-librdkafka.json", "one cluster, after a first run not counted (warm)", "4.3.1"),
                    ("docs/findings/cold-coordinator-librdkafka-kafka-3.9.2.json", "a fresh cluster for each run (cold group coordinator)",
                     "3.9.2"))


DECOMMISSIONED = (("docs/findings/brokers-cut-from-controllers-librdkafka.json", "librdkafka 2.16.0", "20 s (brokers fenced after 9 s)"),
                  ("docs/findings/brokers-cut-from-controllers-java.json", "Kafka's Java consumer 4.3.1", "20 s (brokers fenced after 9 s)"),
                  ("docs/findings/brokers-cut-from-controllers-5s-librdkafka.json", "librdkafka 2.16.0", "5 s (no broker fenced)"))


def t_findings_decommissioned(root: Path) -> str:
    rows = []
    for rel, client, split in DECOMMISSIONED:
        d = load(root, rel)["decommissioned_coordinator"]
        librdkafka = client.startswith("librdkafka")
        rows.append([client, split, str(d["runs"]), str(d["runs_with_a_partition_never_read_to_the_end"]),
                     f"{d['stuck_members_left_in_query_coord']} of {d['stuck_members']}" if librdkafka else "—",
                     str(d["members_left_in_query_coord_not_stuck"]) if librdkafka else "—",
                     str(d["runs_with_the_line"]) if librdkafka else "—", num(d["acknowledged_lost_not_in_log"])])
    header = ["group members", "brokers cut from the controllers for", "runs", "runs with a partition the group never read to the end",
              "stuck members still looking for a coordinator at close", "members left looking that read to the end all the same",
              "runs with \"Group coordinator decommissioned\"", "acknowledged writes not in the log"]
    return table(header, rows) + source(root, *(rel for rel, _, _ in DECOMMISSIONED))


NO_BROKER_REL = "docs/findings/brokers-cut-from-controllers-librdkafka-debug-metadata.json"


def t_findings_no_broker(root: Path) -> str:
    d = load(root, NO_BROKER_REL)["decommissioned_coordinator"]
    rows = [[str(d["runs"]), str(d["runs_with_a_partition_never_read_to_the_end"]),
             f"{d['stuck_members_told_no_broker']} of {d['stuck_members']}", str(d["members_told_no_broker_not_stuck"]),
             f"{d['stuck_members_left_without_a_broker']} of {d['stuck_members']}", str(d["members_left_without_a_broker_not_stuck"]),
             f"{d['members_back_to_bootstrap_not_stuck']} of {d['members_told_no_broker_not_stuck']}",
             f"{d['stuck_members_back_to_bootstrap']} of {d['stuck_members_told_no_broker']}"]]
    header = ["librdkafka runs with debug=cgrp,metadata,broker (20 s split)", "runs with a partition never read to the end",
              "stuck members handed a Metadata response with 0 brokers", "members handed one that read to the end",
              "stuck members with no usable broker when they closed", "members that read to the end with none",
              "members handed one that read on and then got metadata from a bootstrap server", "stuck members that did"]
    return table(header, rows) + source(root, NO_BROKER_REL)


def t_findings_cold(root: Path) -> str:
    rows = []
    for rel, how, version in COLD_COORDINATOR:
        c = load(root, rel)["cold_coordinator"]
        if c["kafka_version"] != version:
            raise RenderError(f"{rel}: Kafka {c['kafka_version']}, expected {version}")
        rows.append([how, f"Kafka {version} (KRaft, 3 controllers)", str(c["runs"]), str(c["runs_with_a_reader_never_caught_up"]),
                     str(c["runs_with_the_request_level_error"]), f"{c['stuck_readers_with_the_error']} of {c['stuck_readers']}",
                     str(c["readers_with_the_error_not_stuck"])])
    header = ["cluster", "Kafka", "runs", "runs with a reader that never caught up", "runs whose client logs have the request-level NOT_COORDINATOR",
              "stuck readers whose log has it", "readers with it that read on"]
    return table(header, rows) + source(root, *(rel for rel, _, _ in COLD_COORDINATOR))


def _stall_examples(stalls: dict, group: str) -> str:
    st = stalls.get(group)
    if not st:
        return "—"
    cells = [f"{e['topic']}-{e['partition']} {secs(e['stall_ms'])}" + (" (never acknowledged again)" if e.get("never_acked_after") else "")
             for e in st["examples"]]
    more = st["partitions"] - len(st["examples"])
    return ", ".join(cells) + (f" and {more} more" if more > 0 else "")


NETWORK_FAULTS = ("follower-cut-off", "flaky-network")


def t_network_faults(root: Path) -> str:
    rows, rels = [], []
    for label in NETWORK_FAULTS:
        rel, r = _net(root, label)
        rels.append(rel)
        faults = r["checkers"]["availability"]["faults"]
        stalls: dict = {}
        for fault in faults:
            for group, st in fault.get("stalls", {}).items():
                stalls.setdefault(group, st)
        counts = r["checkers"]["delivery"]["counts"]
        errors = r["measurements"].get("send_errors") or {}
        rows.append([f"`{label}`", "; ".join(f["role"] for f in faults), r["verdict"],
                     f"{num(counts['lost'])} of {num(counts['acknowledged'])}", _stall_examples(stalls, "led"),
                     _stall_examples(stalls, "follower"), _stall_examples(stalls, "unreplicated"),
                     ", ".join(f"{num(n)} {e}" for e, n in errors.items()) or "none"])
    header = ["scenario", "fault", "verdict", "acknowledged writes lost", "longest write stall: partitions the faulted brokers led",
              "partitions they followed", "partitions with no replica on them", "refused writes"]
    return table(header, rows) + source(root, *rels)


def t_network_zone(root: Path) -> str:
    rel, r = _net(root, "zone-outage")
    faults = r["checkers"]["availability"]["faults"]
    rows = []
    for topic, what in (("zoned", "rack-aware (one replica per rack)"), ("unzoned", "RF 3 placed by hand, two replicas of partitions 0 and 1 in rack-0")):
        led = [p for f in faults for p in f["affected_partitions"] if p["topic"] == topic]
        p = r["checkers"]["delivery"]["by_process"][topic]
        rows.append([f"`{topic}`: {what}",
                     ", ".join(f"{x['topic']}-{x['partition']} {secs(x['unavailable_ms'])}" for x in sorted(led, key=lambda x: x["partition"])) or "—",
                     num(p["failed"]), num(p["unknown"]), _lost_of(p)])
    errors = r["measurements"].get("send_errors") or {}
    header = ["topic (zone-outage: both brokers of rack-0 killed, 6 brokers in 3 racks)", "partitions led from rack-0: unavailable",
              "writes refused", "outcome unknown", "acknowledged writes lost"]
    note = f"\n\nVerdict {r['verdict']}; send errors: " + (", ".join(f"{num(n)} {e}" for e, n in errors.items()) or "none") + "."
    return table(header, rows) + note + source(root, rel)


UNCLEAN = (("unclean-election-enabled", "true (the catalog's)"),
           ("unclean-election-disabled", "false (`--set 'topics[0].configs.\"unclean.leader.election.enable\"=\"false\"'`)"),
           ("unclean-election-elr", "true, with `min.insync.replicas` 2 and acks=all (eligible leader replicas)"))


def t_network_unclean(root: Path) -> str:
    rows, rels = [], []
    for label, what in UNCLEAN:
        rel, r = _net(root, label)
        rels.append(rel)
        led = [p for f in r["checkers"]["availability"]["faults"] for p in f["affected_partitions"]]
        counts = r["checkers"]["delivery"]["counts"]
        leader = "; ".join(
            (f"broker {p['new_leader']} after {secs(p['new_leader_ms'])}" + ("" if p.get("new_leader_in_isr") else ", not in the ISR before: unclean")
             if p.get("new_leader") is not None else "none of the other brokers") for p in led) or "—"
        unavailable = r["checkers"]["availability"]["max_unavailable_ms"]
        rows.append([what, r["verdict"], leader, num(counts["acknowledged"]), num(counts["lost-after-read"]), num(counts["lost"]),
                     secs(unavailable) if unavailable is not None else "—"])
    header = ["`unclean.leader.election.enable`", "verdict", "new leader once broker 0 (the last in the ISR) was killed", "acknowledged",
              "lost after a consumer read them (`lost-after-read`)", "`lost`", "longest unavailability"]
    return table(header, rows) + source(root, *rels)


def t_raw_files(root: Path) -> str:
    rows, index = [], raw_index(root)
    for raw in RAW:
        matched = [p.relative_to(root).as_posix() for p, entries in index.items() if raw in entries]
        files = ", ".join(f"`{m}`" for m in matched) if len(matched) <= 3 else ", ".join(f"`{g}`" for g in raw.globs) + f" ({len(matched)} files)"
        rows.append([files, f"`{raw.command}`", "yes" if raw.make_bench else "no", raw.note])
    return table(["file", "command (from the repository root)", "in `make bench`", "note"], rows)


def t_summary(root: Path) -> str:
    producer = load(root, "docs/benchmarks/producer.json")
    check = load(root, "docs/benchmarks/check.json")
    cds = load(root, "docs/benchmarks/cds.json")
    cluster = load(root, "docs/benchmarks/cluster.json")
    failover = load(root, "docs/benchmarks/failover.json")
    ratios = [r["ratio"] for r in producer["rounds"]]
    first, plain = check["check_s"]["first_median"], check["check_s"]["without_copy_median"]
    copy_cost = check["recording"]["copy_cpu_s_per_million_ops_while_recording"]
    up_cds = cds["medians"]["with_cds"]["up_s"]
    up = cluster["create_to_ready_s"]["median"]
    windows = [r["max_unavailable_ms"] for r in failover["runs"]]
    leaders = [r["median_new_leader_ms"] for r in failover["runs"]]
    lab = load(root, SEEDLAB_REL)
    lab_walls = [r["wall_s"] for r in lab["runs"]]
    lab_verdicts: dict[str, int] = {}
    for run in lab["runs"]:
        for sc in run["scenarios"].values():
            lab_verdicts[sc["verdict"]] = lab_verdicts.get(sc["verdict"], 0) + 1

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    rows = [
        ["verifying producer with history recording, against `producer-perf-test` (100-byte records, acks=all, alternating rounds)",
         f"**{producer['median_ratio']:.2f}** of it (median of {len(ratios)} rounds: " + ", ".join(f"{r:.2f}" for r in ratios) + ")",
         f"≥ 0.8: {met(producer['median_ratio'] >= 0.8)}", "`producer.json`"],
        [f"`failsafe check` on {num(check['history']['ops'] / 1e6, 0)} million ops, first check of the run (reads the columnar copy its "
         "recorder made), end to end", f"**{first:.1f} s**", f"≤ 10 s: {met(first <= 10)}", "`check.json`"],
        ["the same history without a copy (parses the JSON: an old, edited or hand-written history)", f"**{plain:.1f} s**", "measured",
         "`check.json`"],
        ["what making the copy costs the recording", f"**{copy_cost:.1f} CPU s per million ops**", "measured", "`check.json`"],
        ["`failsafe up` of a new 3-broker cluster to ready", f"**{up:.1f} s** (median of {len(cluster['runs'])}); "
         f"{up_cds:.1f} s with the class-data sharing archive in the alternating rounds of `cds.json`",
         f"≤ 20 s: {met(up <= 20)}", "`cluster.json`, `cds.json`"],
        ["wall time of `make demo` without its set-up (`failsafe run seed-lab` on a fresh cluster, its start and stop included)",
         f"**{statistics.median(lab_walls):.0f} s** ({len(lab_walls)} run{'s' if len(lab_walls) > 1 else ''}; scenarios: "
         + ", ".join(f"{n} {v}" for v, n in sorted(lab_verdicts.items())) + ")",
         f"≤ 5 min: {met(statistics.median(lab_walls) <= 300)}", "`seed-lab.json`"],
        [f"broker-failover under Kafka's defaults, median of {len(windows)} runs",
         f"unavailability window **{secs(statistics.median(windows))}**, new leader **{secs(statistics.median(leaders))}**", "measured",
         "`failover.json`"],
    ]
    return table(["what", "measured", "target", "raw file (docs/benchmarks/)"], rows)


# -- campaigns (docs/campaigns.md) ------------------------------------------------------------------

CAMPAIGNS = (("safe", "docs/benchmarks/campaign-safe.json"), ("anything-goes", "docs/benchmarks/campaign-anything-goes.json"))


def _present(root: Path) -> list[tuple[str, str, dict]]:
    return [(label, rel, load(root, rel)) for label, rel in CAMPAIGNS if (root / rel).is_file()]


def _s(spread: dict | None) -> str:
    return "—" if not spread else f"{spread['median']:.1f} (p95 {spread['p95']:.1f}, max {spread['max']:.1f})"


def t_campaigns(root: Path) -> str:
    rows, rels = [], []
    for label, rel, data in _present(root):
        c, s = data["campaign"], data["summary"]
        verdicts = ", ".join(f"{v} {n}" for v, n in s["verdicts"].items() if n) or "none"
        rows.append([f"{label}: `{c['workload']}`, {c['envelope']}, seed {c['seed']}", ", ".join(c["faults"]), f"{s['runs_done']}/{c['runs']}",
                     verdicts, str(s["lost_acknowledged"]), _s(s["wall_s"]), _s(s["overhead_s"]), f"{c['duration_s']:g}"])
        rels.append(rel)
    header = ["campaign", "faults drawn", "runs", "verdicts", "acknowledged writes lost (acks=all)", "wall s per run, median",
              "overhead s per run (wall − chaos)", "chaos s asked"]
    return (table(header, rows) + "\n\nRendered from " + ", ".join(f"`{r}`" for r in rels) + "; made by "
            + "; ".join(f"`{command_of(root, r)}`" for r in rels[:1]) + " (`safe` or `anything-goes` as its argument).")


def t_campaign_anomalies(root: Path) -> str:
    rows = []
    for label, _, data in _present(root):
        for anomaly, entry in data["summary"]["anomalies"].items():
            combos = sorted(((k, v) for k, v in entry["combinations"].items() if v["runs"]), key=lambda kv: -kv[1]["runs"] / kv[1]["of"])
            shown = "; ".join(f"{k}: {v['runs']} of {v['of']}" for k, v in combos[:4]) + ("; ..." if len(combos) > 4 else "")
            rows.append([label, f"`{anomaly}`", f"{entry['runs']} ({entry['decided_runs']} decided the verdict)", num(entry["total"]), shown])
    if not rows:
        rows.append(["—", "no anomaly in any run", "", "", ""])
    return table(["campaign", "anomaly", "runs showing it", "total count", "fault combinations (runs showing it of runs under it)"], rows) + \
        "\n\nRendered from `docs/benchmarks/campaign-*.json`."


def t_campaign_unavailability(root: Path) -> str:
    rows = []
    for label, _, data in _present(root):
        for fault, entry in sorted(data["summary"]["unavailability"].items()):
            worst, leader = entry.get("max_unavailable_ms"), entry.get("new_leader_ms")
            rows.append([label, f"`{fault}`", str(entry["started"]), spread_ms(worst) if worst else "—", spread_ms(leader) if leader else "—"])
    return table(["campaign", "fault", "started", "longest unavailability of a partition it affected, ms: median (range, n)",
                  "slowest new leader, ms: median (range, n)"], rows) + "\n\nRendered from `docs/benchmarks/campaign-*.json`."


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
        rows.append([f"`{d['run']}`", f"`{d['anomaly']}`", before, after, str(len(d["steps"])),
                     f"{d['runs']} ({d['reproductions']} reproduced)", f"{d['confirm']['reproduced']} of {d['confirm']['runs']}",
                     "; ".join(f"{f['fault']} {f.get('role') or f.get('sides') or ''} at {f['at_s']:g} s"
                               + (f" for {f['duration_s']:g} s" if f.get("duration_s") else "") for f in smallest["faults"])])
    header = ["run", "anomaly kept", "before", "after", "steps", "runs of candidates", "the smallest schedule reproduced", "smallest schedule"]
    return table(header, rows) + source(root, *rels)


TABLES: dict[str, Callable[[Path], str]] = {
    "raw-files": t_raw_files,
    "summary": t_summary,
    "cluster": t_cluster,
    "cds": t_cds,
    "producer": t_producer,
    "check": t_check,
    "failover": t_failover,
    "simulator": t_simulator,
    "simulator-rounds": t_simulator_rounds,
    "pipeline-backlog": t_pipeline_backlog,
    "pipeline-live": t_pipeline_live,
    "pipeline-sustained": t_pipeline_sustained,
    "pipeline-sustained-two-queries": t_pipeline_sustained_two_queries,
    "pipeline-sustained-driver-state": t_pipeline_sustained_driver_state,
    "pipeline-state": t_pipeline_state,
    "pipeline-state-store": t_pipeline_state_store,
    "pipeline-targets": t_pipeline_targets,
    "realtime": t_realtime,
    "console": t_console,
    "modes-failover": t_modes_failover,
    "modes-migration": t_modes_migration,
    "migration-clients": t_migration_clients,
    "seed-lab": t_seed_lab,
    "seed-lab-scenarios": t_seed_lab_scenarios,
    "network-leader-isolated": t_network_leader_isolated,
    "network-faults": t_network_faults,
    "network-zone": t_network_zone,
    "network-unclean": t_network_unclean,
    "dr": t_dr,
    "findings-where": t_findings_where,
    "findings-dr-flush": t_findings_dr_flush,
    "findings-cold-coordinator": t_findings_cold,
    "findings-decommissioned-coordinator": t_findings_decommissioned,
    "findings-no-broker-metadata": t_findings_no_broker,
    "findings-duplicates": t_findings_duplicates,
    "findings-stalls": t_findings_stalls,
    "findings-stalls-other": t_findings_stalls_other,
    "findings-zookeeper": t_findings_zookeeper,
    "campaigns": t_campaigns,
    "campaign-anomalies": t_campaign_anomalies,
    "campaign-unavailability": t_campaign_unavailability,
    "campaign-shrinks": t_campaign_shrinks,
}


# -- check and write -----------------------------------------------------------------------------


def doc_paths(root: Path) -> list[Path]:
    return sorted((root / "docs").glob("*.md")) + [p for p in (root / "README.md",) if p.is_file()]


def render(root: Path, name: str) -> str:
    if name not in TABLES:
        raise RenderError(f"no table named {name!r} (known: {', '.join(TABLES)})")
    return TABLES[name](root).rstrip("\n") + "\n"


def rendered_text(root: Path, text: str, where: str, problems: list[str], used: set[str]) -> str:
    """text with every rendered block replaced by what its files render now."""

    def replace(match: re.Match) -> str:
        name = match["name"]
        used.add(name)
        try:
            body = render(root, name)
        except (RenderError, KeyError, TypeError, ValueError) as e:
            problems.append(f"{where}: table {name}: cannot render: {e!r}")
            return match.group(0)
        return f"<!-- rendered: {name} -->\n{body}<!-- /rendered -->"

    return BLOCK.sub(replace, text)


def make_bench_commands(root: Path) -> list[str]:
    """The commands of the Makefile's bench recipe, its variables expanded."""
    text = (root / "Makefile").read_text()
    variables = dict(re.findall(r"^([A-Z_]+)[ \t]*[:?]?=[ \t]*(.*?)[ \t]*$", text, re.MULTILINE))
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    if recipe is None:
        return []

    def expand(line: str) -> str:
        for _ in range(3):
            line = re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m[1], m[0]), line)
        return line.strip()

    return [expand(line) for line in recipe.group(1).splitlines()]


def raw_problems(root: Path) -> list[str]:
    problems, index = [], raw_index(root)
    for path, entries in index.items():
        if len(entries) != 1:
            rel = path.relative_to(root)
            problems.append(f"{rel}: {'no entry' if not entries else f'{len(entries)} entries'} in RAW (benchmarks/render_docs.py): "
                            "say which command makes it")
    for raw in RAW:
        if not any(raw in entries for entries in index.values()):
            problems.append(f"RAW entry {', '.join(raw.globs)}: matches no file")
    commands = make_bench_commands(root)
    for raw in RAW:
        if raw.make_bench and raw.command not in commands:
            problems.append(f"RAW entry {', '.join(raw.globs)}: marked as run by `make bench`, but its command is not in the Makefile's bench recipe: "
                            f"{raw.command}")
    return problems


def check(root: Path = ROOT) -> list[str]:
    """Every difference between the docs and what their files render, as lines; empty when none."""
    problems: list[str] = []
    used: set[str] = set()
    for path in doc_paths(root):
        text = path.read_text()
        where = path.relative_to(root).as_posix()
        new = rendered_text(root, text, where, problems, used)
        if new != text:
            diff = difflib.unified_diff(text.splitlines(), new.splitlines(), f"{where} (as written)", f"{where} (as rendered)", lineterm="", n=1)
            problems.append("\n".join(diff))
    for name in sorted(set(TABLES) - used):
        problems.append(f"table {name}: placed in no doc (add <!-- rendered: {name} --> ... <!-- /rendered --> where it belongs)")
    return problems + raw_problems(root)


def write(root: Path = ROOT) -> list[Path]:
    """Re-render every block in place; returns the docs that changed."""
    changed, problems = [], []
    for path in doc_paths(root):
        text = path.read_text()
        new = rendered_text(root, text, path.relative_to(root).as_posix(), problems, set())
        if new != text:
            path.write_text(new)
            changed.append(path)
    if problems:
        raise RenderError("\n".join(problems))
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 when a doc differs from what its files render")
    mode.add_argument("--write", action="store_true", help="rewrite every rendered block")
    mode.add_argument("--show", metavar="NAME", help="print one table")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this script's)")
    args = parser.parse_args()
    try:
        if args.show:
            print(render(args.root, args.show), end="")
            return 0
        if args.write:
            for path in write(args.root):
                print(f"rewrote {path.relative_to(args.root)}")
            problems = raw_problems(args.root)
        else:
            problems = check(args.root)
    except RenderError as e:
        print(f"render_docs: {e}", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"render_docs: {len(problems)} problem(s); after a benchmark wrote new files, run "
              "`.venv/bin/python benchmarks/render_docs.py --write`", file=sys.stderr)
        return 1
    if args.check:
        print(f"render_docs: every rendered table in {len(doc_paths(args.root))} docs matches its files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
