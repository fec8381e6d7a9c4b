"""The console on a real cluster: the token, 127.0.0.1 only, the group view, and killing a leader from a real
browser."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest

from failsafe.cluster.observe import journal
from tests.conftest import RunningCluster, start_cluster
from tests.e2e.console_helpers import console_fate, listening_addresses, start_console, stop_console
from tests.helpers import run_cli

CHROMIUM = Path("/usr/bin/chromium")
# The page must show a change within a second of the poller seeing it; a broker start waits for registration.
PAGE_TIMEOUT_MS = 30_000
ISR_TIMEOUT_MS = 90_000

pytestmark = pytest.mark.cluster


def test_without_the_token_everything_is_401_and_the_console_listens_on_127_0_0_1_only(
    shared_cluster: RunningCluster,
) -> None:
    console = start_console(shared_cluster.dir)
    try:
        listening = listening_addresses(console)
        assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
        with httpx.Client(base_url=console.base, timeout=10) as http:
            for path in (
                "/",
                "/api/cluster",
                "/api/topics",
                "/api/groups",
                "/api/timeline",
                "/api/runs",
                "/api/events",
            ):
                assert http.get(path).status_code == 401, path
                assert http.get(path, params={"token": console.token + "x"}).status_code == 401, path
            for path in ("/api/nodes/broker/0/kill", "/api/nodes/broker/0/stop", "/api/elect-leaders"):
                assert http.post(path).status_code == 401, path
                assert http.post(path, params={"token": console.token}).status_code == 401, path
            assert journal.last(shared_cluster.dir / journal.JOURNAL_FILE, 10) == []
            cluster = http.get("/api/cluster", headers=console.headers).json()
            assert [n["state"] for n in cluster["nodes"]] == ["up"] * 4 and cluster["active_controller"] is not None
            unknown = http.post("/api/nodes/broker/9/kill", headers=console.headers)
            assert unknown.status_code == 404 and "no broker with id 9" in unknown.json()["error"]
            with http.stream("GET", "/api/events", params={"token": console.token}) as stream:
                first = next(line for line in stream.iter_lines() if line.startswith("data: "))
            event = json.loads(first.removeprefix("data: "))
            assert {"cluster", "topics", "groups", "runs", "timeline"} <= set(event)
    finally:
        err = stop_console(console, shared_cluster.dir)
    assert "console stopped" in err and "Traceback" not in err
    assert [r.stdout for r in [shared_cluster.cli("status", "--json")]] and json.loads(
        shared_cluster.cli("status", "--json").stdout
    )["nodes"]


def test_the_group_view_is_what_groups_describe_prints(shared_cluster: RunningCluster) -> None:
    topic, group = "console-groups", "console-group"
    assert (
        shared_cluster.cli("topics", "create", topic, "--partitions", "3", "--replication-factor", "2").returncode == 0
    )
    assert shared_cluster.cli("produce", topic, "--key-separator", ":", input="a:1\nb:2\nc:3\nd:4\n").returncode == 0
    consumed = shared_cluster.cli("consume", topic, "--group", group, "--from-beginning", "--exit-at-end")
    assert consumed.returncode == 0 and len(consumed.stdout.splitlines()) == 4
    # Key a again: the partition of a record the group has read and committed, so its lag is 1.
    assert shared_cluster.cli("produce", topic, "--key-separator", ":", input="a:late\n").returncode == 0
    console = start_console(shared_cluster.dir)
    try:
        with httpx.Client(base_url=console.base, headers=console.headers, timeout=30) as http:
            shown = http.get(f"/api/groups/{group}").json()
        described = json.loads(shared_cluster.cli("groups", "describe", group, "--json").stdout)
    finally:
        stop_console(console, shared_cluster.dir)
    assert shown == described
    assert shown["total_lag"] == 1 and shown["state"] == "EMPTY" and shown["coordinator"] is not None


def test_bad_input_is_one_line_and_exit_2_and_a_port_in_use_exit_5(
    shared_cluster: RunningCluster, tmp_path: Path
) -> None:
    missing = run_cli("console", "--dir", str(tmp_path / "none"), "--port", "0")
    assert (
        missing.returncode == 2
        and "no failsafe cluster at" in missing.stderr
        and len(missing.stderr.strip().splitlines()) == 1
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = run_cli("console", "--dir", str(shared_cluster.dir), "--port", str(port))
    # A port another process holds: failsafe cannot carry it out (README, "Exit codes").
    assert busy.returncode == 5 and f"port {port} on 127.0.0.1 is in use" in busy.stderr
    assert "Traceback" not in busy.stderr and len(busy.stderr.strip().splitlines()) == 1


@pytest.mark.breaks_cluster
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed (apt-get install chromium)")
def test_kill_a_leader_from_the_browser_and_start_it_again(own_cluster_dir: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    cluster = start_cluster(own_cluster_dir)
    assert (
        cluster.cli(
            "topics",
            "create",
            "orders",
            "--partitions",
            "3",
            "--replication-factor",
            "3",
            "--config",
            "min.insync.replicas=2",
        ).returncode
        == 0
    )
    console = start_console(own_cluster_dir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1300, "height": 1500})
            page.goto(console.url)
            page.evaluate("window.loadedOnce = true")
            for broker in (0, 1, 2):
                expect(page.locator(f'tr[data-node="server-{broker}"] td.state')).to_have_text(
                    "up", timeout=PAGE_TIMEOUT_MS
                )
            row = page.locator('tr[data-partition="orders-0"]')
            expect(row.locator("td.isr .in-sync")).to_have_count(3, timeout=PAGE_TIMEOUT_MS)
            expect(row.locator("td.isr .missing")).to_have_count(0)
            leader = int(row.locator("td.leader").inner_text().split()[0])

            page.click(f'button[data-action="kill"][data-role="broker"][data-node="{leader}"]')
            page.click("#confirm-yes")
            expect(page.locator(f'tr[data-node="server-{leader}"] td.state')).to_have_text(
                "down", timeout=PAGE_TIMEOUT_MS
            )
            expect(row.locator("td.isr .missing")).to_have_text(str(leader), timeout=PAGE_TIMEOUT_MS)
            new_leader = row.locator("td.leader").inner_text().split()[0]
            assert new_leader not in (str(leader), "none")
            expect(row.locator("td.isr .missing")).to_have_css("background-color", "rgb(198, 40, 40)")
            # The nodes' own metrics (their JMX exporters): the killed broker's endpoint answers nothing, a surviving
            # one counts the partitions the killed broker followed as under-replicated once it is fenced.
            expect(page.locator(f'tr[data-node="server-{leader}"] td.metrics')).to_contain_text(
                "unreadable", timeout=PAGE_TIMEOUT_MS
            )
            expect(page.locator(f'tr[data-node="server-{new_leader}"] td.metrics .bad')).to_contain_text(
                "URP", timeout=PAGE_TIMEOUT_MS
            )
            page.screenshot(path=str(tmp_path / "console-leader-killed.png"), full_page=True)

            page.click(f'button[data-action="start"][data-role="broker"][data-node="{leader}"]')
            page.click("#confirm-yes")
            expect(page.locator(f'tr[data-node="server-{leader}"] td.state')).to_have_text("up", timeout=ISR_TIMEOUT_MS)
            expect(row.locator("td.isr .missing")).to_have_count(0, timeout=ISR_TIMEOUT_MS)
            expect(row.locator("td.isr .in-sync")).to_have_count(3)
            assert page.evaluate("window.loadedOnce") is True, "the page was reloaded"
            expect(page.locator("#timeline-faults li")).to_have_count(2)
            page.screenshot(path=str(tmp_path / "console-leader-back.png"), full_page=True)
            browser.close()
    finally:
        stop_console(console, own_cluster_dir)
    actions = [(a.action, a.node, a.source, a.ok) for a in journal.last(own_cluster_dir / journal.JOURNAL_FILE, 10)]
    assert actions == [("kill", leader, "console", True), ("start", leader, "console", True)]
    status = json.loads(cluster.cli("status", "--json").stdout)
    assert [(a["action"], a["source"]) for a in status["operator_actions"]] == [
        ("kill", "console"),
        ("start", "console"),
    ]


def _acted(response: httpx.Response) -> str:
    """The node's state after a console action, or the console's own words on why it refused."""
    assert response.status_code == 200, f"{response.request.url.path}: {response.status_code} {response.text}"
    return response.json()["state"]


@pytest.mark.breaks_cluster
def test_a_running_scenario_shows_live_and_records_a_kill_clicked_in_the_console(own_cluster_dir: Path) -> None:
    import subprocess
    import sys
    import time

    from failsafe.history.load import load_history

    cluster = start_cluster(own_cluster_dir)
    console = start_console(own_cluster_dir)
    scenario = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "failsafe.cli.main",
            "run",
            "pubsub",
            "--dir",
            str(own_cluster_dir),
            "--set",
            "phases.chaos_s=25",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with httpx.Client(base_url=console.base, headers=console.headers, timeout=150) as http:

            def live() -> dict | None:
                return http.get("/api/runs").json()["live"]

            deadline = time.monotonic() + 120
            while not ((seen := live()) and seen["phase"] == "chaos" and seen["sends"]["ok"] > 0):
                assert time.monotonic() < deadline and scenario.poll() is None, f"no live chaos phase seen: {seen}"
                time.sleep(0.2)
            assert seen["id"].startswith("pubsub/") and seen["sends"]["invoked"] >= seen["sends"]["ok"]
            try:
                assert _acted(http.post("/api/nodes/broker/2/kill")) == "down"
                assert _acted(http.post("/api/nodes/broker/2/start")) == "up"
            except httpx.TransportError as e:
                raise AssertionError(f"{e!r}: {console_fate(console)}") from e
            out, err = scenario.communicate(timeout=240)
            # The runs view is at most about a second old: wait for the finished run to appear in it.
            deadline = time.monotonic() + 15
            while not (
                (runs := http.get("/api/runs").json())["live"] is None and all(r["report"] for r in runs["runs"])
            ):
                assert time.monotonic() < deadline, runs
                time.sleep(0.2)
            faults = [e for e in http.get("/api/timeline").json()["events"] if e["kind"] == "fault"]
    finally:
        if scenario.poll() is None:
            scenario.kill()
            scenario.communicate()
        stop_console(console, own_cluster_dir)
    assert "Traceback" not in err
    (run,) = [r for r in runs["runs"] if r["scenario"] == "pubsub"]
    assert run["verdict"] is not None and not run["running"] and run["report"] and runs["live"] is None
    assert [(f["action"], f["node"], f["source"]) for f in faults] == [("kill", 2, "console"), ("start", 2, "console")]
    history = load_history(own_cluster_dir / "runs" / run["id"] / "history.jsonl")
    (fault,) = history.faults.to_dicts()
    assert (fault["fault"], fault["nodes"], fault["role"]) == ("kill", ["2"], "operator (console)") and fault[
        "stop_ns"
    ] is not None
    assert cluster.cli("status").returncode == 0
