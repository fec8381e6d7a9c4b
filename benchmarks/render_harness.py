"""The harness's own costs in docs/benchmarks.md, docs/simulator.md and docs/console.md: a cluster's start, the
class-data sharing archive, the verifying producer against producer-perf-test, `failsafe check`, the simulator and the
console (render_docs.py renders and checks them)."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.render_base import load, num, secs, source, table


def t_cluster(root: Path) -> str:
    rel = "docs/benchmarks/cluster.json"
    d = load(root, rel)

    def row(what: str, key: str, unit: str, digits: int) -> list[str]:
        s = d[key]
        return [
            what,
            f"{num(s['median'], digits)} {unit}",
            f"{num(s['min'], digits)} {unit}",
            f"{num(s['max'], digits)} {unit}",
        ]

    rows = [
        row(
            "`failsafe up` of a new cluster to ready (config, storage format of every node, start, every broker "
            "registered and unfenced in every broker's metadata)",
            "create_to_ready_s",
            "s",
            1,
        ),
        row("`failsafe up` of a stopped cluster (no format) to ready", "restart_to_ready_s", "s", 1),
        row("resident memory per broker, right after ready", "broker_rss_mib", "MiB", 0),
        row("resident memory of the controller", "controller_rss_mib", "MiB", 0),
        row(
            "kill -9 of partition 0's leader to a new leader in the metadata (polled every 50 ms)",
            "kill_to_new_leader_s",
            "s",
            1,
        ),
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
        return [
            what,
            f"**{with_[key]:.1f} s**",
            f"{without[key]:.1f} s",
            f"{(with_[key] / without[key] - 1) * 100:+.0f} %",
        ]

    rows = [
        row("`failsafe up` of a new 3-broker cluster to ready", "up_s"),
        row("`failsafe broker start 1` after kill -9 and fencing, to registered", "broker_restart_s"),
    ]
    return table([f"median of {n} rounds", "with the archive", "without", ""], rows) + source(root, rel)


def t_producer(root: Path) -> str:
    rel = "docs/benchmarks/producer.json"
    d = load(root, rel)
    rows = [
        [
            str(i),
            f"{num(r['perf_test_records_per_s'])} rec/s",
            f"{num(r['failsafe_records_per_s'])} rec/s",
            f"{r['ratio']:.2f}",
        ]
        for i, r in enumerate(d["rounds"], 1)
    ]
    rows.append(["**median ratio**", "", "", f"**{d['median_ratio']:.2f}**"])
    return table(["round", "producer-perf-test", "failsafe (with history)", "ratio"], rows) + source(root, rel)


CHECK_STEPS = ("load", "delivery", "order", "semantics", "availability", "rebalance", "total")


def t_check(root: Path) -> str:
    rel = "docs/benchmarks/check.json"
    d = load(root, rel)
    h, cli, rec = d["history"], d["check_s"], d["recording"]
    copy, plain = d["from_copy_median"], d["from_json_median"]
    rows = [
        [
            f"**{step}**" if step == "total" else step,
            f"{copy['wall_s'][step]:.1f} s",
            f"{copy['cpu_s'][step]:.1f} s",
            f"{plain['wall_s'][step]:.1f} s",
            f"{plain['cpu_s'][step]:.1f} s",
        ]
        for step in CHECK_STEPS
    ]
    runs = len(d["from_copy"])
    header = [
        f"{num(h['ops'])} ops, {num(h['file_mb'] / 1000, 1)} GB "
        f"({'median of ' + str(runs) + ' runs' if runs > 1 else 'one run'})",
        "as the run left it (the recorder's copy): wall",
        "CPU",
        "without a copy (parses the JSON): wall",
        "CPU",
    ]
    with_copy, without = rec["with_copy"], rec["without_copy"]
    note = (
        "\n\n`failsafe check RUN_DIR` end to end (a process of its own: start-up, load, checkers, measurements, "
        f"explanations, summary): **{cli['first_median']:.1f} s** as the run left it "
        f"({', '.join(f'{x:.1f}' for x in cli['first'])}), {cli['without_copy_median']:.1f} s without a copy "
        f"({', '.join(f'{x:.1f}' for x in cli['without_copy'])}).\n\nWhat the copy cost the recording, fed at "
        f"{rec['rate_mb_s']:g} MB/s ({num(with_copy['ops_per_s'])} ops/s): "
        f"**{rec['copy_cpu_s_per_million_ops_while_recording']:.1f} CPU s per million ops** while recording, "
        f"{rec['copy_cpu_s_per_million_ops']:.1f} in all; its close took {with_copy['close_wall_s']:.1f} s "
        f"({without['close_wall_s']:.1f} s without the copy). 1-minute load average at the start: "
        f"{d['load_average_1m']['start']}, at the checks: {d['load_average_1m']['checks']}; polars {d['polars']}, "
        f"{d['threads']} threads."
    )
    return table(header, rows) + note + source(root, rel)


def _sim_row(d: dict) -> list[str]:
    ratios = [r["ratio"] for r in d["rounds"]]
    same = [r["ratio_same_batching"] for r in d["rounds"]]
    return [
        str(d["instances"]),
        str(len(d["rounds"])),
        f"{num(d['median_perf_test_records_per_s'])}/s",
        f"{num(d['median_simulator_records_per_s'])}/s",
        f"**{d['median_ratio']:.2f}** ({min(ratios):.2f}-{max(ratios):.2f})",
        f"{d['median_ratio_same_batching']:.2f} ({min(same):.2f}-{max(same):.2f})",
    ]


def t_simulator(root: Path) -> str:
    rels = ("docs/benchmarks/simulator.json", "docs/benchmarks/simulator-2-instances.json")
    rows = [_sim_row(load(root, rel)) for rel in rels]
    header = [
        "instances",
        "rounds",
        "producer-perf-test (median)",
        "simulator (median)",
        "ratio (median, range)",
        "ratio against perf-test with the simulator's batching",
    ]
    return table(header, rows) + source(root, *rels)


def t_simulator_rounds(root: Path) -> str:
    rel = "docs/benchmarks/simulator.json"
    d = load(root, rel)
    rows = [
        [
            str(i),
            f"{num(r['perf_test_records_per_s'])} rec/s",
            f"{num(r['perf_test_same_batching_records_per_s'])} rec/s",
            f"{num(r['simulator_records_per_s'])} rec/s",
            f"{r['ratio']:.2f}",
            f"{r['ratio_same_batching']:.2f}",
        ]
        for i, r in enumerate(d["rounds"], 1)
    ]
    rows.append(
        [
            "**median**",
            f"{num(d['median_perf_test_records_per_s'])} rec/s",
            "",
            f"{num(d['median_simulator_records_per_s'])} rec/s",
            f"**{d['median_ratio']:.2f}**",
            f"**{d['median_ratio_same_batching']:.2f}**",
        ]
    )
    header = [
        "round",
        "perf-test (Java defaults)",
        "perf-test (simulator's batching)",
        "simulator",
        "ratio to perf-test",
        "ratio, same batching",
    ]
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
        [
            "metadata has a new leader -> the page shows it",
            f"**{m2p['median']} ms** median, {m2p['min']} to {m2p['max']} ms "
            f"({len(rounds)} rounds; probe every {d['probe_interval_ms']:.0f} ms)",
        ],
        [
            "kill -9 of the leader -> the page shows a new leader",
            f"{secs(statistics.median(k2p))} median ({min(k2p) / 1000:.1f}-{max(k2p) / 1000:.1f} s), "
            f"of which kill -> metadata {min(k2m) / 1000:.1f}-{max(k2m) / 1000:.1f} s",
        ],
        [
            f"console CPU while idle, {d['idle_s']:.0f} s",
            ", ".join(f"{v:.2f} % ({k})" for k, v in idle.items()) + " of one core",
        ],
    ]
    return table(
        [f"{d['cluster']['brokers']} brokers, Kafka {d['cluster']['kafka_version']}", "result"], rows
    ) + source(root, rel)
