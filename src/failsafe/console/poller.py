"""One thread that reads the cluster for every open page: the console never polls per page.

Every POLL_INTERVAL_S: node states (pidfiles), the active controller, and the metadata (leader,
replicas and ISR of every partition: one Metadata request). While at least one page listens:
consumer groups every GROUPS_EVERY polls, topic configs every CONFIGS_EVERY polls and whenever the
set of topics changes. The runs every RUNS_EVERY polls, open or not (a running scenario's faults go
on the timeline). With no page open the console keeps only the timeline going, so an idle console
costs little.

Each read that changes what a page shows bumps ``version`` and calls ``on_change``; the app pushes
the new snapshot to every page (server-sent events).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from failsafe.clients.admin import describe_error, new_admin
from failsafe.clients.groups import describe_group, list_groups
from failsafe.cluster import journal
from failsafe.cluster.lifecycle import Cluster
from failsafe.console import views
from failsafe.console.runs import LiveRun, list_runs
from failsafe.console.timeline import Timeline
from failsafe.errors import FailsafeError

POLL_INTERVAL_S = 0.5
METADATA_TIMEOUT_S = 2.0
ADMIN_TIMEOUT_S = 3.0
GROUPS_EVERY = 2
CONFIGS_EVERY = 10
RUNS_EVERY = 2
WATCH_AFTER_API_S = 10.0
_SOURCES = {s.value: s.name for s in ConfigSource}


def _ms(time_ns: int) -> int:
    return time_ns // 1_000_000


class ClusterPoller:
    def __init__(self, cluster: Cluster, runs_root: Path, interval_s: float = POLL_INTERVAL_S,
                 on_change: Callable[[int], None] = lambda _: None) -> None:
        self.cluster = cluster
        self.runs_root = runs_root
        self.interval_s = interval_s
        self.on_change = on_change
        self.timeline = Timeline()
        self.admin = new_admin(cluster.bootstrap_servers, **{"socket.connection.setup.timeout.ms": 2000})
        self.listeners = 0
        # An API call counts as a page watching for WATCH_AFTER_API_S: a script polling /api/groups gets fresh groups.
        self._api_access = -WATCH_AFTER_API_S
        self.read_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self.version = 0
        self.views: dict[str, object] = {"cluster": None, "topics": [], "groups": [], "runs": {"runs": [], "live": None}}
        self.polls = 0
        self.last_poll_ms: int | None = None
        self._partitions: list[dict] = []
        self._configs: dict[str, dict[str, dict]] = {}
        self._config_topics: frozenset[str] = frozenset()
        self._groups: list[dict] = []
        self._groups_error: str | None = None
        self._live: LiveRun | None = None
        self._verdicts: dict[Path, tuple[float, str]] = {}
        self._journal_offset = journal.size(cluster.dir.journal)
        self._digests: dict[str, bytes] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._next_at = 0.0
        self._thread = threading.Thread(target=self._run, name="console-poller", daemon=True)

    # -- the thread -------------------------------------------------------------------------------
    def start(self) -> ClusterPoller:
        self.poll()
        self._thread.start()
        return self

    def poll_soon(self) -> None:
        """Poll now rather than at the next interval (after an action, so the pages show its effect at once)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=METADATA_TIMEOUT_S + ADMIN_TIMEOUT_S * 3)

    def _run(self) -> None:
        while True:
            self._wake.wait(max(0.0, self._next_at - time.monotonic()))
            self._wake.clear()
            if self._stop.is_set():
                return
            self.poll()

    # -- one poll ---------------------------------------------------------------------------------
    def fresh(self, view: str, max_age_s: float) -> bool:
        """Note an API read of ``view``; True when what the poller holds is at most ``max_age_s`` old."""
        now = time.monotonic()
        self._api_access = now
        return now - self.read_at.get(view, -max_age_s - 1) <= max_age_s

    def poll(self, everything: bool = False) -> None:
        """Read what the pages need now (``everything``: groups and configs too, whatever the count);
        the interval is a floor between starts, never a sleep after a slow read."""
        with self._lock:
            self._poll(everything)

    def _poll(self, everything: bool) -> None:
        self._next_at = time.monotonic() + self.interval_s
        now_ns = time.time_ns()
        self.polls += 1
        watched = self.listeners > 0 or time.monotonic() - self._api_access < WATCH_AFTER_API_S
        nodes = self._nodes()
        self.timeline.observe_nodes(_ms(now_ns), nodes)
        self._operator_actions()
        registered, metadata_error = self._metadata(now_ns)
        topics = {p["topic"] for p in self._partitions}
        if everything or (watched and (self.polls % CONFIGS_EVERY == 1 or topics != self._config_topics)):
            self._read_configs(sorted(topics))
        if everything or (watched and self.polls % GROUPS_EVERY == 1):
            self._read_groups()
        spec = self.cluster.spec
        facts = {"dir": str(self.cluster.dir.root), "mode": spec.mode, "kafka_version": spec.kafka_version,
                 "cluster_id": self.cluster.state.cluster_id, "bootstrap_servers": self.cluster.bootstrap_servers}
        changed = self._set("cluster", views.cluster_view(facts, nodes, self._partitions, registered, metadata_error))
        changed |= self._set("topics", views.topics_view(self._partitions, self._configs))
        if everything or (watched and self.polls % GROUPS_EVERY == 1):
            changed |= self._set("groups", {"groups": self._groups, "error": self._groups_error})
        if everything or self.polls % RUNS_EVERY == 1:
            changed |= self._set("runs", self._runs())
        changed |= self.timeline.last_seq != self._digests.get("timeline_seq")
        self._digests["timeline_seq"] = self.timeline.last_seq
        self.last_poll_ms = _ms(now_ns)
        if changed:
            self.version += 1
            self.on_change(self.version)

    def _set(self, view: str, value: object) -> bool:
        self.read_at[view] = time.monotonic()
        digest = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        if self._digests.get(view) == digest:
            return False
        self._digests[view] = digest
        self.views[view] = value
        return True

    def _nodes(self) -> list[dict]:
        out = []
        for r in self.cluster.status():
            n = r.node
            out.append({"id": n.node_id, "role": n.role, "name": n.name, "pid": r.pid, "port": n.port, "controller_port": n.controller_port,
                        "state": str(r.state), "active_controller": r.active_controller,
                        **({"zookeeper_mode": r.zookeeper_mode} if n.is_zookeeper else {})})
        return out

    def _metadata(self, now_ns: int) -> tuple[list[int] | None, str | None]:
        try:
            md = self.admin.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException as e:
            return None, f"no broker answered a metadata request within {METADATA_TIMEOUT_S:g}s ({describe_error(e)})"
        partitions = []
        for topic, tm in md.topics.items():
            if tm.error is not None:
                continue
            for pid, p in tm.partitions.items():
                partitions.append({"topic": topic, "partition": pid, "leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isrs)})
        partitions.sort(key=lambda p: (p["topic"], p["partition"]))
        self._partitions = partitions
        self.timeline.observe_partitions(_ms(now_ns), partitions)
        return sorted(md.brokers), None

    def _read_configs(self, topics: list[str]) -> None:
        self._config_topics = frozenset(topics)
        if not topics:
            self._configs = {}
            return
        futures = self.admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics], request_timeout=ADMIN_TIMEOUT_S)
        configs = {}
        for resource, future in futures.items():
            try:
                entries = future.result(timeout=ADMIN_TIMEOUT_S + 1)
            except (KafkaException, TimeoutError):
                configs[resource.name] = self._configs.get(resource.name, {})
                continue
            configs[resource.name] = {name: {"value": e.value, "source": _SOURCES.get(e.source, str(e.source))}
                                      for name, e in entries.items() if name in views.SHOWN_TOPIC_CONFIGS}
        self._configs = configs

    def _read_groups(self) -> None:
        bootstrap = self.cluster.bootstrap_servers
        try:
            groups = []
            for group_id, _state in list_groups(bootstrap, ADMIN_TIMEOUT_S, admin=self.admin):
                try:
                    groups.append(describe_group(bootstrap, group_id, ADMIN_TIMEOUT_S, admin=self.admin).to_json())
                except FailsafeError as e:
                    groups.append({"group": group_id, "error": str(e)})
            self._groups, self._groups_error = groups, None
        except FailsafeError as e:
            self._groups_error = str(e)

    def _operator_actions(self) -> None:
        actions, self._journal_offset = journal.read_from(self.cluster.dir.journal, self._journal_offset)
        for a in actions:
            self.timeline.observe_fault(_ms(a.start_ns), a.source, a.action, a.role, a.node, a.ok, a.error)

    def _runs(self) -> dict:
        runs = list_runs(self.runs_root, verdicts=self._verdicts)
        running = next((r for r in runs if r["running"]), None)
        if running is None:
            self._live = None
        else:
            path = self.runs_root / running["id"]
            if self._live is None or self._live.path != path:
                self._live = LiveRun(path)
            self._live.update()
            for f in self._live.take_new_faults():
                for node in f["nodes"] or [None]:
                    self.timeline.observe_fault(f["start_ms"], running["scenario"], f["fault"], f["target"] or "", node,
                                                f["error"] is None, f["error"])
        return {"runs": runs, "live": None if self._live is None else {"id": running["id"], **self._live.to_json()}}

    # -- what the app serves ------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {"version": self.version, "time_ms": self.last_poll_ms, **self.views}
