"""Two threads that read the cluster for every open page: the console never polls per page.

The *fast* loop, every POLL_INTERVAL_S: node states (pidfiles), the active controller, the
operator's journal, and the metadata (leader, replicas and ISR of every partition: one Metadata
request); the runs every RUNS_EVERY polls. It keeps the timeline going whether a page is open or not.

The *slow* loop, only while a page listens (or a script called the API in the last
WATCH_AFTER_API_S): consumer groups every GROUPS_INTERVAL_S, topic configs every
CONFIGS_INTERVAL_S and whenever the set of topics changes. These requests go to one coordinator
or controller and can hang for their whole timeout when that broker has just died: on their own
thread they never delay the metadata, so a new leader reaches the page within one fast poll.

Each read that changes what a page shows bumps ``version`` and calls ``on_change``; the app pushes
the new snapshot to every page (server-sent events).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from failsafe.cluster.observe import journal
from failsafe.cluster.observe.metrics import ScrapeError, endpoints, scrape
from failsafe.cluster.spec import NodeSpec
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.console import views
from failsafe.console.runs import LiveRun, list_runs
from failsafe.console.timeline import Timeline
from failsafe.errors import FailsafeError
from failsafe.tools.admin import describe_error, new_admin
from failsafe.tools.groups import describe_group, list_groups

POLL_INTERVAL_S = 0.5
METADATA_TIMEOUT_S = 2.0
ADMIN_TIMEOUT_S = 3.0
# A node's metrics endpoint that has not answered in this long (paused, cut off) is shown as unreadable.
METRICS_TIMEOUT_S = 1.0
GROUPS_INTERVAL_S = 1.0
CONFIGS_INTERVAL_S = 5.0
RUNS_EVERY = 2
WATCH_AFTER_API_S = 10.0
_SOURCES = {s.value: s.name for s in ConfigSource}


def _ms(time_ns: int) -> int:
    return time_ns // 1_000_000


class ClusterPoller:
    def __init__(
        self,
        cluster: Cluster,
        runs_root: Path,
        interval_s: float = POLL_INTERVAL_S,
        on_change: Callable[[int], None] = lambda _: None,
    ) -> None:
        self.cluster = cluster
        self.runs_root = runs_root
        self.interval_s = interval_s
        self.on_change = on_change
        self.timeline = Timeline()
        self.admin = new_admin(cluster.bootstrap_servers, **{"socket.connection.setup.timeout.ms": 2000})
        self._groups_admin: AdminClient | None = None  # see _read_groups
        self.listeners = 0
        # An API call counts as a page watching for WATCH_AFTER_API_S: a script polling /api/groups gets fresh groups.
        self._api_access = -WATCH_AFTER_API_S
        self.read_at: dict[str, float] = {}
        self.version = 0
        self.views: dict[str, object] = {
            "cluster": None,
            "topics": [],
            "groups": {"groups": [], "error": None},
            "runs": {"runs": [], "live": None},
        }
        self.polls = 0
        self.error: str | None = None
        self.last_poll_ms: int | None = None
        self._nodes_seen: list[dict] = []
        self._partitions: list[dict] = []
        self._registered: list[int] | None = None
        self._metadata_error: str | None = None
        self._configs: dict[str, dict[str, dict]] = {}
        self._config_topics: frozenset[str] | None = None
        self._configs_at = -CONFIGS_INTERVAL_S
        self._live: LiveRun | None = None
        self._verdicts: dict[Path, tuple[float, str]] = {}
        self._journal_offset = journal.size(cluster.dir.journal)
        self._digests: dict[str, bytes] = {}
        self._metrics: dict[str, dict] = {}
        self._metrics_urls = endpoints(cluster.spec)
        # One scrape per node at once: a paused node costs its own scrape the timeout, not the others'.
        self._scrapers = (
            ThreadPoolExecutor(max_workers=max(1, len(self._metrics_urls)), thread_name_prefix="console-metrics")
            if self._metrics_urls
            else None
        )
        self._publish_lock = threading.Lock()
        self._fast_lock = threading.Lock()
        self._slow_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._next_at = 0.0
        self._threads = [
            threading.Thread(target=self._fast_loop, name="console-poller", daemon=True),
            threading.Thread(target=self._slow_loop, name="console-poller-groups", daemon=True),
        ]

    # -- the threads ------------------------------------------------------------------------------
    def start(self) -> ClusterPoller:
        self.poll()
        for thread in self._threads:
            thread.start()
        return self

    def poll_soon(self) -> None:
        """Poll now rather than at the next interval (after an action, so the pages show its effect at once)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout=ADMIN_TIMEOUT_S + 1)
        if self._scrapers is not None:
            self._scrapers.shutdown(wait=False, cancel_futures=True)

    def _fast_loop(self) -> None:
        while True:
            self._wake.wait(max(0.0, self._next_at - time.monotonic()))
            self._wake.clear()
            if self._stop.is_set():
                return
            self._guarded(self.poll_fast)

    def _slow_loop(self) -> None:
        while not self._stop.wait(GROUPS_INTERVAL_S):
            if self.watched:
                self._guarded(self.poll_slow)

    def _guarded(self, read: Callable[..., None], *args: object) -> None:
        """A read that fails in a way nobody foresaw is shown on the page and tried again next time: the console goes
        on."""
        try:
            read(*args)
        except Exception as e:  # noqa: BLE001 - the console must outlive any one failed read; the error is shown, not hidden
            self.error = f"{read.__name__}: {type(e).__name__}: {e}"
            self._publish()
            return
        if self.error is not None and self.error.startswith(read.__name__):
            self.error = None
            self._publish()

    @property
    def watched(self) -> bool:
        return self.listeners > 0 or time.monotonic() - self._api_access < WATCH_AFTER_API_S

    def fresh(self, view: str, max_age_s: float) -> bool:
        """Note an API read of ``view``; True when what the poller holds is at most ``max_age_s`` old."""
        now = time.monotonic()
        self._api_access = now
        return now - self.read_at.get(view, -max_age_s - 1) <= max_age_s

    # -- reading ----------------------------------------------------------------------------------
    def poll(self, everything: bool = True) -> None:
        """Both reads now, one after the other (at start, and for an API call that found its view stale); guarded as in
        the loops: a read that raises must not stop the console from starting, nor turn an API call into a 500."""
        self._guarded(self.poll_fast)
        if everything:
            self._guarded(self.poll_slow, True)

    def poll_fast(self) -> None:
        """Nodes, journal, metadata, runs; the interval is a floor between starts, never a sleep after a slow read."""
        with self._fast_lock:
            self._next_at = time.monotonic() + self.interval_s
            now_ns = time.time_ns()
            self.polls += 1
            self._nodes_seen = self._nodes()
            self.timeline.observe_nodes(_ms(now_ns), self._nodes_seen)
            self._operator_actions()
            self._read_metadata(now_ns)
            runs = self._runs() if self.polls % RUNS_EVERY == 1 else None
            self.last_poll_ms = _ms(now_ns)
            self._publish(runs=runs)

    def poll_slow(self, force_configs: bool = False) -> None:
        with self._slow_lock:
            topics = frozenset(p["topic"] for p in self._partitions)
            if (
                force_configs
                or topics != self._config_topics
                or time.monotonic() - self._configs_at >= CONFIGS_INTERVAL_S
            ):
                self._read_configs(sorted(topics))
            groups = self._read_groups()
            self._read_metrics()
            self._publish(groups=groups)

    def _publish(self, runs: dict | None = None, groups: dict | None = None) -> None:
        with self._publish_lock:
            spec = self.cluster.spec
            facts = {
                "dir": str(self.cluster.dir.root),
                "mode": spec.mode,
                "kafka_version": spec.kafka_version,
                "cluster_id": self.cluster.state.cluster_id,
                "bootstrap_servers": self.cluster.bootstrap_servers,
            }
            cluster = {
                **views.cluster_view(
                    facts, self._nodes_seen, self._partitions, self._registered, self._metadata_error, self._metrics
                ),
                "poller_error": self.error,
            }
            changed = self._set("cluster", cluster)
            changed |= self._set("topics", views.topics_view(self._partitions, self._configs))
            if groups is not None:
                changed |= self._set("groups", groups)
            if runs is not None:
                changed |= self._set("runs", runs)
            changed |= self.timeline.last_seq != self._digests.get("timeline_seq")
            self._digests["timeline_seq"] = self.timeline.last_seq
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
            out.append(
                {
                    "id": n.node_id,
                    "role": n.role,
                    "name": n.name,
                    "pid": r.pid,
                    "port": n.port,
                    "controller_port": n.controller_port,
                    "state": str(r.state),
                    "active_controller": r.active_controller,
                    **({"zookeeper_mode": r.zookeeper_mode} if n.is_zookeeper else {}),
                }
            )
        return out

    def _read_metadata(self, now_ns: int) -> None:
        try:
            md = self.admin.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException as e:
            self._registered = None
            self._metadata_error = (
                f"no broker answered a metadata request within {METADATA_TIMEOUT_S:g}s ({describe_error(e)})"
            )
            return
        partitions = []
        for topic, tm in md.topics.items():
            if tm.error is not None:
                continue
            for pid, p in tm.partitions.items():
                partitions.append(
                    {
                        "topic": topic,
                        "partition": pid,
                        "leader": p.leader,
                        "replicas": list(p.replicas),
                        "isr": list(p.isrs),
                    }
                )
        partitions.sort(key=lambda p: (p["topic"], p["partition"]))
        self._partitions, self._registered, self._metadata_error = partitions, sorted(md.brokers), None
        self.timeline.observe_partitions(_ms(now_ns), partitions)

    def _read_metrics(self) -> None:
        """Every node's JMX exporter, all at once (cluster/observe/metrics.py); nothing for a cluster made without
        metrics."""
        if self._scrapers is None:
            return

        def one(node: NodeSpec, url: str) -> tuple[str, dict]:
            try:
                return node.name, views.metrics_view(url, scrape(url, METRICS_TIMEOUT_S), None)
            except ScrapeError as e:
                return node.name, views.metrics_view(url, None, str(e))

        self._metrics = dict(self._scrapers.map(lambda item: one(*item), self._metrics_urls.items()))

    def _read_configs(self, topics: list[str]) -> None:
        self._config_topics, self._configs_at = frozenset(topics), time.monotonic()
        if not topics:
            self._configs = {}
            return
        futures = self.admin.describe_configs(
            [ConfigResource(ResourceType.TOPIC, t) for t in topics], request_timeout=ADMIN_TIMEOUT_S
        )
        configs = {}
        for resource, future in futures.items():
            try:
                entries = future.result(timeout=ADMIN_TIMEOUT_S + 1)
            except (KafkaException, TimeoutError):
                configs[resource.name] = self._configs.get(resource.name, {})
                continue
            configs[resource.name] = {
                name: {"value": e.value, "source": _SOURCES.get(e.source, str(e.source))}
                for name, e in entries.items()
                if name in views.SHOWN_TOPIC_CONFIGS
            }
        self._configs = configs

    def _read_groups(self) -> dict:
        """Groups through their own admin client, replaced after any failure: librdkafka 2.16 can abort the whole
        process (assertion ``eonce->refcnt > 0``) when a group request that timed out is answered late on a long-lived
        client (confluentinc/librdkafka#4605; seen here while a broker restarted under a running scenario)."""
        bootstrap = self.cluster.bootstrap_servers
        if self._groups_admin is None:
            self._groups_admin = new_admin(bootstrap, **{"socket.connection.setup.timeout.ms": 2000})
        admin, failed = self._groups_admin, False
        try:
            groups = []
            for group_id, _state in list_groups(bootstrap, ADMIN_TIMEOUT_S, admin=admin):
                try:
                    groups.append(describe_group(bootstrap, group_id, ADMIN_TIMEOUT_S, admin=admin).to_json())
                except FailsafeError as e:
                    failed = True
                    groups.append({"group": group_id, "error": str(e)})
            return {"groups": groups, "error": None}
        except FailsafeError as e:
            failed = True
            return {"groups": self.views["groups"]["groups"], "error": str(e)}
        finally:
            if failed:
                self._groups_admin = None

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
                if str(f["role"] or "").startswith("operator ("):
                    continue  # the operator's own action: already on the timeline from the journal
                for node in f["nodes"] or [None]:
                    self.timeline.observe_fault(
                        f["start_ms"],
                        running["scenario"],
                        f["fault"],
                        f["target"] or "",
                        node,
                        f["error"] is None,
                        f["error"],
                    )
        return {"runs": runs, "live": None if self._live is None else {"id": running["id"], **self._live.to_json()}}

    # -- what the app serves ------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {"version": self.version, "time_ms": self.last_poll_ms, **self.views}
