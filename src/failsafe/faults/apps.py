"""Faults on the instances of a user's application (the app kind: scenarios/kinds/app), by NAME-INDEX (``ctp-0``).

    kill-app        SIGKILL of the instance's whole process group: a crash mid-batch; the undo starts it again (an
                    orchestrator restarting a pod), as a new process NAME.N
    terminate-app   SIGTERM: the instance stops as its own shutdown hook says (a deploy's stop); the undo starts it
                    again
    pause-app       SIGSTOP of its process group for the fault's duration, then SIGCONT: a GC pause or a stalled host,
                    past max.poll.interval.ms or the group's session if the fault is longer
    restart-app     one step of a rolling restart: first waits (up to settled_within_s) until every app's group owns
                    all its input, as a deploy's readiness check does, then SIGTERM; the undo starts it again

A rolling restart is a schedule of restart-app faults, one instance after the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from failsafe.faults.base import AppliedFault, FaultContext, FaultSpec, FaultTargets, FaultType, Target
from failsafe.faults.clients import non_negative, rolling_step
from failsafe.faults.registry import register
from failsafe.history.ops import Family

KILL_APP = "kill-app"
TERMINATE_APP = "terminate-app"
PAUSE_APP = "pause-app"
RESTART_APP = "restart-app"
# What the app kind offers: its applications' instances, by NAME-INDEX.
APP_INSTANCES = "app-instances"


@dataclass(frozen=True)
class AppChoice:
    """The application's instance, as NAME-INDEX (``ctp-0``)."""

    app: str


@dataclass(frozen=True)
class AppRestartChoice(AppChoice):
    """The instance, and how long its restart first waits for every app's group to own all its input (and the kit's
    consumer groups to settle): 0 does not wait. The schedule waits with it; what was still unsettled when the time was
    up is named in the fault's details."""

    settled_within_s: float = field(default=30.0, metadata={"convert": non_negative})


def _check_app(params: AppChoice, ctx: FaultContext) -> None:
    ctx.require_client("app", params.app, APP_INSTANCES, "an instance of the scenario's [[apps]]")


def kill_app(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    name = spec.params.app
    process = targets.clients.process_of(name)
    targets.clients.kill_client(name)
    return AppliedFault(KILL_APP, Target.APP, [process], "app instance", lambda: targets.clients.restart_client(name))


def terminate_app(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    name = spec.params.app
    process = targets.clients.process_of(name)
    targets.clients.close_client(name)
    return AppliedFault(
        TERMINATE_APP, Target.APP, [process], "app instance", lambda: targets.clients.restart_client(name)
    )


def pause_app(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    name = spec.params.app
    process = targets.clients.process_of(name)
    targets.clients.pause_client(name)
    return AppliedFault(PAUSE_APP, Target.APP, [process], "app instance", lambda: targets.clients.resume_client(name))


def restart_app(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    return rolling_step(targets, spec.params.app, spec.params.settled_within_s, RESTART_APP, Target.APP)


for _name, _summary, _start, _undo in (
    (KILL_APP, "SIGKILL of an app instance's process group (a crash mid-batch)", kill_app, "started again"),
    (TERMINATE_APP, "SIGTERM of an app instance (its own shutdown)", terminate_app, "started again"),
    (PAUSE_APP, "an app instance frozen (SIGSTOP), as by a long GC pause", pause_app, "SIGCONT: it goes on"),
):
    register(
        FaultType(_name, Family.CLIENT, _summary, frozenset({APP_INSTANCES}), _start, _undo, AppChoice, _check_app)
    )
register(
    FaultType(
        RESTART_APP,
        Family.CLIENT,
        "a rolling restart's step: once the app's group owns all its input, SIGTERM of an instance",
        frozenset({APP_INSTANCES}),
        restart_app,
        "started again",
        AppRestartChoice,
        _check_app,
    )
)
