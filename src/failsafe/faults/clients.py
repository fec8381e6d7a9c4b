"""Faults on the workload's own processes: a consumer killed, closed, restarted or frozen, the Spark driver or a Spark
worker killed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from failsafe.faults.base import AppliedFault, FaultContext, FaultSpec, FaultTargets, FaultType, Need, Target
from failsafe.faults.registry import register
from failsafe.history.ops import PAUSE_CONSUMER, RESTART_CONSUMER, Family

KILL_CONSUMER = "kill-consumer"
CLOSE_CONSUMER = "close-consumer"
KILL_DRIVER = "kill-driver"
KILL_SPARK_WORKER = "kill-spark-worker"
# The Spark driver's process name: what kill-driver asks the workload to kill and restart.
DRIVER = "pipeline"


@dataclass(frozen=True)
class ConsumerChoice:
    """The consumer, as NAME-INDEX of the scenario's consumers (``member-0``)."""

    consumer: str


def _check_consumer(params: ConsumerChoice, ctx: FaultContext) -> None:
    ctx.require_client("consumer", params.consumer, Need.CONSUMERS, "a consumer")


def non_negative(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError("must be a number of seconds, 0 or more")
    return float(value)


@dataclass(frozen=True)
class RestartChoice(ConsumerChoice):
    """The consumer, and how long its restart first waits for the consumer groups to settle (every partition owned,
    every member some where there are enough partitions): a deploy's readiness check before the next member goes. 0: it
    does not wait. The schedule waits with it; a group still unsettled when the time is up is named in the fault's
    details."""

    settled_within_s: float = field(default=0.0, metadata={"convert": non_negative})


def kill_consumer(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """SIGKILL: the member never says goodbye, its group notices after session.timeout.ms. Nothing comes back."""
    process = targets.clients.process_of(spec.params.consumer)
    targets.clients.kill_client(spec.params.consumer)
    return AppliedFault(KILL_CONSUMER, Target.CONSUMER, [process], "consumer")


def close_consumer(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """A clean close: the member leaves its group at once. Nothing comes back."""
    process = targets.clients.process_of(spec.params.consumer)
    targets.clients.close_client(spec.params.consumer)
    return AppliedFault(CLOSE_CONSUMER, Target.CONSUMER, [process], "consumer")


def restart_consumer(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """A clean close, then the same member started again when the fault ends (duration_s): it leaves its group at once
    and joins it again, as one step of a rolling restart. The rebalance checker measures the leave and the join
    apart."""
    return rolling_step(targets, spec.params.consumer, spec.params.settled_within_s, RESTART_CONSUMER, Target.CONSUMER)


def rolling_step(targets: FaultTargets, name: str, settled_within_s: float, fault: str, target: Target) -> AppliedFault:
    """One step of a rolling restart of the client ``name``: first waits up to ``settled_within_s`` (0: not at all)
    until the groups are settled, then closes it; the undo starts it again. What was still unsettled is in the
    fault's details."""
    unsettled = targets.clients.wait_settled(settled_within_s) if settled_within_s else ""
    acted_ns = time.time_ns()
    process = targets.clients.process_of(name)
    targets.clients.close_client(name)
    return AppliedFault(
        fault,
        target,
        [process],
        "consumer" if target == Target.CONSUMER else "app instance",
        lambda: targets.clients.restart_client(name),
        details={"unsettled": unsettled} if unsettled else {},
        acted_ns=acted_ns,
    )


def pause_consumer(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """SIGSTOP for the fault's duration, then SIGCONT: a member frozen (a GC pause, a stalled host) that keeps its
    connections open. A classic member frozen past session.timeout.ms, or a KIP-848 one past the group's session, is
    expelled; a share group's member keeps its records until their acquisition lock runs out."""
    name = spec.params.consumer
    process = targets.clients.process_of(name)
    targets.clients.pause_client(name)
    return AppliedFault(
        PAUSE_CONSUMER, Target.CONSUMER, [process], "consumer", lambda: targets.clients.resume_client(name)
    )


# kill-driver's moments: at the fault's time, or into the next micro-batch's publishing job after it.
NOW = "now"
PUBLISHING = "publishing"
PUBLISHING_TIMEOUT_S = 120.0  # how long kill-driver waits for a batch to start publishing


def _moment(value: object) -> str:
    if value not in (NOW, PUBLISHING):
        raise ValueError(f'must be "{NOW}" or "{PUBLISHING}"')
    return str(value)


def _delay_ms(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 60_000:
        raise ValueError("must be a number of milliseconds from 0 to 60000")
    return float(value)


@dataclass(frozen=True)
class DriverMoment:
    """When the driver dies: ``"now"`` (at the fault's time), or ``"publishing"``: ``delay_ms`` after the next
    micro-batch with totals started its publishing job, so that the kill lands while the batch's output is being
    written to Kafka (some tasks done, others not) and before Spark commits the batch."""

    when: str = field(default=NOW, metadata={"convert": _moment})
    delay_ms: float = field(default=300.0, metadata={"convert": _delay_ms})


def kill_driver(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """SIGKILL of the driver's whole process group (its JVM too); the undo starts it again from its checkpoint."""
    details = {}
    if spec.params.when == PUBLISHING:
        details["publishing"] = targets.clients.wait_publishing(spec.params.delay_ms / 1000, PUBLISHING_TIMEOUT_S)
    acted_ns = time.time_ns()
    targets.clients.kill_client(DRIVER)
    return AppliedFault(
        KILL_DRIVER,
        Target.PIPELINE,
        [DRIVER],
        "spark driver",
        lambda: targets.clients.restart_client(DRIVER),
        details=details,
        acted_ns=acted_ns,
    )


def spark_worker_name(worker: int | str) -> str:
    return f"spark-worker-{worker}"


# The worker whose executor holds the most state partitions of the sales query when the fault starts.
HOLDING_STATE = "holding-state"


def _worker_node(value: object) -> int | str:
    if value == HOLDING_STATE:
        return HOLDING_STATE
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f'must be a worker\'s index (0, 1, ...) or "{HOLDING_STATE}"')
    return value


@dataclass(frozen=True)
class WorkerChoice:
    """The Spark worker by index (0 first), or ``"holding-state"``: the one whose executor holds the most state
    partitions of the sales query when the fault starts (the workload resolves it)."""

    node: int | str = field(default=0, metadata={"convert": _worker_node})


def _check_worker(params: WorkerChoice, ctx: FaultContext) -> None:
    workers = ctx.clients.get(Need.SPARK_WORKERS, ())
    if not workers:
        hint = ctx.hints.get(Need.SPARK_WORKERS)
        raise ctx.fail(
            "fault", "kill-spark-worker needs a Spark cluster of the run's own" + (f": {hint}" if hint else "")
        )
    if params.node != HOLDING_STATE and spark_worker_name(params.node) not in workers:
        raise ctx.fail("node", f"{params.node} is not a worker of the run's Spark cluster (0-{len(workers) - 1})")


def kill_spark_worker(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """SIGKILL of standalone worker ``node`` (default 0) and its executors: a lost machine. The undo starts the worker
    again."""
    name = spark_worker_name(spec.params.node)
    targets.clients.kill_client(name)
    return AppliedFault(
        KILL_SPARK_WORKER, Target.SPARK_WORKER, [name], "spark worker", lambda: targets.clients.restart_client(name)
    )


register(
    FaultType(
        KILL_CONSUMER,
        Family.CLIENT,
        "SIGKILL of a consumer: a crash, its group must rebalance",
        frozenset({Need.CONSUMERS}),
        kill_consumer,
        "none: the consumer stays down",
        ConsumerChoice,
        _check_consumer,
    )
)
register(
    FaultType(
        CLOSE_CONSUMER,
        Family.CLIENT,
        "a consumer closes and leaves its group",
        frozenset({Need.CONSUMERS}),
        close_consumer,
        "none: the consumer stays down",
        ConsumerChoice,
        _check_consumer,
    )
)
register(
    FaultType(
        RESTART_CONSUMER,
        Family.CLIENT,
        "a consumer closes, leaves its group and joins it again after duration_s",
        frozenset({Need.CONSUMERS}),
        restart_consumer,
        "the consumer started again: it joins its group",
        RestartChoice,
        _check_consumer,
    )
)
register(
    FaultType(
        PAUSE_CONSUMER,
        Family.CLIENT,
        "SIGSTOP of a consumer for duration_s, then SIGCONT",
        frozenset({Need.CONSUMERS}),
        pause_consumer,
        "SIGCONT: the consumer goes on",
        ConsumerChoice,
        _check_consumer,
    )
)
register(
    FaultType(
        KILL_DRIVER,
        Family.CLIENT,
        "SIGKILL of the Spark driver's process group",
        frozenset({Need.SPARK_DRIVER}),
        kill_driver,
        "the driver started again from its checkpoint",
        DriverMoment,
    )
)
register(
    FaultType(
        KILL_SPARK_WORKER,
        Family.CLIENT,
        "SIGKILL of a standalone Spark worker's group, its executors too",
        frozenset({Need.SPARK_WORKERS}),
        kill_spark_worker,
        "the worker started again",
        WorkerChoice,
        _check_worker,
    )
)
