"""The txn kind: Kafka's transactions under faults, judged by the transactions checker (aborted reads, lost and torn
transactions, duplicates under exactly-once, cycles)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from failsafe.faults import Need
from failsafe.faults.transactions import TXN_CLIENTS
from failsafe.scenarios.actions import COMMON_ACTIONS
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.kinds.txn.schema import parse_txn
from failsafe.scenarios.rundir import RunDir

# availability: the readers' liveness (a reader that never caught up) and the faults' measured times.
CHECKERS = ("transactions", "availability")


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.txn.workload import TxnWorkload

    return TxnWorkload(scenario)


def _judge(run_dir: RunDir, scenario: Any) -> tuple[dict, Any]:
    from failsafe.scenarios.check import judge_history_run

    return judge_history_run(run_dir, scenario, CHECKERS)


def _show(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.reports.terminal import render_summary

    render_summary(console, results, history, run_dir=run_dir.path)


def _report(run_dir: RunDir, results: dict, history: Any) -> Path:
    from failsafe.reports.html import write_report

    return write_report(run_dir.path, results, history, run_dir.scenario_data(), run_dir.manifest())


KIND = register(ScenarioKind(
    name="txn",
    summary="transactional writers and consume-transform-produce processors, Kafka's exactly-once under faults",
    parser=parse_txn, workload=_workload, judge=_judge, show=_show, report=_report,
    offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK, Need.CONSUMERS, TXN_CLIENTS}),
    checkers=CHECKERS, actions=COMMON_ACTIONS,
))
