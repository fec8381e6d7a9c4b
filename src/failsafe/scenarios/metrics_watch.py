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
from typing import Any

from failsafe.cluster.metrics import SCRAPE_TIMEOUT_S, ScrapeError, endpoints, scrape
from failsafe.cluster.spec import ClusterSpec
from failsafe.history.ops import metrics_sample
from failsafe.history.recorder import Recorder

SCRAPE_INTERVAL_S = 1.0


class MetricsWatch:
    """Scrapes ``urls`` (node id -> its metrics URL) until stopped; ``for_cluster`` takes them from a cluster's spec."""

    def __init__(self, urls: Mapping[int, str], recorder: Recorder, interval_s: float = SCRAPE_INTERVAL_S,
                 timeout_s: float = SCRAPE_TIMEOUT_S) -> None:
        self.urls = dict(urls)
        self.recorder = recorder
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.scrapes = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(node, url), name=f"metrics-{node}", daemon=True)
                         for node, url in self.urls.items()]

    @classmethod
    def for_cluster(cls, cluster: Any, recorder: Recorder) -> MetricsWatch:
        """Every node of ``cluster.spec``; none for a cluster made without metrics, or a test's fake without a spec."""
        spec = getattr(cluster, "spec", None)
        return cls(endpoints(spec) if isinstance(spec, ClusterSpec) else {}, recorder)

    def start(self) -> MetricsWatch:
        for thread in self._threads:
            thread.start()
        return self

    def _run(self, node: int, url: str) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            now = time.time_ns()
            try:
                self.recorder.record(metrics_sample(node, scrape(url, self.timeout_s), time_ns=now))
            except ScrapeError as e:
                self.recorder.record(metrics_sample(node, error=str(e), time_ns=now))
            self.scrapes += 1
            # The interval is a floor between scrapes' starts, never a sleep added after a slow one.
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(self.timeout_s + 5)
