"""The share kind: share groups (KIP-932, Kafka's queues) under faults, judged by the share checker (every acknowledged
write accepted, every redelivery explained) with the lab's checkers for its producers and consumers."""

from __future__ import annotations

from typing import Any

from failsafe.faults import Need
from failsafe.scenarios.engine.actions import COMMON_ACTIONS
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.kinds.share.schema import parse_share
from failsafe.scenarios.kit.judging import history_judge, show_summary, write_history_report

CHECKERS = ("delivery", "semantics", "availability", "rebalance", "share")


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.share.workload import ShareWorkload

    return ShareWorkload(scenario)


KIND = register(
    ScenarioKind(
        name="share",
        summary="share groups (KIP-932, queues for Kafka): every acknowledged write accepted, every redelivery "
        "explained",
        parser=parse_share,
        workload=_workload,
        judge=history_judge(CHECKERS),
        show=show_summary,
        report=write_history_report,
        offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK, Need.CONSUMERS}),
        checkers=CHECKERS,
        actions=COMMON_ACTIONS,
    )
)
