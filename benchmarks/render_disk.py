"""The disk faults' tables in docs/disk-faults.md and docs/findings.md (render_docs.py renders and checks them)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, num, source, table

POWER_LOSS = "docs/benchmarks/power-loss.json"
POWER_KEPT = "docs/benchmarks/power-loss-kept.json"
POWER_ZK = "docs/benchmarks/power-loss-zookeeper.json"
DISK_THROUGHPUT = "docs/benchmarks/disk-throughput.json"
VARIANT_WORDS = {
    "default": "Kafka's default flush",
    "flush1": "flush.messages=1",
    "elr0": "default flush, without eligible leader replicas",
    "zookeeper": "ZooKeeper mode (Kafka 3.9.2, ZooKeeper 3.8.4), a new cluster per run",
}


# Where a scenario's default is about something other than the flush.
SCENARIO_WORDS = {
    ("last-replica-standing", "default"): "with eligible leader replicas (Kafka 4.3.1's default), default flush",
    ("last-replica-standing", "elr0"): "without them (eligible.leader.replicas.version=0), default flush",
}


def _words(scenario: str, variant: str) -> str:
    return SCENARIO_WORDS.get((scenario, variant), VARIANT_WORDS.get(variant, variant))


def _spread(cell: dict) -> str:
    if cell["lost_median"] is None:
        return "—"
    return f"{num(cell['lost_median'])} ({num(cell['lost_min'])}-{num(cell['lost_max'])})"


def t_power_loss(root: Path) -> str:
    cells = load(root, POWER_LOSS)["cells"] + load(root, POWER_KEPT)["cells"] + load(root, POWER_ZK)["cells"]
    rows = [
        [
            f"`{c['scenario']}`",
            _words(c["scenario"], c["variant"]),
            str(c["runs"]),
            f"{c['runs_losing_acknowledged']} of {c['runs']}",
            _spread(c),
            "—" if c["lost_fraction_median"] is None else f"{100 * c['lost_fraction_median']:.1f} %",
            ", ".join(map(str, c["exit_codes"]))
            + (f"; {c['runs_failed_to_carry_out']} not carried out" if c["runs_failed_to_carry_out"] else ""),
        ]
        for c in cells
    ]
    return table(
        [
            "scenario",
            "setting",
            "runs",
            "runs that lost acknowledged writes",
            "acknowledged writes lost per run, median (min-max)",
            "share of the acknowledged writes, median",
            "exit codes",
        ],
        rows,
    ) + source(root, POWER_LOSS, POWER_KEPT, POWER_ZK)


def t_disk_throughput(root: Path) -> str:
    d = load(root, DISK_THROUGHPUT)
    rows = []
    for r in d["rounds"]:
        rate = {(x["disks"], x["flush"]): x["records_per_s"] for x in r["runs"]}
        rows.append(
            [
                str(r["round"] + 1),
                *(
                    num(rate[k])
                    for k in (("plain", "default"), ("layers", "default"), ("plain", "flush1"), ("layers", "flush1"))
                ),
                f"{r['layers_over_plain']:.2f}",
                f"{r['flush1_over_default_plain']:.2f}",
                f"{r['flush1_over_default_layers']:.2f}",
            ]
        )
    m = d["medians"]
    rows.append(
        [
            "median",
            "",
            "",
            "",
            "",
            f"{m['layers_over_plain']:.2f}",
            f"{m['flush1_over_default_plain']:.2f}",
            f"{m['flush1_over_default_layers']:.2f}",
        ]
    )
    return table(
        [
            f"round ({num(d['records'])} records of {d['record_size']} B, acks=all, RF 3)",
            "plain disks, default flush, records/s",
            "disk layers, default flush",
            "plain, flush.messages=1",
            "layers, flush.messages=1",
            "layers / plain (default flush)",
            "flush.messages=1 / default (plain)",
            "flush.messages=1 / default (layers)",
        ],
        rows,
    ) + source(root, DISK_THROUGHPUT)


POWER_ELECTIONS = "docs/benchmarks/power-loss-elections.json"


def t_power_elections(root: Path) -> str:
    d = load(root, POWER_ELECTIONS)
    rows = []
    for variant, cell in d["cells"].items():
        lost = [r["lost"] for r in d["runs"] if r["variant"] == variant]
        rows.append(
            [
                _words("last-replica-standing", variant),
                str(cell["runs"]),
                ", ".join(f"{n} × {isr}" for isr, n in sorted(cell["isr_while_leaderless"].items())),
                str(cell["new_leader_lost_power"].get("True", 0)),
                str(cell["new_leader_lost_power"].get("False", 0)),
                f"{sum(1 for n in lost if n)} of {len(lost)}",
            ]
        )
    return table(
        [
            "last-replica-standing",
            "runs",
            "ISR while the partition had no leader (runs × ISR)",
            "elected: the broker that lost power",
            "elected: a follower that had shut down cleanly",
            "runs that lost acknowledged writes",
        ],
        rows,
    ) + source(root, POWER_ELECTIONS)


DISK_SEEN = "docs/benchmarks/disk-faults-seen.json"


def t_disk_faults_seen(root: Path) -> str:
    d = load(root, DISK_SEEN)

    def ms(value: float | None) -> str:
        return "—" if value is None else f"{value / 1000:.1f} s"

    rows = [
        [
            f"`{c['scenario']}`",
            str(c["runs"]),
            f"{c['runs_with_a_new_leader']} of {c['runs']}, after {ms(c['new_leader_ms_median'])}",
            ms(c["max_unavailable_ms_median"]),
            "—" if c["acknowledged_during_median"] is None else num(c["acknowledged_during_median"]),
            ", ".join(f"{k} {v}" for k, v in sorted(c["send_errors"].items())) or "none",
            f"{c['runs_with_log_dir_shutdown']} of {c['runs']}",
            str(c["lost_total"]),
        ]
        for c in d["cells"]
    ]
    return table(
        [
            "scenario",
            "runs",
            "partitions that got a new leader (median time)",
            "longest unavailability, median",
            "writes acknowledged during the fault, median",
            "send errors the producer was told (all runs)",
            'runs where a broker stopped itself: "all log dirs ... have failed"',
            "acknowledged writes lost (all runs)",
        ],
        rows,
    ) + source(root, DISK_SEEN)
