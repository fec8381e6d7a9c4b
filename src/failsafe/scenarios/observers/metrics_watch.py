"""Every node's metrics through a run: each node's JMX exporter scraped about once a second into ``metrics`` ops.

Each node is scraped on a thread of its own, so a node that answers nothing (killed, paused, cut
off) costs its own scrape the timeout and delays no other node's. A failed scrape is recorded too
(``type`` fail, ``error``): when a node stopped answering is part of what happened. The time of a
sample is taken when its scrape began.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from failsafe.cluster.observe.metrics import SCRAPE_TIMEOUT_S, ScrapeError, endpoints, scrape
from failsafe.cluster.site import RunSite
from failsafe.history.ops import metrics_sample
from failsafe.history.recorder import Recorder

SCRAPE_INTERVAL_S = 1.0


class MetricsWatch:
    """Scrapes ``urls`` ((node id, node name) -> its metrics URL) until stopped; ``for_cluster`` takes them from a
    cluster's spec."""

    def __init__(
        self,
        urls: Mapping[tuple[int, str], str],
        recorder: Recorder,
        interval_s: float = SCRAPE_INTERVAL_S,
        timeout_s: float = SCRAPE_TIMEOUT_S,
    ) -> None:
        self.urls = dict(urls)
        self.recorder = recorder
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self._scrapes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(node, url), name=f"metrics-{node[1]}", daemon=True)
            for node, url in self.urls.items()
        ]

    @classmethod
    def for_cluster(cls, cluster: RunSite, recorder: Recorder) -> MetricsWatch:
        """Every node of ``cluster.spec``; none for a cluster made without metrics."""
        urls = endpoints(cluster.spec)
        return cls({(n.node_id, n.name): url for n, url in urls.items()}, recorder)

    @property
    def scrapes(self) -> int:
        with self._lock:
            return self._scrapes

    def start(self) -> MetricsWatch:
        for thread in self._threads:
            thread.start()
        return self

    def _run(self, node: tuple[int, str], url: str) -> None:
        node_id, name = node
        while not self._stop.is_set():
            began = time.monotonic()
            now = time.time_ns()
            try:
                self.recorder.record(metrics_sample(node_id, name, scrape(url, self.timeout_s), time_ns=now))
            except ScrapeError as e:
                self.recorder.record(metrics_sample(node_id, name, error=str(e), time_ns=now))
            except Exception as e:  # noqa: BLE001 - one odd answer must not end this node's scraping for the rest of the run
                self.recorder.record(
                    metrics_sample(node_id, name, error=f"{url}: {type(e).__name__}: {e}", time_ns=now)
                )
            with self._lock:
                self._scrapes += 1
            # The interval is a floor between scrapes' starts, never a sleep added after a slow one.
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(self.timeout_s + 5)
