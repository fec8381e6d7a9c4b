"""The interface between the engine and a workload plug-in (Jepsen's client/generator split).

The engine owns the phases, the fault schedule, the heal and the history; a workload owns its
clients. It is handed a ``RunContext``: bootstrap servers, the recorder, the run directory, the
supervisor that starts its processes, the engine's own waits (which keep the status line
fresh and notice a dead client), and the cluster profile's topic and client settings, never the
cluster object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from failsafe.history.recorder import Recorder
from failsafe.supervisor import Supervisor
from failsafe.workloads.client_defaults import ClientDefaults

Status = Callable[[str], None]


@dataclass(frozen=True)
class RunContext:
    bootstrap_servers: str
    kafka_version: str
    recorder: Recorder
    run_path: Path
    supervisor: Supervisor
    event: Status  # one line in the run's log of events
    wait: Callable[
        [Callable[[], object], float, str], None
    ]  # until the condition holds, or WaitTimeout with the message
    hold: Callable[[float], None]  # let the workload run for a duration the scenario asks for
    topology: Callable[[], list[dict]]  # the latest topology sample of the sampled topics
    # A DR run's clusters by alias (primary, backup) with their bootstrap servers; empty for one cluster.
    clusters: Mapping[str, str] = field(default_factory=dict)
    # The cluster profile's (cluster/profiles.py): configs of every topic the workload creates, under the scenario's
    # own, and settings of every client it starts, under the client's own (the worker pool applies them).
    topic_configs: Mapping[str, str] = field(default_factory=dict)
    client_defaults: ClientDefaults = field(default_factory=ClientDefaults)
    # A cluster on hosts (cluster/nodes/hosts.py client_host): (host name, Kafka version) to what a Java client needs to
    # run there; None: clients run only where failsafe runs.
    client_host: Callable[[str, str], dict] | None = None

    @property
    def logs_dir(self) -> Path:
        return self.run_path / "logs"


class Workload(Protocol):
    """A scenario kind's clients, driven through the engine's phases.

    setup      create the topics it needs, fresh, and whatever must exist before it starts
    start      start its clients and wait until they work (a first acknowledgement, a first batch)
    end_chaos  when the schedule is over: e.g. wait for a fixed-length writer to finish
    drain      stop the writers, wait until the readers reached the log end, record what is needed
    final_read read every partition it wrote back from its start (observe.read_log), once no writer writes: what
               every acknowledged write is judged by (checkers/durability.py); it may let its readers finish after it
    stop       stop everything it started; called whatever happened, more than once if need be
    tick       called on every step of every wait: raise WorkloadFailed for a client nobody killed
    """

    sampled_topics: list[str]

    def setup(self, ctx: RunContext) -> None: ...

    def start(self, ctx: RunContext) -> None: ...

    def end_chaos(self, ctx: RunContext) -> None: ...

    def drain(self, ctx: RunContext) -> None: ...

    def final_read(self, ctx: RunContext) -> None: ...

    def stop(self) -> None: ...

    def tick(self) -> None: ...

    def progress(self) -> str: ...

    # The targets of client faults (failsafe.faults.base.ClientTargets).
    def kill_client(self, name: str) -> None: ...

    def close_client(self, name: str) -> None: ...

    def restart_client(self, name: str) -> None: ...

    def process_of(self, name: str) -> str: ...

    def wait_settled(self, timeout_s: float) -> str: ...
