"""Faults on the instances of a user's application (the app kind: scenarios/kinds/app), by NAME-INDEX (``ctp-0``).

    kill-app        SIGKILL of the instance's whole process group: a crash mid-batch; the undo starts it again (an
                    orchestrator restarting a pod), as a new process NAME.N
    terminate-app   SIGTERM: the instance stops as its own shutdown hook says (a deploy's stop); the undo starts it
                    again
    pause-app       SIGSTOP of its process group for the fault's duration, then SIGCONT: a GC pause or a stalled host,
                    past max.poll.interval.ms or the group's session if the fault is longer

A rolling restart is a schedule of terminate-app faults, one instance after the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from failsafe.faults.base import AppliedFault, FaultContext, FaultSpec, FaultTargets, FaultType, Target
from failsafe.faults.registry import register
from failsafe.history.ops import Family

KILL_APP = "kill-app"
TERMINATE_APP = "terminate-app"
PAUSE_APP = "pause-app"
# What the app kind offers: its applications' instances, by NAME-INDEX.
APP_INSTANCES = "app-instances"


@dataclass(frozen=True)
class AppChoice:
    """The application's instance, as NAME-INDEX (``ctp-0``)."""

    app: str


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


for _name, _summary, _start, _undo in (
    (KILL_APP, "SIGKILL of an app instance's process group (a crash mid-batch)", kill_app, "started again"),
    (TERMINATE_APP, "SIGTERM of an app instance (its own shutdown)", terminate_app, "started again"),
    (PAUSE_APP, "an app instance frozen (SIGSTOP), as by a long GC pause", pause_app, "SIGCONT: it goes on"),
):
    register(
        FaultType(_name, Family.CLIENT, _summary, frozenset({APP_INSTANCES}), _start, _undo, AppChoice, _check_app)
    )
