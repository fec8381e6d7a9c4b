"""The share kind: share groups (KIP-932, Kafka's queues) under faults, judged by the share checker (every acknowledged
write accepted, every redelivery explained) with the lab's checkers for its producers and consumers."""

from __future__ import annotations

from typing import Any

from failsafe.faults import Need
from failsafe.scenarios.actions import COMMON_ACTIONS
from failsafe.scenarios.kinds.lab import show_summary, write_lab_report
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.kinds.share.schema import parse_share
from failsafe.scenarios.rundir import RunDir

CHECKERS = ("delivery", "semantics", "availability", "rebalance", "share")


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.share.workload import ShareWorkload

    return ShareWorkload(scenario)


def _judge(run_dir: RunDir, scenario: Any) -> tuple[dict, Any]:
    from failsafe.scenarios.check import judge_history_run

    return judge_history_run(run_dir, scenario, CHECKERS)


KIND = register(ScenarioKind(
    name="share",
    summary="share groups (KIP-932, queues for Kafka): every acknowledged write accepted, every redelivery explained",
    parser=parse_share, workload=_workload, judge=_judge, show=show_summary, report=write_lab_report,
    offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK, Need.CONSUMERS}),
    checkers=CHECKERS, actions=COMMON_ACTIONS,
))
