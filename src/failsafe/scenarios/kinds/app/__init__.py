"""The app kind: a user's application under faults, between failsafe's verifying producers and the final read of its
output, judged by the contract it declares (checkers/app/each.py)."""

from __future__ import annotations

from typing import Any

from failsafe.faults import Need
from failsafe.faults.apps import APP_INSTANCES
from failsafe.scenarios.engine.actions import COMMON_ACTIONS
from failsafe.scenarios.kinds.app.schema import parse_app
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.kit.judging import history_judge, write_history_report

# availability: the input's and the output's readers' liveness, and what each fault cost the input's producers.
CHECKERS = ("app", "availability")


def _show(*args: Any) -> None:
    from failsafe.scenarios.kinds.app.show import show_app

    show_app(*args)


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.app.workload import AppWorkload

    return AppWorkload(scenario)


KIND = register(
    ScenarioKind(
        name="app",
        summary="your application between failsafe's producers and readers, held to the contract it declares",
        parser=parse_app,
        workload=_workload,
        judge=history_judge(CHECKERS),
        show=_show,
        report=write_history_report,
        offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK, Need.CONSUMERS, APP_INSTANCES}),
        checkers=CHECKERS,
        actions=COMMON_ACTIONS,
    )
)
