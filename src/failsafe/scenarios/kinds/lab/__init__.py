"""The lab kind: the kit's verifying producers and consumers on one cluster (scenarios/kit/), judged by the history's
checkers."""

from __future__ import annotations

from typing import Any

from failsafe.faults import Need
from failsafe.scenarios.engine.actions import COMMON_ACTIONS
from failsafe.scenarios.kinds.lab.schema import parse_lab
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.kit.judging import history_judge, show_summary, write_history_report

CHECKERS = ("delivery", "order", "semantics", "availability", "rebalance")


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.lab.workload import LabWorkload

    return LabWorkload(scenario)


KIND = register(
    ScenarioKind(
        name="lab",
        summary="verifying producers and consumers on one cluster, the seeds' experiments",
        parser=parse_lab,
        workload=_workload,
        judge=history_judge(CHECKERS),
        show=show_summary,
        report=write_history_report,
        offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK, Need.CONSUMERS}),
        checkers=CHECKERS,
        actions=COMMON_ACTIONS,
        default=True,
    )
)
