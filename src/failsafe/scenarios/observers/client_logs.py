"""The client's own words next to an explanation: lines of its librdkafka or Java log near the anomaly.

An explanation (checkers/explain/sentences.py) is built from the history alone. The client's log
(``logs/<process>.client.log``, named by the worker's client-config op) can say what the history
can only suggest: that librdkafka bumped its idempotent producer's epoch, that messages timed out
in flight, that a request was retried. ``cite`` adds to each explanation the log lines of its
client that match one of ``NOTABLE`` within ``window_s`` of its moment, and ends its sentence with
the most telling one. The log is read here, outside the pure checkers, because it is a file
beside the history and not part of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

# What is worth citing, most telling first: (name, pattern). librdkafka's lines as its debug
# contexts eos, broker and topic write them (rdkafka_idempotence.c, rdkafka_broker.c); the Java
# client's as log4j writes them (Sender, TransactionManager).
NOTABLE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("epoch-bump", re.compile(r"bumped epoch to PID\{[^}]*\}|epoch bump for .*|[Bb]umping (the )?(producer )?epoch.*")),
    ("new-producer-id", re.compile(r"Acquired PID\{[^}]*\}|ProducerId set to .*")),
    (
        "timed-out",
        re.compile(
            r"Timed out ProduceRequest in flight.*|request\(s\) timed out.*|message\(s\) timed out.*"
            r"|Expiring \d+ record.*|ProduceRequest failed: Local: Timed out.*"
        ),
    ),
    (
        "sequence-error",
        re.compile(r".*(OUT_OF_ORDER_SEQUENCE|OutOfOrderSequence|UNKNOWN_PRODUCER_ID|[Ii]nvalid sequence).*"),
    ),
    # Produce retries only: metadata retries and the retry-buffer counts of a closing handle say nothing about a write.
    ("retry", re.compile(r"ProduceRequest failed:.*Retry.*|Got error produce response.*retrying.*")),
)
_LIBRDKAFKA_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3}) (.*)$")
# log4j's default pattern in failsafe's tools config: "[2026-11-23 16:54:32,870] LEVEL message".
_LOG4J_TIME = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3})\] (.*)$")
MAX_LINES_PER_EXPLANATION = 5
MAX_LINE_CHARS = 300
DEFAULT_WINDOW_S = 15.0


@dataclass(frozen=True)
class LogLine:
    time_ns: int
    kind: str
    text: str


def _parse_time(date: str, millis: str) -> int:
    # The log's times are the machine's local time, as the history's are taken on the same machine.
    return int(datetime.strptime(date, "%Y-%m-%d %H:%M:%S").timestamp()) * 1_000_000_000 + int(millis) * 1_000_000


def notable_lines(lines: Iterable[str]) -> list[LogLine]:
    """The lines of a client log that match NOTABLE, with their time; lines without a time are skipped."""
    found = []
    for line in lines:
        match = _LIBRDKAFKA_TIME.match(line) or _LOG4J_TIME.match(line)
        if not match:
            continue
        text = match.group(3).strip()
        kind = next((name for name, pattern in NOTABLE if pattern.search(text)), None)
        if kind is not None:
            found.append(LogLine(_parse_time(match.group(1), match.group(2)), kind, text[:MAX_LINE_CHARS]))
    return found


class ClientLogs:
    """The notable lines of each client log of one run, read once per file."""

    def __init__(self, run_path: Path) -> None:
        self.run_path = run_path
        self._cache: dict[str, list[LogLine]] = {}

    def lines(self, relative: str) -> list[LogLine]:
        if relative not in self._cache:
            path = self.run_path / relative
            try:
                with path.open(errors="replace") as f:
                    self._cache[relative] = notable_lines(f)
            except OSError:
                self._cache[relative] = []
        return self._cache[relative]


def _near(lines: list[LogLine], ns: int, window_ns: int, partition_tag: str | None) -> list[LogLine]:
    rank = {name: i for i, (name, _) in enumerate(NOTABLE)}
    close = [line for line in lines if abs(line.time_ns - ns) <= window_ns]

    # A line naming the explanation's partition ("foo [0]") before one about another partition.
    def key(line: LogLine) -> tuple[int, int, int]:
        other = 1 if partition_tag and "[" in line.text and partition_tag not in line.text else 0
        return (rank[line.kind], other, abs(line.time_ns - ns))

    return sorted(close, key=key)[:MAX_LINES_PER_EXPLANATION]


def cite(
    explanations: list[dict[str, Any]], run_path: Path, window_s: float = DEFAULT_WINDOW_S
) -> list[dict[str, Any]]:
    """Each explanation with ``client_log`` (its client's notable lines near it) and, when there is one, the sentence
    ending with the most telling line. Explanations without a client log or a time are left as they are."""
    logs = ClientLogs(run_path)
    window_ns = int(window_s * 1e9)
    for e in explanations:
        client: Mapping[str, Any] | None = e.get("client")
        ns, time_s = e.get("time_ns"), e.get("time_s")
        if not client or not client.get("log") or ns is None or time_s is None:
            continue
        tag = (
            f"{e['topic']} [{e['partition']}]"
            if e.get("topic") is not None and e.get("partition") is not None
            else None
        )
        picked = _near(logs.lines(str(client["log"])), int(ns), window_ns, tag)
        if not picked:
            continue
        cited = [
            {"time_s": round(time_s + (line.time_ns - ns) / 1e9, 1), "kind": line.kind, "line": line.text}
            for line in picked
        ]
        e["client_log"] = sorted(cited, key=lambda c: c["time_s"])
        best = cited[0]
        e["sentence"] = (
            f"{e.get('sentence', '')}; {client.get('client', 'the client')} logged at {best['time_s']} s: "
            f'"{best["line"]}" ({client["log"]})'
        )
    return explanations


def cite_results(results: dict[str, Any], run_path: Path) -> dict[str, Any]:
    """results["explanations"] cited in place (a run without explanations is returned as it is)."""
    explanations = results.get("explanations")
    if isinstance(explanations, list):
        results["explanations"] = cite([e for e in explanations if isinstance(e, dict)], run_path)
    return results
