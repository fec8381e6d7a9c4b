"""Render the tables of docs/ from the stored raw files, and check that the docs still hold them.

    .venv/bin/python benchmarks/render_docs.py --check   # exit 1, with a diff, when a doc differs from what its \
        files render
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
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.render_apps import t_app_cells, t_app_findings, t_app_naive_phase, t_app_overhead  # noqa: E402
from benchmarks.render_atlas import t_atlas_cells, t_atlas_fit, t_atlas_unavailability  # noqa: E402
from benchmarks.render_base import RAW, RenderError, load, num, raw_index, secs, table  # noqa: E402
from benchmarks.render_campaigns import t_campaign_anomalies, t_campaign_shrinks, t_campaign_unavailability, t_campaigns  # noqa: E402
from benchmarks.render_clock import t_clock_probe, t_clock_retention, t_clock_runs  # noqa: E402
from benchmarks.render_disk import t_disk_faults_seen, t_disk_throughput, t_power_elections, t_power_loss  # noqa: E402
from benchmarks.render_failover import (  # noqa: E402
    SEEDLAB_REL,
    t_dr,
    t_failover,
    t_migration_clients,
    t_modes_failover,
    t_modes_migration,
    t_seed_lab,
    t_seed_lab_scenarios,
)
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
from benchmarks.render_harness import (  # noqa: E402
    t_cds,
    t_check,
    t_cluster,
    t_console,
    t_producer,
    t_simulator,
    t_simulator_rounds,
)
from benchmarks.render_hosts import t_hosts  # noqa: E402
from benchmarks.render_kafka_versions import t_kafka_config_diff  # noqa: E402
from benchmarks.render_lifecycle import (  # noqa: E402
    t_cluster_versions,
    t_compare,
    t_lifecycle_flips,
    t_lifecycle_flips_group,
    t_lifecycle_quorum,
    t_lifecycle_reassign,
    t_lifecycle_reassign_control,
    t_lifecycle_rollback,
    t_lifecycle_upgrade,
    t_lifecycle_upgrade39,
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
from benchmarks.render_profiles import t_profiles_failover, t_profiles_price  # noqa: E402
from benchmarks.render_protocol import t_protocol_runs, t_proxy, t_txn_gap  # noqa: E402
from benchmarks.render_publish import (  # noqa: E402
    t_pipeline_cpu_placement,
    t_pipeline_publish_cost,
    t_pipeline_publish_modes,
    t_pipeline_publish_modes_kept,
    t_pipeline_publish_profile,
    t_pipeline_publish_sustained,
    t_pipeline_publish_timed_kill,
    t_pipeline_targets_before_after,
)
from benchmarks.render_rebalance import (  # noqa: E402
    t_rebalance_protocols,
    t_rebalance_protocols_30,
    t_rebalance_protocols_900,
    t_share_redelivery,
    t_share_redelivery_java,
    t_share_throughput,
)
from benchmarks.render_security import (  # noqa: E402
    t_security_failover,
    t_security_isolation,
    t_security_modes,
    t_security_producer,
    t_security_runs,
)
from benchmarks.render_soundness import t_bad_input_sweep, t_cold_catalog, t_soundness  # noqa: E402
from benchmarks.render_storage import t_corruption, t_slow_disk  # noqa: E402
from benchmarks.render_tiered import t_tiered  # noqa: E402
from benchmarks.render_transactions import (  # noqa: E402
    t_transactions_campaigns,
    t_transactions_epochs,
    t_transactions_failover,
    t_transactions_throughput,
)

BLOCK = re.compile(r"<!-- rendered: (?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)<!-- /rendered -->", re.DOTALL)


# -- the tables over all the raw files (the others live in the render_*.py modules by topic) -----


def t_raw_files(root: Path) -> str:
    rows, index = [], raw_index(root)
    for raw in RAW:
        matched = [p.relative_to(root).as_posix() for p, entries in index.items() if raw in entries]
        files = (
            ", ".join(f"`{m}`" for m in matched)
            if len(matched) <= 3
            else ", ".join(f"`{g}`" for g in raw.globs) + f" ({len(matched)} files)"
        )
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
        [
            "verifying producer with history recording, against `producer-perf-test` (100-byte records, "
            "acks=all, alternating rounds)",
            f"**{producer['median_ratio']:.2f}** of it (median of {len(ratios)} rounds: "
            + ", ".join(f"{r:.2f}" for r in ratios)
            + ")",
            f"≥ 0.8: {met(producer['median_ratio'] >= 0.8)}",
            "`producer.json`",
        ],
        [
            f"`failsafe check` on {num(check['history']['ops'] / 1e6, 0)} million ops, first check of the run (reads "
            "the columnar copy its recorder made), end to end",
            f"**{first:.1f} s**",
            f"≤ 10 s: {met(first <= 10)}",
            "`check.json`",
        ],
        [
            "the same history without a copy (parses the JSON: an old, edited or hand-written history)",
            f"**{plain:.1f} s**",
            "measured",
            "`check.json`",
        ],
        [
            "what making the copy costs the recording",
            f"**{copy_cost:.1f} CPU s per million ops**",
            "measured",
            "`check.json`",
        ],
        [
            "`failsafe up` of a new 3-broker cluster to ready",
            f"**{up:.1f} s** (median of {len(cluster['runs'])}); "
            f"{up_cds:.1f} s with the class-data sharing archive in the alternating rounds of `cds.json`",
            f"≤ 20 s: {met(up <= 20)}",
            "`cluster.json`, `cds.json`",
        ],
        [
            "wall time of `make demo` without its set-up (`failsafe run seed-lab` on a fresh cluster, its "
            "start and stop included)",
            f"**{statistics.median(lab_walls):.0f} s** ({len(lab_walls)} "
            f"run{'s' if len(lab_walls) > 1 else ''}; scenarios: "
            + ", ".join(f"{n} {v}" for v, n in sorted(lab_verdicts.items()))
            + ")",
            f"≤ 5 min: {met(statistics.median(lab_walls) <= 300)}",
            "`seed-lab.json`",
        ],
        [
            f"broker-failover under Kafka's defaults, median of {len(windows)} runs",
            f"unavailability window **{secs(statistics.median(windows))}**, new leader "
            f"**{secs(statistics.median(leaders))}**",
            "measured",
            "`failover.json`",
        ],
    ]
    return table(["what", "measured", "target", "raw file (docs/benchmarks/)"], rows)


# -- every table, by the name a doc places it under ----------------------------------------------

TABLES: dict[str, Callable[[Path], str]] = {
    "raw-files": t_raw_files,
    "summary": t_summary,
    "cluster": t_cluster,
    "cds": t_cds,
    "producer": t_producer,
    "protocol-proxy": t_proxy,
    "protocol-runs": t_protocol_runs,
    "txn-gap": t_txn_gap,
    "clock-probe": t_clock_probe,
    "clock-runs": t_clock_runs,
    "security-modes": t_security_modes,
    "security-failover": t_security_failover,
    "security-isolation": t_security_isolation,
    "security-runs": t_security_runs,
    "security-producer": t_security_producer,
    "clock-retention": t_clock_retention,
    "corruption": t_corruption,
    "slow-disk": t_slow_disk,
    "tiered-storage": t_tiered,
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
    "pipeline-publish-modes": t_pipeline_publish_modes,
    "pipeline-publish-modes-kept": t_pipeline_publish_modes_kept,
    "pipeline-publish-cost": t_pipeline_publish_cost,
    "pipeline-publish-sustained": t_pipeline_publish_sustained,
    "pipeline-publish-profile": t_pipeline_publish_profile,
    "pipeline-publish-timed-kill": t_pipeline_publish_timed_kill,
    "pipeline-cpu-placement": t_pipeline_cpu_placement,
    "pipeline-targets-before-after": t_pipeline_targets_before_after,
    "rebalance-protocols": t_rebalance_protocols,
    "rebalance-protocols-30": t_rebalance_protocols_30,
    "rebalance-protocols-900": t_rebalance_protocols_900,
    "share-redelivery": t_share_redelivery,
    "share-redelivery-java": t_share_redelivery_java,
    "share-throughput": t_share_throughput,
    "power-loss": t_power_loss,
    "disk-throughput": t_disk_throughput,
    "power-loss-elections": t_power_elections,
    "disk-faults-seen": t_disk_faults_seen,
    "atlas-cells": t_atlas_cells,
    "atlas-fit": t_atlas_fit,
    "atlas-unavailability": t_atlas_unavailability,
    "hosts": t_hosts,
    "profiles-failover": t_profiles_failover,
    "profiles-price": t_profiles_price,
    "soundness": t_soundness,
    "bad-input-sweep": t_bad_input_sweep,
    "cold-catalog": t_cold_catalog,
    "app-findings": t_app_findings,
    "app-naive-phase": t_app_naive_phase,
    "app-cells": t_app_cells,
    "app-overhead": t_app_overhead,
    "lifecycle-upgrade": t_lifecycle_upgrade,
    "lifecycle-rollback": t_lifecycle_rollback,
    "compare-kafka": t_compare,
    "lifecycle-quorum": t_lifecycle_quorum,
    "kafka-config-diff": t_kafka_config_diff,
    "cluster-versions": t_cluster_versions,
    "lifecycle-flips": t_lifecycle_flips,
    "lifecycle-reassign": t_lifecycle_reassign,
    "lifecycle-upgrade39": t_lifecycle_upgrade39,
    "lifecycle-flips-group": t_lifecycle_flips_group,
    "lifecycle-reassign-control": t_lifecycle_reassign_control,
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
            problems.append(
                f"{rel}: {'no entry' if not entries else f'{len(entries)} entries'} in RAW "
                "(benchmarks/render_base.py): say which command makes it"
            )
    for raw in RAW:
        if not any(raw in entries for entries in index.values()):
            problems.append(f"RAW entry {', '.join(raw.globs)}: matches no file")
    commands = make_bench_commands(root)
    for raw in RAW:
        if raw.make_bench and raw.command not in commands:
            problems.append(
                f"RAW entry {', '.join(raw.globs)}: marked as run by `make bench`, but its command is not in the "
                f"Makefile's bench recipe: {raw.command}"
            )
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
            diff = difflib.unified_diff(
                text.splitlines(), new.splitlines(), f"{where} (as written)", f"{where} (as rendered)", lineterm="", n=1
            )
            problems.append("\n".join(diff))
    for name in sorted(set(TABLES) - used):
        problems.append(
            f"table {name}: placed in no doc (add <!-- rendered: {name} --> ... <!-- /rendered --> where it belongs)"
        )
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
        print(
            f"render_docs: {len(problems)} problem(s); after a benchmark wrote new files, run "
            "`.venv/bin/python benchmarks/render_docs.py --write`",
            file=sys.stderr,
        )
        return 1
    if args.check:
        print(f"render_docs: every rendered table in {len(doc_paths(args.root))} docs matches its files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
