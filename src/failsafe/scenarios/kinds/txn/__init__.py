"""The txn kind: Kafka's transactions under faults, judged by the transactions checker (aborted reads, lost and torn
transactions, duplicates under exactly-once, cycles)."""

from __future__ import annotations

from typing import Any

from failsafe.faults import Need
from failsafe.faults.transactions import TXN_CLIENTS
from failsafe.scenarios.engine.actions import COMMON_ACTIONS
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.kinds.txn.schema import parse_txn
from failsafe.scenarios.kit.judging import history_judge, show_summary, write_history_report

# availability: the readers' liveness (a reader that never caught up) and the faults' measured times.
CHECKERS = ("transactions", "availability")


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.txn.workload import TxnWorkload

    return TxnWorkload(scenario)


KIND = register(
    ScenarioKind(
        name="txn",
        summary="transactional writers and consume-transform-produce processors, Kafka's exactly-once under faults",
        parser=parse_txn,
        workload=_workload,
        judge=history_judge(CHECKERS),
        show=show_summary,
        report=write_history_report,
        offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK, Need.CONSUMERS, TXN_CLIENTS}),
        checkers=CHECKERS,
        actions=COMMON_ACTIONS,
    )
)
