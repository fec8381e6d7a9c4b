"""Faults on the workload's own processes: a consumer killed or closed, the Spark driver or a Spark worker killed."""

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


def spark_worker_name(worker: int) -> str:
    return f"spark-worker-{worker}"


def kill_spark_worker(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """SIGKILL of standalone worker ``node`` (default 0) and its executors: a lost machine. The undo starts the worker again."""
    name = spark_worker_name(spec.node or 0)
    targets.clients.kill_client(name)
    return AppliedFault(FaultKind.KILL_SPARK_WORKER, Target.SPARK_WORKER, [name], "spark worker",
                        lambda: targets.clients.restart_client(name))
