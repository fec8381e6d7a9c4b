"""The app kind's workload: the kit's producers write the app's input and its consumers may read its output; the app's
instances run as children of the run's supervisor, each in its own process group, with what failsafe tells them in
their environment (schema.py).

setup: the kit's topics and groups, the apps' groups deleted too (an earlier run's offsets would skip input), and so
are the internal topics Kafka Streams names after an app's group (``GROUP-*-changelog``, ``GROUP-*-repartition``: an
earlier run's state would be restored into this one); Kafka Streams' jars resolved when a command asks for them. start:
every instance, until each app is ready; then the kit's consumers and producers. drain: producers stopped, then until
each app's group has committed its input up to the log end (``drained`` false if not within drain_timeout_s), the apps
stopped (SIGTERM), then the kit's consumers as in the lab. final_read: every partition of every topic, input and output,
at read_committed. Client faults on an instance (faults/apps.py) act on its process group; a start after a kill or a
stop is a new process, NAME.N, with the same FAILSAFE_TRANSACTIONAL_ID. An app with a ``host`` runs its instances
there over SSH (on_host.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from failsafe.errors import UserError
from failsafe.faults import FaultError
from failsafe.history.ops import Op, event
from failsafe.scenarios.engine.plugin import RunContext
from failsafe.scenarios.kinds.app.on_host import AppHost, RemoteApp
from failsafe.scenarios.kinds.app.schema import READY_GROUP, App, AppScenario
from failsafe.scenarios.kit.workload import ClientsWorkload, where_on_host
from failsafe.supervisor import Child, run_to_end
from failsafe.tools.admin import log_end_offsets
from failsafe.waiting import WaitTimeout

PYTHON = "{python}"
JAVA = "{java}"
STREAMS_CLASSPATH = "{streams_classpath}"
STREAMS_INTERNAL = ("-changelog", "-repartition")
GROUP_PROBE_INTERVAL_S = 1.0
GROUP_PROBE_TIMEOUT_S = 30.0
# How many times an instance's restart policy starts it again: an app that cannot start is not started forever.
MAX_RESTARTS = 10


@dataclass
class Instance:
    app: App
    index: int
    child: Child | RemoteApp
    process: str
    frozen: bool = False
    exit_recorded: bool = False


class AppWorkload(ClientsWorkload):
    scenario: AppScenario

    def __init__(self, scenario: AppScenario) -> None:
        super().__init__(scenario)
        self.instances: dict[str, Instance] = {}  # by NAME-INDEX, the current incarnation
        self._ctx: RunContext | None = None
        self._groups: dict[str, tuple[float, dict | None]] = {}  # the last answer about each group, and when
        self._words: dict[str, str] = {PYTHON: sys.executable}  # what each {placeholder} of a command stands for
        self._hosts: dict[str, AppHost] = {}  # by app name: the apps that run on a host

    # -- phases ---------------------------------------------------------------------------------
    def groups(self) -> list[str]:
        """The kit's groups and the apps': an earlier run's committed offsets would make an app skip input."""
        return sorted({*super().groups(), *(a.group for a in self.scenario.apps)})

    def setup(self, ctx: RunContext) -> None:
        super().setup(ctx)
        self._ctx = ctx
        declared = {t.name for t in self.scenario.topics}
        _delete_streams_internal_topics(ctx.bootstrap_servers, [a.group for a in self.scenario.apps], declared)
        words = {w for a in self.scenario.apps for part in a.command for w in (JAVA, STREAMS_CLASSPATH) if w in part}
        if words:
            from failsafe.jvm.java import find_java

            self._words[JAVA] = str(find_java().executable)
        if STREAMS_CLASSPATH in words:
            from failsafe.jvm.streams import resolve_streams

            ctx.event(f"Kafka Streams {ctx.kafka_version}: resolving its jars (cached after the first time)")
            self._words[STREAMS_CLASSPATH] = str(resolve_streams(ctx.kafka_version).libs_dir / "*")
        for app in self.scenario.apps:
            if app.host is not None:
                ctx.event(f"app {app.name}: copying its files to host {app.host}")
                streams = any(STREAMS_CLASSPATH in part for part in app.command)
                where = where_on_host(app.host, ctx)
                self._hosts[app.name] = AppHost.open(where, app.name, app.files, ctx.kafka_version, streams)

    def start(self, ctx: RunContext) -> None:
        for app in self.scenario.apps:
            for i in range(app.instances):
                self._start(app, i, f"{app.name}-{i}")
        for app in self.scenario.apps:
            self._wait_ready(ctx, app)
        super().start(ctx)

    def drain(self, ctx: RunContext) -> None:
        pool = self._pool()
        pool.stop(pool.producers())
        started = time.monotonic()
        ends = log_end_offsets(ctx.bootstrap_servers, sorted(self._inputs()))
        drained = True
        try:
            ctx.wait(lambda: not self._behind(ends), self.scenario.phases.drain_timeout_s, "")
        except WaitTimeout:
            # Asked once more: a commit that came as the wait ended counts (the answers are a second old at most).
            self._groups.clear()
            behind = self._behind(ends)
            drained = not behind
            if behind:
                ctx.event(
                    f"drain: the apps had not committed their input up to its end after "
                    f"{self.scenario.phases.drain_timeout_s:g}s: {', '.join(behind[:5])}"
                )
        ctx.recorder.record(event(Op.DRAINED, process="apps", ok=drained, drain_s=round(time.monotonic() - started, 2)))
        self._stop_apps()
        super().drain(ctx)

    def stop(self) -> None:
        self._stop_apps()
        for host in self._hosts.values():
            host.close()
        self._hosts.clear()
        super().stop()

    def tick(self) -> None:
        super().tick()
        for instance in list(self.instances.values()):
            code = instance.child.exit_code()
            if code is not None and not instance.exit_recorded:
                # An instance that exits by itself is the app's behaviour, not failsafe's: recorded, and the run goes
                # on (its group gives its partitions to the others; what it had not processed is judged), with the
                # instance started again if its restart policy says so.
                self._record_exit(instance, code, by_itself=True)
                self._restart_by_policy(instance, code)

    def progress(self) -> str:
        running = sum(1 for i in self.instances.values() if i.child.exit_code() is None)
        return f"{super().progress()} · apps {running}/{len(self.instances)} running"

    def unsettled(self) -> list[str]:
        """The kit's consumer groups' and, for each app ready by its group, GROUP: N input partition(s) unowned."""
        out = super().unsettled()
        for app in self.scenario.apps:
            if app.ready == READY_GROUP and (missing := self._unowned(app)):
                out.append(f"{app.group}: {len(missing)} input partition(s) unowned")
        return out

    # -- the app's instances --------------------------------------------------------------------
    def _start(self, app: App, index: int, process: str) -> None:
        ctx = self._context()
        host = self._hosts.get(app.name)
        command = [_fill(part, host.words if host is not None else self._words) for part in app.command]
        if host is not None:
            state = str(host.state_dir(ctx.run_path.name, f"{app.name}-{index}"))  # made there by host.spawn
        else:
            here = ctx.run_path / "apps" / f"{app.name}-{index}"
            here.mkdir(parents=True, exist_ok=True)
            state = str(here)
        env = {
            "FAILSAFE_BOOTSTRAP_SERVERS": ctx.bootstrap_servers,
            "FAILSAFE_INPUT_TOPICS": ",".join(app.input),
            "FAILSAFE_OUTPUT_TOPICS": ",".join(app.output),
            "FAILSAFE_GROUP": app.group,
            "FAILSAFE_APP": app.name,
            "FAILSAFE_INSTANCE": str(index),
            "FAILSAFE_INSTANCES": str(app.instances),
            "FAILSAFE_PROCESS": process,
            "FAILSAFE_TRANSACTIONAL_ID": f"{app.name}-{index}",
            "FAILSAFE_STATE_DIR": state,
            **app.env,
        }
        log = ctx.logs_dir / f"{process}.log"
        try:
            if host is not None:
                child: Child | RemoteApp = host.spawn(command, env, name=process, log_path=log)
            else:
                child = ctx.supervisor.spawn(command, name=process, log_path=log, env={**os.environ, **env})
        except OSError as e:
            raise UserError(f"app {app.name}: {e}") from e
        self.instances[f"{app.name}-{index}"] = Instance(app, index, child, process)
        ctx.recorder.record(event(Op.APP_START, process=process, host=None if host is None else host.name))

    def _restart_by_policy(self, instance: Instance, code: int) -> None:
        policy, name = instance.app.restart, f"{instance.app.name}-{instance.index}"
        if policy == "always" or (policy == "on-failure" and code != 0):
            if self.incarnations.get(name, 0) >= MAX_RESTARTS:
                self._context().event(f"{instance.process} exited {MAX_RESTARTS} times: not started again")
                return
            self.restart_client(name)

    def _record_exit(self, instance: Instance, code: int | None, by_itself: bool) -> None:
        instance.exit_recorded = True
        if isinstance(instance.child, RemoteApp):
            instance.child.close()  # its channel: nothing of the instance runs on the host now
        self._context().recorder.record(
            event(
                Op.APP_EXIT,
                process=instance.process,
                exit_code=code,
                ok=not by_itself or code == 0,
                error=f"exited by itself with {code}: {instance.child.tail()}" if by_itself and code else None,
            )
        )

    def _wait_ready(self, ctx: RunContext, app: App) -> None:
        what = {
            READY_GROUP: f"its group {app.group} to own every partition of {', '.join(app.input)}",
        }.get(app.ready, app.ready)
        try:
            ctx.wait(lambda: self._ready(app), app.ready_timeout_s, "")
        except WaitTimeout:
            dead = [i.process for i in self.instances.values() if i.app == app and i.child.exit_code() is not None]
            tail = next((i.child.tail() for i in self.instances.values() if i.app == app and i.child.exit_code()), "")
            raise UserError(
                f"app {app.name} was not ready within {app.ready_timeout_s:g}s (waiting for {what})"
                + (f"; {', '.join(dead)} exited: {tail}" if dead else "")
            ) from None

    def _ready(self, app: App) -> bool:
        mine = [i for i in self.instances.values() if i.app == app]
        if any(i.child.exit_code() is not None for i in mine):
            return False
        if app.ready == READY_GROUP:
            return not self._unowned(app)
        if app.ready.startswith("log:"):
            pattern = re.compile(app.ready[4:])
            return all(pattern.search(self._read_log(i)) is not None for i in mine)
        port = int(app.ready[5:])
        host = self._hosts.get(app.name)
        try:
            with socket.create_connection((host.address if host is not None else "127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def _read_log(self, instance: Instance) -> str:
        path = self._context().logs_dir / f"{instance.process}.log"
        try:
            return path.read_text(errors="replace")
        except OSError:
            return ""

    def _group(self, app: App) -> dict | None:
        """The app's group as 'failsafe groups describe --json' describes it, asked at most once a second; None while
        it is not there or nobody answers.

        Asked in a child process: librdkafka's coordinator-bound Admin requests (DescribeConsumerGroups,
        ListConsumerGroupOffsets) abort the whole process when a request to a coordinator fails (librdkafka#4605,
        #3663; fix proposed in #5397), and a coordinator going away is what these runs are made of."""
        now = time.monotonic()
        cached = self._groups.get(app.group)
        if cached is not None and now - cached[0] < GROUP_PROBE_INTERVAL_S:
            return cached[1]
        command = [sys.executable, "-m", "failsafe.cli.main", "groups", "describe", app.group, "--json"]
        command += ["--bootstrap-server", self._context().bootstrap_servers, "--timeout-s", "5"]
        try:
            done = run_to_end(command, name=f"describe {app.group}", timeout_s=GROUP_PROBE_TIMEOUT_S)
            answer = _json_in(done.output) if done.returncode == 0 else None
        except (subprocess.TimeoutExpired, ValueError):
            answer = None
        self._groups[app.group] = (now, answer)
        return answer

    def _unowned(self, app: App) -> list[str]:
        """The input partitions no member of the app's group owns (all of them while the group is not stable)."""
        wanted = {f"{topic}-{n}" for topic, n in self._inputs(app)}
        desc = self._group(app)
        if desc is None or desc.get("state") != "STABLE":
            return sorted(wanted)
        owned = {tp for m in desc.get("member_list") or [] for tp in m.get("assignment") or []}
        return sorted(wanted - owned)

    def _inputs(self, app: App | None = None) -> set[tuple[str, int]]:
        """The input partitions of ``app`` (of every app when None), as the scenario declares its topics."""
        apps = [app] if app is not None else self.scenario.apps
        return {
            (t.name, n) for t in self.scenario.topics for n in range(t.partitions) for a in apps if t.name in a.input
        }

    def _behind(self, ends: dict[tuple[str, int], int]) -> list[str]:
        """GROUP TOPIC-N (committed / log end) for every input partition an app has not committed up to ``ends``."""
        out = []
        for app in self.scenario.apps:
            desc = self._group(app)
            if desc is None:
                out.append(f"{app.group} (no answer)")
                continue
            committed = {
                (r["topic"], r["partition"]): r.get("current_offset") or 0 for r in desc.get("partitions") or []
            }
            out += [
                f"{app.group} {topic}-{n} ({committed.get((topic, n), 0)}/{end})"
                for (topic, n), end in sorted(ends.items())
                if topic in app.input and committed.get((topic, n), 0) < end
            ]
        return out

    def _stop_apps(self) -> None:
        for instance in list(self.instances.values()):
            if instance.frozen:
                instance.child.signal(signal.SIGCONT)
                instance.frozen = False
            if instance.child.exit_code() is None:
                code = instance.child.stop(instance.app.stop_timeout_s)
                self._record_exit(instance, code, by_itself=False)

    def _instance(self, name: str) -> Instance:
        instance = self.instances.get(name)
        if instance is None:
            raise FaultError(f"no app instance {name!r} in this run: its instances are {', '.join(self.instances)}")
        return instance

    def _context(self) -> RunContext:
        assert self._ctx is not None, "setup() comes first"
        return self._ctx

    # -- client faults: an app's instance by NAME-INDEX, else the kit's consumers ---------------
    def kill_client(self, name: str) -> None:
        if name not in self.instances:
            return super().kill_client(name)
        instance = self._instance(name)
        code = instance.child.kill()
        instance.frozen = False
        self._record_exit(instance, code, by_itself=False)

    def close_client(self, name: str) -> None:
        if name not in self.instances:
            return super().close_client(name)
        instance = self._instance(name)
        if instance.frozen:
            self.resume_client(name)
        code = instance.child.stop(instance.app.stop_timeout_s)
        self._record_exit(instance, code, by_itself=False)

    def restart_client(self, name: str) -> None:
        if name not in self.instances:
            return super().restart_client(name)
        instance = self._instance(name)
        if instance.child.exit_code() is None:
            raise FaultError(f"app instance {instance.process} is still running: it is started again after it stopped")
        self.incarnations[name] = self.incarnations.get(name, 0) + 1
        self._start(instance.app, instance.index, self.process_of(name))

    def pause_client(self, name: str) -> None:
        if name not in self.instances:
            return super().pause_client(name)
        instance = self._instance(name)
        if instance.frozen or instance.child.exit_code() is not None:
            raise FaultError(f"app instance {instance.process} is frozen or not running")
        _signal_group(instance.child, signal.SIGSTOP)
        instance.frozen = True

    def resume_client(self, name: str) -> None:
        if name not in self.instances:
            return super().resume_client(name)
        instance = self._instance(name)
        if instance.frozen:
            instance.frozen = False
            try:
                _signal_group(instance.child, signal.SIGCONT)
            except ProcessLookupError:
                pass


def _signal_group(child: Child | RemoteApp, sig: signal.Signals) -> None:
    """A freeze or a thaw: to the instance's process group here, to its process on a host."""
    if isinstance(child, RemoteApp):
        child.signal_group(sig)
    else:
        os.killpg(child.pid, sig)


def _fill(part: str, words: dict[str, str]) -> str:
    for word, value in words.items():
        part = part.replace(word, value)
    return part


def _delete_streams_internal_topics(bootstrap_servers: str, groups: list[str], declared: set[str]) -> None:
    """An earlier run's Kafka Streams changelogs and repartition topics of these application ids (its groups); never a
    topic the scenario declares (made anew just before), whatever its name."""
    from failsafe.scenarios.engine.setup import ADMIN_TIMEOUT_S, delete_topics
    from failsafe.tools.admin import new_admin
    from failsafe.tools.retry import retrying

    admin = new_admin(bootstrap_servers)
    listed = retrying(lambda: admin.list_topics(timeout=ADMIN_TIMEOUT_S), "listing the topics").topics
    stale = sorted(
        {t for t in listed for g in groups if t.startswith(f"{g}-") and t.endswith(STREAMS_INTERNAL)} - declared
    )
    if stale:
        delete_topics(admin, stale)


def _json_in(output: str) -> dict | None:
    """The JSON object a command printed, among whatever its client library logged beside it."""
    start = output.find("{")
    if start < 0:
        return None
    value, _ = json.JSONDecoder().raw_decode(output[start:])
    return value if isinstance(value, dict) else None
