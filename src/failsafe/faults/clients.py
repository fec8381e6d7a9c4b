"""Faults on the workload's own processes: a consumer killed or closed, the Spark driver killed."""

from __future__ import annotations

from failsafe.faults.base import AppliedFault, FaultKind, FaultSpec, FaultTargets, Target


def kill_consumer(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """SIGKILL: the member never says goodbye, its group notices after session.timeout.ms. Nothing comes back."""
    assert spec.consumer is not None
    targets.clients.kill_client(spec.consumer)
    return AppliedFault(FaultKind.KILL_CONSUMER, Target.CONSUMER, [spec.consumer], "consumer")


def close_consumer(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """A clean close: the member leaves its group at once. Nothing comes back."""
    assert spec.consumer is not None
    targets.clients.close_client(spec.consumer)
    return AppliedFault(FaultKind.CLOSE_CONSUMER, Target.CONSUMER, [spec.consumer], "consumer")


DRIVER = "pipeline"


def kill_driver(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """SIGKILL of the driver's whole process group (its JVM too); the undo starts it again from its checkpoint."""
    targets.clients.kill_client(DRIVER)
    return AppliedFault(FaultKind.KILL_DRIVER, Target.PIPELINE, [DRIVER], "spark driver", lambda: targets.clients.restart_client(DRIVER))
