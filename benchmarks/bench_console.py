"""The console's two numbers: how soon a page shows a new leader after a broker kill, and what an idle console costs.

    .venv/bin/python benchmarks/bench_console.py --dir /tmp/failsafe-bench-cluster --rounds 5 --idle-s 60 --out \
        docs/benchmarks/console.json

On the 3-broker cluster at --dir (started for the benchmark when none is there, and stopped after),
with 'failsafe console' running as a user runs it:

- idle CPU: the console process's CPU time (user + system, psutil) over --idle-s seconds with no
  page open, one page open and three pages open (headless Debian chromium through playwright; the
  browser's own CPU is not counted), as a percentage of one core.
- kill -> page: each round kills the leader of console-bench-0 through the console's API (what the
  kill button does), and timestamps (wall clock, one machine) the metadata change as a separate
  client sees it (a Metadata request every PROBE_S), and the moment the page's leader cell shows the
  new leader (a MutationObserver in the page). Then the broker is started again and the preferred
  leaders elected, so every round kills a leader of the same partition.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from failsafe.tools.admin import new_admin  # noqa: E402
from tests.e2e.console_helpers import start_console, stop_console  # noqa: E402

TOPIC = "console-bench"
PROBE_S = 0.05
CHROMIUM = "/usr/bin/chromium"
OBSERVER = """
window.leaderSeen = [];
new MutationObserver(() => {
  const cell = document.querySelector('tr[data-partition="TOPIC-0"] td.leader');
  const text = cell ? cell.textContent.split(' ')[0] : null;
  if (text !== window.lastLeader) { window.lastLeader = text; window.leaderSeen.push([text, Date.now()]); }
}).observe(document.body, {subtree: true, childList: true, characterData: true});
""".replace("TOPIC", TOPIC)


def cpu_percent(pid: int, seconds: float) -> float:
    proc = psutil.Process(pid)
    before = proc.cpu_times()
    t0 = time.monotonic()
    # Measuring over a span of time is the point here, not synchronisation.
    time.sleep(seconds)
    after = proc.cpu_times()
    used = (after.user - before.user) + (after.system - before.system)
    return round(100 * used / (time.monotonic() - t0), 2)


class MetadataProbe:
    """The leader of TOPIC-0 as a plain client sees it, every PROBE_S: the times it changed."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = new_admin(bootstrap)
        self.changes: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = None
        while not self._stop.wait(PROBE_S):
            try:
                leader = self.admin.list_topics(TOPIC, timeout=1).topics[TOPIC].partitions[0].leader
            except Exception:  # noqa: BLE001 - a probe that misses one read just reads again
                continue
            if leader != last:
                self.changes.append((leader, time.time()))
                last = leader

    def leader(self) -> int | None:
        return self.changes[-1][0] if self.changes else None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(what)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with cluster_at(args.dir) as cluster:
        admin = new_admin(cluster.bootstrap_servers)
        if TOPIC not in admin.list_topics(timeout=10).topics:
            from failsafe.tools.topics import Topics

            Topics(cluster.bootstrap_servers).create(TOPIC, 3, 3, {"min.insync.replicas": "2"})
        console = start_console(args.dir)
        summary: dict = {
            "cluster": {"brokers": cluster.spec.brokers, "kafka_version": cluster.spec.kafka_version},
            "idle_s": args.idle_s,
            "probe_interval_ms": PROBE_S * 1000,
        }
        try:
            idle = {"no page": cpu_percent(console.proc.pid, args.idle_s)}
            with (
                sync_playwright() as p,
                httpx.Client(base_url=console.base, headers=console.headers, timeout=180) as http,
            ):
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                pages = [browser.new_page() for _ in range(3)]
                pages[0].goto(console.url)
                pages[0].wait_for_selector(f'tr[data-partition="{TOPIC}-0"]')
                idle["1 page"] = cpu_percent(console.proc.pid, args.idle_s)
                for page in pages[1:]:
                    page.goto(console.url)
                idle["3 pages"] = cpu_percent(console.proc.pid, args.idle_s)
                for page in pages[1:]:
                    page.close()
                summary["idle_cpu_percent_of_one_core"] = idle
                print(idle, flush=True)

                page = pages[0]
                page.evaluate(OBSERVER)
                probe = MetadataProbe(cluster.bootstrap_servers)
                rounds = []
                try:
                    for _ in range(args.rounds):
                        (leader,) = wait_for(
                            lambda: (probe.leader(),) if probe.leader() not in (None, -1) else None,
                            30,
                            "no leader of the partition",
                        )
                        page.evaluate("window.leaderSeen = []")
                        seen_before = len(probe.changes)
                        kill_s = time.time()
                        assert http.post(f"/api/nodes/broker/{leader}/kill").status_code == 200
                        new = wait_for(
                            lambda old=leader, n=seen_before: next(
                                (c for c in probe.changes[n:] if c[0] not in (old, -1)), None
                            ),
                            60,
                            "no new leader in the metadata",
                        )
                        shown = wait_for(
                            lambda old=leader: next(
                                (s for s in page.evaluate("window.leaderSeen") if s[0] not in (str(old), "none")), None
                            ),
                            30,
                            "the page did not show the new leader",
                        )
                        row = {
                            "killed": leader,
                            "new_leader": new[0],
                            "kill_to_metadata_ms": round((new[1] - kill_s) * 1000),
                            "metadata_to_page_ms": round(shown[1] - new[1] * 1000),
                            "kill_to_page_ms": round(shown[1] - kill_s * 1000),
                        }
                        rounds.append(row)
                        print(row, flush=True)
                        assert http.post(f"/api/nodes/broker/{leader}/start").status_code == 200
                        wait_for(
                            lambda: all(
                                len(p.isrs) == 3
                                for p in admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions.values()
                            ),
                            120,
                            "the ISR did not fill again",
                        )
                        assert http.post("/api/elect-leaders").status_code in (200, 500)
                        preferred = admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions[0].replicas[0]
                        wait_for(
                            lambda want=preferred: probe.leader() == want, 30, "the preferred leader did not come back"
                        )
                finally:
                    probe.stop()
                browser.close()
        finally:
            stop_console(console, args.dir)
    lag = [r["metadata_to_page_ms"] for r in rounds]
    summary["rounds"] = rounds
    summary["metadata_to_page_ms"] = {"median": statistics.median(lag), "max": max(lag), "min": min(lag)}
    summary["kill_to_page_ms_median"] = statistics.median(r["kill_to_page_ms"] for r in rounds)
    summary["kill_to_metadata_ms_median"] = statistics.median(r["kill_to_metadata_ms"] for r in rounds)
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
