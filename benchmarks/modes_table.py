"""The side-by-side table of docs/zookeeper.md from benchmarks/modes.sh's statistics (docs/benchmarks/modes/).

    .venv/bin/python benchmarks/modes_table.py [--dir docs/benchmarks/modes]

Prints two markdown tables: broker and controller failover per mode (medians with min-max over
the runs), and the live migration's runs (wall time, worst partition unavailability, losses).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

MODES = (
    ("zookeeper-3.9.2", "ZooKeeper", "3.9.2", "controller-broker-failover", "`zookeeper.session.timeout.ms` 18000"),
    ("kraft-3.9.2", "KRaft (3 controllers)", "3.9.2", "controller-failover", "`broker.session.timeout.ms` 9000"),
    ("kraft-4.3.1", "KRaft (3 controllers)", "4.3.1", "controller-failover", "`broker.session.timeout.ms` 9000"),
)


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _time(stats: dict | None, name: str) -> str:
    spread = (stats or {}).get("times", {}).get(name)
    if not spread:
        return "not measured"
    return f"**{spread['median'] / 1000:.1f} s** ({spread['min'] / 1000:.1f}-{spread['max'] / 1000:.1f}, n={spread['n']})"


def _verdicts(*stats: dict | None) -> str:
    parts = []
    for s in stats:
        if s:
            parts.append(f"{s['runs']} runs: " + ", ".join(f"{n} {v}" for v, n in sorted(s["verdicts"].items())))
    return "; ".join(parts) or "-"


def _lost(*stats: dict | None) -> str:
    total = sum(((s or {}).get("anomalies", {}).get("delivery.lost", {}) or {}).get("total", 0) for s in stats)
    return str(total)


def failover_table(directory: Path) -> str:
    rows = ["| mode | Kafka | failure detection | broker kill -9: new leader | broker kill -9: longest unavailability | "
            "controller kill -9: new controller | verdicts | acknowledged writes lost |", "|---|---|---|---|---|---|---|---|"]
    for label, mode, version, controller_scenario, detection in MODES:
        broker = _load(directory / f"{label}-broker-failover.json")
        controller = _load(directory / f"{label}-{controller_scenario}.json")
        if broker is None and controller is None:
            continue
        rows.append(f"| {mode} | {version} | {detection} | {_time(broker, 'availability.median_new_leader_ms')} | "
                    f"{_time(broker, 'availability.max_unavailable_ms')} | {_time(controller, 'measurements.new_controller_ms')} | "
                    f"{_verdicts(broker, controller)} | {_lost(broker, controller)} |")
    return "\n".join(rows)


def migration_table(directory: Path) -> str:
    rows = ["| run | verdict | wall time of the migration | longest unavailability of a partition | acknowledged writes | lost | "
            "duplicates |", "|---|---|---|---|---|---|---|"]
    for path in sorted(directory.glob("migration-*.json")):
        results = json.loads(path.read_text())
        checkers = results.get("checkers", {})
        migration = results.get("measurements", {}).get("migration", {})
        counts = checkers.get("delivery", {}).get("counts", {})
        wall = migration.get("wall_ms")
        worst = checkers.get("availability", {}).get("max_unavailable_ms")
        rows.append(f"| {path.stem.split('-')[-1]} | {results.get('verdict', '?')}{'' if migration.get('completed') else ' (not completed)'} | "
                    f"{wall / 1000:.1f} s | {worst / 1000:.2f} s | {counts.get('acknowledged', '?'):,} | {counts.get('lost', '?')} | "
                    f"{counts.get('duplicate', '?')} |" if wall is not None and worst is not None else f"| {path.stem} | incomplete | | | | | |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("docs/benchmarks/modes"))
    args = parser.parse_args()
    print(failover_table(args.dir))
    print()
    print(migration_table(args.dir))


if __name__ == "__main__":
    main()
