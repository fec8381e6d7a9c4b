"""Every change the console has seen since it started, in order: partition leaders and ISRs, node states, faults.

Pure: the poller hands it what it read and when; the page draws it (docs/console.md, "timeline").
Each event has a ``seq`` (1, 2, ...) so a page asks only for what it has not seen.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import count

DEFAULT_MAX_EVENTS = 50_000


class Timeline:
    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        # A list that is only appended to, and replaced (never cut in place) when it is too long:
        # the app's threads read it while the poller's thread writes.
        self._events: list[dict] = []
        self._max_events = max_events
        self._seq = count(1)
        self._partitions: dict[tuple[str, int], tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
        self._nodes: dict[tuple[str, int], str] = {}
        self.started_ms: int | None = None

    @property
    def last_seq(self) -> int:
        return self._events[-1]["seq"] if self._events else 0

    def _add(self, event: dict) -> None:
        self._events.append({"seq": next(self._seq), **event})
        if len(self._events) > self._max_events:
            self._events = self._events[-(self._max_events // 2) :]

    def observe_partitions(self, time_ms: int, partitions: list[dict]) -> None:
        """One metadata read: a partition whose leader, replicas or ISR differ from the last read is an event (and its
        first sight)."""
        if self.started_ms is None:
            self.started_ms = time_ms
        seen = set()
        for p in partitions:
            key = (p["topic"], p["partition"])
            seen.add(key)
            now = (p["leader"], tuple(p["replicas"]), tuple(p["isr"]))
            if self._partitions.get(key) != now:
                self._partitions[key] = now
                self._add(
                    {
                        "time_ms": time_ms,
                        "kind": "partition",
                        "topic": p["topic"],
                        "partition": p["partition"],
                        "leader": p["leader"],
                        "replicas": list(p["replicas"]),
                        "isr": list(p["isr"]),
                    }
                )
        for key in [k for k in self._partitions if k not in seen]:
            del self._partitions[key]
            self._add({"time_ms": time_ms, "kind": "partition-gone", "topic": key[0], "partition": key[1]})

    def observe_nodes(self, time_ms: int, nodes: list[dict]) -> None:
        if self.started_ms is None:
            self.started_ms = time_ms
        for n in nodes:
            key = (n["role"], n["id"])
            if self._nodes.get(key) != n["state"]:
                self._nodes[key] = n["state"]
                self._add({"time_ms": time_ms, "kind": "node", "role": n["role"], "node": n["id"], "state": n["state"]})

    def observe_fault(
        self,
        time_ms: int,
        source: str,
        action: str,
        role: str,
        node: int | None,
        ok: bool = True,
        error: str | None = None,
    ) -> None:
        """An operator action from the journal (source cli/console), or a running scenario's fault (source: its
        name)."""
        self._add(
            {
                "time_ms": time_ms,
                "kind": "fault",
                "source": source,
                "action": action,
                "role": role,
                "node": node,
                "ok": ok,
                **({"error": error} if error else {}),
            }
        )

    def since(self, seq: int) -> list[dict]:
        """Events after ``seq`` (all kept ones when ``seq`` is older than the oldest kept)."""
        events = self._events
        return events[bisect_right(events, seq, key=lambda e: e["seq"]) :]
