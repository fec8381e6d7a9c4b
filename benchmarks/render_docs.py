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
    dr_ms,
    dr_records,
    load,
    num,
    raw_index,
    secs,
    source,
    spread_s,
    table,
)
from benchmarks.render_campaigns import t_campaign_anomalies, t_campaign_shrinks, t_campaign_unavailability, t_campaigns  # noqa: E402
from benchmarks.render_findings import (  # noqa: E402
    t_findings_cold,
    t_findings_decommissioned,
    t_findings_dr_flush,
    t_findings_duplicates,
    t_findings_no_broker,
    t_findings_stalls,
    t_findings_stalls_other,
    t_findings_txn_fence,
    t_findings_txn_hang,
    t_findings_where,
    t_findings_zookeeper,
)
from benchmarks.render_network import (  # noqa: E402
    t_network_faults,
    t_network_leader_isolated,
    t_network_unclean,
    t_network_zone,
)
from benchmarks.render_pipeline import (  # noqa: E402
    t_pipeline_backlog,
    t_pipeline_live,
    t_pipeline_live_pair,
    t_pipeline_partitions,
    t_pipeline_profile,
    t_pipeline_profile_before,
    t_pipeline_scale,
    t_pipeline_sink_duplicates,
    t_pipeline_speed,
    t_pipeline_state,
    t_pipeline_state_store,
    t_pipeline_sustained,
    t_pipeline_sustained_driver_state,
    t_pipeline_sustained_two_queries,
    t_pipeline_targets,
    t_realtime,
)
from benchmarks.render_rebalance import (  # noqa: E402
    t_rebalance_protocols,
    t_rebalance_protocols_30,
    t_share_redelivery,
    t_share_redelivery_java,
    t_share_throughput,
)
from benchmarks.render_transactions import (  # noqa: E402
    t_transactions_campaigns,
    t_transactions_epochs,
    t_transactions_failover,
    t_transactions_throughput,
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


def t_dr(root: Path) -> str:
    cols = [(load(root, rel), what) for rel, what in DR_FILES]
    header = ["per run: median (range)", *(f"{what} ({d['runs']} runs)" for d, what in cols)]
    rows = [
        ["verdicts", *(", ".join(f"{n} {v}" for v, n in sorted(d["verdicts"].items())) for d, _ in cols)],
        ["RPO, records (acknowledged, never mirrored)",
         *(dr_records(d["times"].get("dr.rpo-records (records)"), d["runs"]) +
           (f"; in {d['anomalies']['dr.rpo-records']['runs']} run(s), {d['anomalies']['dr.rpo-records']['total']} in all"
            if "dr.rpo-records" in d["anomalies"] else "") for d, _ in cols)],
        ["RPO, seconds of data", *(dr_records(d["times"].get("dr.rpo_ms"), d["runs"]) for d, _ in cols)],
        ["RTO, first read on the target", *(dr_ms(d["times"]["dr.rto_first_read_ms"]) for d, _ in cols)],
        ["RTO, group caught up", *(dr_ms(d["times"]["dr.rto_caught_up_ms"]) for d, _ in cols)],
        ["records read twice after the move", *(dr_records(d["times"].get("dr.consumed-twice (records)"), d["runs"]) for d, _ in cols)],
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
    "pipeline-live-pair": t_pipeline_live_pair,
    "pipeline-sustained": t_pipeline_sustained,
    "pipeline-sustained-two-queries": t_pipeline_sustained_two_queries,
    "pipeline-sustained-driver-state": t_pipeline_sustained_driver_state,
    "pipeline-state": t_pipeline_state,
    "pipeline-state-store": t_pipeline_state_store,
    "pipeline-speed": t_pipeline_speed,
    "pipeline-profile": t_pipeline_profile,
    "pipeline-profile-before": t_pipeline_profile_before,
    "pipeline-partitions": t_pipeline_partitions,
    "pipeline-scale": t_pipeline_scale,
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
    "findings-txn-hang": t_findings_txn_hang,
    "findings-txn-fence": t_findings_txn_fence,
    "findings-duplicates": t_findings_duplicates,
    "findings-stalls": t_findings_stalls,
    "findings-stalls-other": t_findings_stalls_other,
    "findings-zookeeper": t_findings_zookeeper,
    "campaigns": t_campaigns,
    "campaign-anomalies": t_campaign_anomalies,
    "campaign-unavailability": t_campaign_unavailability,
    "campaign-shrinks": t_campaign_shrinks,
    "transactions-throughput": t_transactions_throughput,
    "transactions-epochs": t_transactions_epochs,
    "transactions-failover": t_transactions_failover,
    "transactions-campaigns": t_transactions_campaigns,
    "pipeline-sink-duplicates": t_pipeline_sink_duplicates,
    "rebalance-protocols": t_rebalance_protocols,
    "rebalance-protocols-30": t_rebalance_protocols_30,
    "share-redelivery": t_share_redelivery,
    "share-redelivery-java": t_share_redelivery_java,
    "share-throughput": t_share_throughput,
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
