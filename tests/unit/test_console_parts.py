"""The console's parts without a cluster: the token guard, the views, the timeline, the runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from failsafe.cluster.observe import journal
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.console import views
from failsafe.console.app import create_app
from failsafe.console.runs import LiveRun, list_runs
from failsafe.console.timeline import Timeline
from tests.helpers import free_port_block

TOKEN = "s3cret-token"


class FakePoller:
    """What the app reads of a poller: views, a timeline, a version; no Kafka."""

    def __init__(self, cluster, runs_root, on_change=None) -> None:
        self.timeline = Timeline()
        self.timeline.observe_partitions(
            1000, [{"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1, 2]}]
        )
        self.views = {
            "cluster": {"nodes": []},
            "topics": [],
            "groups": {"groups": [{"group": "g", "state": "STABLE"}], "error": None},
            "runs": {"runs": [], "live": None},
        }
        self.version, self.listeners, self.polls = 1, 0, 0

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def fresh(self, view: str, max_age_s: float) -> bool:
        return True

    def poll(self, everything: bool = False) -> None:
        self.polls += 1

    def poll_soon(self) -> None:
        self.polls += 1

    def snapshot(self) -> dict:
        return {"version": self.version, "time_ms": 1000, **self.views}


@pytest.fixture
def stopped_cluster(tmp_path: Path) -> Cluster:
    """A cluster directory with its state and no process running, on free ports (a cluster on 9092 must not answer for
    it)."""
    cdir = ClusterDir(tmp_path / "cluster")
    spec = ClusterSpec(brokers=3, controllers=1, base_port=free_port_block(3), controller_base_port=free_port_block(1))
    cdir.save(ClusterState(spec, "id", "2026-01-01T00:00:00Z"))
    return Cluster.open(cdir.root)


@pytest.fixture
def client(stopped_cluster: Cluster):
    app = create_app(stopped_cluster, TOKEN, {"testserver"}, poller_factory=FakePoller)
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api",
        "/api/cluster",
        "/api/topics",
        "/api/groups",
        "/api/groups/g",
        "/api/timeline",
        "/api/runs",
        "/api/events",
        "/runs/x/y/report.html",
    ],
)
def test_every_page_and_api_call_without_the_token_is_401(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 401 and "token missing" in response.json()["error"]
    assert client.get(path, params={"token": "wrong"}).status_code == 401
    assert client.get(path, headers={"X-Failsafe-Token": "wrong"}).status_code == 401


def test_with_the_token_in_the_query_a_header_or_the_cookie_pages_answer(client: TestClient) -> None:
    page = client.get("/", params={"token": TOKEN})
    assert page.status_code == 200 and "failsafe console" in page.text and "EventSource" in page.text
    assert (
        "failsafe_console_token" in page.headers["set-cookie"]
        and "samesite=strict" in page.headers["set-cookie"].lower()
    )
    assert client.get("/api/groups/g").json() == {"group": "g", "state": "STABLE"}  # the cookie the page set
    client.cookies.clear()
    assert client.get("/api/cluster", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/api/groups/nope", headers={"X-Failsafe-Token": TOKEN}).status_code == 404
    assert client.get("/api/timeline", params={"token": TOKEN, "since": "x"}).status_code == 400
    events = client.get("/api/timeline", params={"token": TOKEN, "since": 0}).json()["events"]
    assert [e["kind"] for e in events] == ["partition"]


def test_a_fault_action_needs_the_token_in_a_header_never_the_query_or_a_cookie(
    client: TestClient, stopped_cluster: Cluster
) -> None:
    client.get("/", params={"token": TOKEN})  # the cookie is set: a cross-site form post would carry it
    for attempt in (
        client.post("/api/nodes/broker/0/kill"),
        client.post("/api/nodes/broker/0/kill", params={"token": TOKEN}),
        client.post("/api/elect-leaders"),
    ):
        assert attempt.status_code == 401 and "X-Failsafe-Token header" in attempt.json()["error"]
    assert journal.last(stopped_cluster.dir.journal, 5) == []


def test_an_action_on_an_unknown_node_or_a_stopped_one_is_an_http_error_with_a_message(
    client: TestClient, stopped_cluster: Cluster
) -> None:
    headers = {"X-Failsafe-Token": TOKEN}
    unknown = client.post("/api/nodes/broker/7/kill", headers=headers)
    assert (
        unknown.status_code == 404
        and "no broker with id 7" in unknown.json()["error"]
        and "0, 1, 2" in unknown.json()["error"]
    )
    assert client.post("/api/nodes/broker/0/explode", headers=headers).status_code == 404
    assert client.post("/api/nodes/kafka/0/kill", headers=headers).status_code == 404
    assert client.post("/api/nodes/broker/zero/kill", headers=headers).status_code == 404
    down = client.post("/api/nodes/broker/0/kill", headers=headers)
    assert down.status_code == 409 and "broker 0 is not running" in down.json()["error"]
    zk = client.post("/api/nodes/zookeeper/1/stop", headers=headers)
    assert zk.status_code == 409 and "KRaft mode" in zk.json()["error"]
    # Journaled: the action that reached a node and was refused by its state; not requests that named no node.
    (refused,) = journal.last(stopped_cluster.dir.journal, 5)
    assert (refused.action, refused.role, refused.node, refused.source, refused.ok) == (
        "kill",
        "broker",
        0,
        "console",
        False,
    )
    assert "not running" in refused.error


def test_a_request_for_another_host_is_refused_against_dns_rebinding(client: TestClient) -> None:
    response = client.get("/api/cluster", params={"token": TOKEN}, headers={"Host": "attacker.example:8080"})
    assert response.status_code == 403 and "attacker.example" in response.json()["error"]


def test_a_report_outside_the_runs_directory_is_not_served(client: TestClient, stopped_cluster: Cluster) -> None:
    (stopped_cluster.dir.root / "report.html").write_text("secret")
    assert client.get("/runs/../x/report.html", params={"token": TOKEN}).status_code == 404
    run = stopped_cluster.dir.root / "runs" / "s" / "20260101T000000.000Z"
    run.mkdir(parents=True)
    (run / "report.html").write_text("<html>report</html>")
    assert client.get("/runs/s/20260101T000000.000Z/report.html", params={"token": TOKEN}).text == "<html>report</html>"


def test_a_token_outside_ascii_is_refused_with_401_not_a_server_error(client: TestClient) -> None:
    assert client.get("/api/cluster", params={"token": "é"}).status_code == 401
    assert client.get("/api/cluster", headers={"X-Failsafe-Token": b"\xe9"}).status_code == 401
    assert client.post("/api/elect-leaders", headers={"X-Failsafe-Token": b"\xe9"}).status_code == 401


def test_the_page_reloaded_with_only_its_cookie_still_has_the_token_its_buttons_send(
    client: TestClient, stopped_cluster: Cluster
) -> None:
    client.get("/", params={"token": TOKEN})
    reloaded = client.get("/")  # the page took the token out of the address bar: a reload sends the cookie only
    assert reloaded.status_code == 200 and "no-store" in reloaded.headers["cache-control"]
    (token,) = re.findall(r'const TOKEN = "([^"]*)";', reloaded.text)
    response = client.post("/api/nodes/broker/0/kill", headers={"X-Failsafe-Token": token})
    assert response.status_code == 409 and "not running" in response.json()["error"]


def test_two_consoles_on_one_host_do_not_overwrite_each_others_cookie(stopped_cluster: Cluster) -> None:
    apps = {
        port: create_app(stopped_cluster, f"token-{port}", {f"127.0.0.1:{port}"}, poller_factory=FakePoller)
        for port in (8080, 8081)
    }
    with (
        TestClient(apps[8080], base_url="http://127.0.0.1:8080") as first,
        TestClient(apps[8081], base_url="http://127.0.0.1:8081") as second,
    ):
        first.get("/", params={"token": "token-8080"})
        second.get("/", params={"token": "token-8081"})
        # A browser keeps one cookie jar per host, whatever the port: what the second console set reaches the first.
        for cookie in second.cookies.jar:
            first.cookies.jar.set_cookie(cookie)
        assert first.get("/api/cluster").status_code == 200 and second.get("/api/cluster").status_code == 200


def test_a_report_is_served_sandboxed_so_a_script_in_it_cannot_act_as_the_console(
    client: TestClient, stopped_cluster: Cluster
) -> None:
    run = stopped_cluster.dir.root / "runs" / "s" / "20260101T000000.000Z"
    run.mkdir(parents=True)
    (run / "report.html").write_text(
        "<script>fetch('/api/nodes/broker/1/kill', {method: 'POST', headers: {'X-Failsafe-Token': "
        "new URLSearchParams(location.search).get('token')}})</script>"
    )
    response = client.get("/runs/s/20260101T000000.000Z/report.html", params={"token": TOKEN})
    policy = response.headers["content-security-policy"]
    assert response.status_code == 200 and "sandbox" in policy and "default-src 'none'" in policy
    assert response.headers["referrer-policy"] == "no-referrer"


def test_a_change_that_lands_while_the_stream_sends_is_pushed_at_once(
    stopped_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from failsafe.console import app as app_module

    monkeypatch.setattr(app_module, "KEEPALIVE_S", 60.0)

    class RacingPoller(FakePoller):
        """The next change lands while the stream builds (and sends) its first message, as when a slow page holds up a
        send."""

        def __init__(self, cluster, runs_root, on_change) -> None:
            super().__init__(cluster, runs_root)
            self.changes = on_change.__self__

        def snapshot(self) -> dict:
            if self.version == 1:
                self.version = 2
                self.changes._fire()
            return super().snapshot()

    app = create_app(stopped_cluster, TOKEN, {"testserver"}, poller_factory=RacingPoller)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/events",
        "raw_path": b"/api/events",
        "root_path": "",
        "query_string": f"token={TOKEN}".encode(),
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }

    async def versions_pushed() -> list[int]:
        pushed: list[int] = []
        two = asyncio.Event()

        async def receive() -> dict:
            await asyncio.Event().wait()  # the page stays open
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.body" and message["body"].startswith(b"data: "):
                pushed.append(json.loads(message["body"][6:])["version"])
                if len(pushed) == 2:
                    two.set()

        task = asyncio.create_task(app(scope, receive, send))
        try:
            await asyncio.wait_for(two.wait(), 3)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return pushed

    assert asyncio.run(versions_pushed()) == [2, 2]


# -- views ------------------------------------------------------------------------------------------
def test_a_partition_view_marks_missing_replicas_no_leader_and_a_non_preferred_leader() -> None:
    p = views.partition_view({"partition": 0, "leader": 2, "replicas": [1, 2, 3], "isr": [2, 3]})
    assert p["missing_from_isr"] == [1] and p["non_preferred_leader"] and p["under_replicated"] and not p["offline"]
    p = views.partition_view({"partition": 1, "leader": -1, "replicas": [1, 2], "isr": [1]})
    assert p["offline"] and not p["non_preferred_leader"]
    p = views.partition_view({"partition": 2, "leader": 1, "replicas": [1, 2], "isr": [1, 2]})
    assert not (p["missing_from_isr"] or p["non_preferred_leader"] or p["under_replicated"] or p["offline"])


def test_topics_view_flags_partitions_below_min_insync_replicas() -> None:
    parts = [
        {"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2, 3], "isr": [1]},
        {"topic": "t", "partition": 1, "leader": 2, "replicas": [2, 3, 1], "isr": [2, 3]},
        {"topic": "__consumer_offsets", "partition": 0, "leader": -1, "replicas": [1], "isr": []},
    ]
    (internal, t) = views.topics_view(
        parts, {"t": {"min.insync.replicas": {"value": "2", "source": "DYNAMIC_TOPIC_CONFIG"}}}
    )
    assert internal["internal"] and internal["offline"] == 1
    assert [p["under_min_isr"] for p in t["partitions"]] == [True, False] and t["under_replicated"] == 2
    assert t["configs"] == {"min.insync.replicas": {"value": "2", "source": "DYNAMIC_TOPIC_CONFIG"}}


def test_broker_counts_put_under_replicated_partitions_on_their_leader_and_offline_ones_on_every_replica() -> None:
    parts = [
        {"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1]},
        {"topic": "t", "partition": 1, "leader": -1, "replicas": [2, 0], "isr": [0]},
    ]
    counts = views.broker_counts(parts, [0, 1, 2])
    assert counts[1] == {"leaders": 1, "under_replicated": 1, "offline": 0, "replicas": 1}
    assert counts[2]["offline"] == 1 and counts[0]["offline"] == 1 and counts[2]["leaders"] == 0


# -- timeline ---------------------------------------------------------------------------------------
def test_the_timeline_records_only_changes_and_answers_since_a_seq() -> None:
    tl = Timeline()
    p = {"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1, 2]}
    tl.observe_partitions(1000, [p])
    tl.observe_partitions(1500, [p])
    tl.observe_partitions(2000, [{**p, "leader": 2, "isr": [2]}])
    tl.observe_nodes(2000, [{"role": "broker", "id": 1, "state": "up"}])
    tl.observe_nodes(2500, [{"role": "broker", "id": 1, "state": "up"}])
    tl.observe_nodes(3000, [{"role": "broker", "id": 1, "state": "down"}])
    tl.observe_fault(3000, "console", "kill", "broker", 1)
    tl.observe_partitions(4000, [])
    kinds = [(e["kind"], e["time_ms"]) for e in tl.since(0)]
    assert kinds == [
        ("partition", 1000),
        ("partition", 2000),
        ("node", 2000),
        ("node", 3000),
        ("fault", 3000),
        ("partition-gone", 4000),
    ]
    assert [e["seq"] for e in tl.since(4)] == [5, 6] and tl.since(6) == [] and tl.started_ms == 1000


def test_a_full_timeline_drops_its_oldest_half_and_since_still_answers() -> None:
    tl = Timeline(max_events=10)
    for i in range(25):
        tl.observe_fault(i, "cli", "kill", "broker", i)
    events = tl.since(0)
    assert events[-1]["seq"] == 25 and len(events) <= 10 and [e["seq"] for e in tl.since(23)] == [24, 25]


# -- runs -------------------------------------------------------------------------------------------
def _run(root: Path, scenario: str, stamp: str, verdict: str | None, age_s: float) -> Path:
    run = root / scenario / stamp
    run.mkdir(parents=True)
    (run / "history.jsonl").write_text("")
    if verdict:
        (run / "results.json").write_text(json.dumps({"verdict": verdict}))
        (run / "report.html").write_text("<html/>")
    then = time.time() - age_s
    os.utime(run / "history.jsonl", (then, then))
    return run


def test_runs_are_listed_newest_first_with_their_verdicts_and_the_running_one(tmp_path: Path) -> None:
    _run(tmp_path, "a", "20260101T000000.000Z", "VALID", 600)
    _run(tmp_path, "b", "20260102T000000.000Z", "INVALID", 300)
    _run(tmp_path, "a", "20260103T000000.000Z", None, 1)
    _run(tmp_path, "c", "20260100T000000.000Z", None, 600)  # never checked, long idle: not running
    cache: dict = {}
    runs = list_runs(tmp_path, verdicts=cache)
    assert [(r["id"], r["verdict"], r["running"], r["report"]) for r in runs] == [
        ("a/20260103T000000.000Z", None, True, False),
        ("b/20260102T000000.000Z", "INVALID", False, True),
        ("a/20260101T000000.000Z", "VALID", False, True),
        ("c/20260100T000000.000Z", None, False, False),
    ]
    assert len(cache) == 2 and list_runs(tmp_path / "nothing") == []


def test_a_live_run_counts_sends_by_outcome_and_follows_phase_and_faults_incrementally(tmp_path: Path) -> None:
    run = _run(tmp_path, "s", "20260101T000000.000Z", None, 0)
    lines = [
        {"time_ns": 1, "process": "runner", "type": "info", "f": "phase", "phase": "chaos"},
        {"time_ns": 2, "process": "p", "type": "invoke", "f": "send", "id": 1},
        {"time_ns": 3, "process": "p", "type": "ok", "f": "send", "id": 1},
        {"time_ns": 4, "process": "p", "type": "invoke", "f": "send", "id": 2},
        {
            "time_ns": 5_000_000,
            "process": "nemesis",
            "type": "info",
            "f": "fault-start",
            "fault_id": 1,
            "fault": "kill",
            "target": "broker",
            "nodes": [1],
            "role": "leader of t-0",
        },
    ]
    (run / "history.jsonl").write_bytes(
        b"".join(json.dumps(op, separators=(",", ":")).encode() + b"\n" for op in lines) + b'{"time_ns":6,"pro'
    )
    live = LiveRun(run)
    live.update()
    assert live.phase == "chaos" and live.sends == {"invoked": 2, "ok": 1, "fail": 0, "info": 0}
    assert [f["fault"] for f in live.take_new_faults()] == ["kill"] and live.take_new_faults() == []
    with open(run / "history.jsonl", "ab") as fh:
        fh.write(b'cess":"p","type":"info","f":"send","id":2}\n')
        fh.write(b'{"time_ns":9000000,"process":"nemesis","type":"info","f":"fault-stop","fault_id":1,"ok":true}\n')
    live.update()
    assert live.sends["info"] == 1 and live.to_json()["faults"][0]["stop_ms"] == 9


# -- the poller, on a cluster directory with nothing running -------------------------------------------
def test_the_poller_shows_nodes_down_and_why_no_metadata_and_survives_a_read_that_raises(
    stopped_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from failsafe.console import poller as poller_module

    monkeypatch.setattr(poller_module, "METADATA_TIMEOUT_S", 0.2)
    changes: list[int] = []
    poller = poller_module.ClusterPoller(stopped_cluster, stopped_cluster.dir.root / "runs", on_change=changes.append)
    poller.poll_fast()
    cluster = poller.views["cluster"]
    assert [n["state"] for n in cluster["nodes"]] == ["down"] * 4 and cluster["metadata_error"].startswith(
        "no broker answered"
    )
    assert changes == [1] and [e["kind"] for e in poller.timeline.since(0)] == ["node"] * 4

    def broken() -> list[dict]:
        raise RuntimeError("pidfile vanished")

    monkeypatch.setattr(poller, "_nodes", broken)
    poller._guarded(poller.poll_fast)
    assert poller.views["cluster"]["poller_error"] == "poll_fast: RuntimeError: pidfile vanished" and changes == [1, 2]
    monkeypatch.undo()
    monkeypatch.setattr(poller_module, "METADATA_TIMEOUT_S", 0.2)
    poller._guarded(poller.poll_fast)
    assert poller.views["cluster"]["poller_error"] is None


def test_the_first_poll_that_raises_does_not_stop_the_console_from_starting(
    stopped_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from failsafe.console import poller as poller_module

    monkeypatch.setattr(poller_module, "METADATA_TIMEOUT_S", 0.2)
    poller = poller_module.ClusterPoller(stopped_cluster, stopped_cluster.dir.root / "runs")

    def broken() -> list[dict]:
        raise RuntimeError("quorum-state half written")

    monkeypatch.setattr(poller, "_nodes", broken)
    monkeypatch.setattr(poller, "_read_groups", lambda: {"groups": [], "error": None})
    poller.start()  # the app's startup: an exception here would stop uvicorn right after the URL was printed
    try:
        assert poller.views["cluster"]["poller_error"] == "poll_fast: RuntimeError: quorum-state half written"
        poller.poll()  # an API call that found its view stale: the error is shown, not a 500
    finally:
        poller.stop()
