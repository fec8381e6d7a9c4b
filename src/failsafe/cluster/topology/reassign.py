"""Partitions moved between brokers on a running cluster, throttled, with Kafka's kafka-reassign-partitions.

    plan     each partition of the topics with a replica on ``source`` gets ``destination`` in its place (same
             position: a preferred leader moves with its replica); the others stay
    execute  ``kafka-reassign-partitions --execute --throttle B`` with the plan's JSON (written beside the run)
    wait     until every moved partition's replica set is the plan's and all of it is in the ISR (from metadata, no
             JVM per poll)
    verify   ``kafka-reassign-partitions --verify`` once: Kafka says each move completed, and clears the throttles

A broker killed mid-move stops its part of the move; the controller finishes it once the broker is back (Kafka's
reassignment is persistent in the metadata log), so a wait outlives a restart.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from failsafe.errors import BrokerUnreachable, FailsafeError, KafkaClientError, UserError
from failsafe.jvm.kafka import KafkaDist
from failsafe.tools.admin import fetch_metadata, new_admin
from failsafe.tools.connections import bootstrap_args
from failsafe.tools.kafka_tools import tool_output
from failsafe.waiting import WaitTimeout, wait_until

TOOL_TIMEOUT_S = 60.0
MOVE_TIMEOUT_S = 300.0
POLL_S = 0.5

Assignment = dict[tuple[str, int], list[int]]


class ReassignmentFailed(FailsafeError):
    """kafka-reassign-partitions refused the plan, or the move did not complete in time."""


@dataclass(frozen=True)
class Move:
    """What a reassignment moved and how long each part took."""

    plan: Assignment
    throttle_bytes: int | None
    verified: str = ""  # what --verify printed about the moved partitions


def plan_move(assignment: Mapping[tuple[str, int], Sequence[int]], source: int, destination: int) -> Assignment:
    """Each partition with a replica on ``source`` (and none on ``destination``) gets ``destination`` in its place."""
    return {
        tp: [destination if r == source else r for r in replicas]
        for tp, replicas in sorted(assignment.items())
        if source in replicas and destination not in replicas
    }


def plan_json(plan: Assignment) -> str:
    """The plan in kafka-reassign-partitions' --reassignment-json-file format."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [{"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(plan.items())],
        },
        indent=1,
    )


_VERIFY_LINE = re.compile(r"Reassignment of partition (\S+)-(\d+) is (complete|completed|still in progress)\b")


def verified(output: str) -> dict[tuple[str, int], bool]:
    """--verify's verdict per partition: True when it says the reassignment completed."""
    return {(m.group(1), int(m.group(2))): m.group(3) != "still in progress" for m in _VERIFY_LINE.finditer(output)}


def assignment(bootstrap_servers: str, topics: Sequence[str], timeout_s: float = 10.0) -> tuple[Assignment, Assignment]:
    """The replicas and the ISR of every partition of ``topics``, from the cluster's metadata."""
    metadata = fetch_metadata(new_admin(bootstrap_servers), bootstrap_servers, timeout_s)
    replicas: Assignment = {}
    isr: Assignment = {}
    for topic in topics:
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            raise UserError(f"no topic {topic} at {bootstrap_servers}: name one of the cluster's topics (--topic)")
        for number, partition in described.partitions.items():
            replicas[(topic, number)] = list(partition.replicas)
            isr[(topic, number)] = list(partition.isrs)
    return replicas, isr


def _tool(dist: KafkaDist, bootstrap_servers: str, args: list[str]) -> str:
    return tool_output(
        dist,
        "reassign-partitions",
        [*bootstrap_args(bootstrap_servers), *args],
        TOOL_TIMEOUT_S,
        ReassignmentFailed,
        args[0],
    )


def execute(
    dist: KafkaDist, bootstrap_servers: str, plan: Assignment, plan_file: Path, throttle_bytes: int | None
) -> None:
    """Write the plan and start the move (throttled at ``throttle_bytes`` per second per broker when given)."""
    if not plan:
        raise ReassignmentFailed("nothing to move: no partition has a replica on the source broker")
    plan_file.write_text(plan_json(plan))
    throttle = ["--throttle", str(throttle_bytes)] if throttle_bytes else []
    _tool(dist, bootstrap_servers, ["--execute", "--reassignment-json-file", str(plan_file), *throttle])


def moved(bootstrap_servers: str, plan: Assignment) -> bool:
    """Every partition of the plan has exactly its replicas, all in the ISR."""
    replicas, isr = assignment(bootstrap_servers, sorted({t for t, _ in plan}))
    return all(replicas.get(tp) == want and set(want) <= set(isr.get(tp, ())) for tp, want in plan.items())


def wait_moved(
    bootstrap_servers: str,
    plan: Assignment,
    timeout_s: float = MOVE_TIMEOUT_S,
    stop: threading.Event | None = None,
) -> None:
    """Until the plan is in force (``moved``); a metadata request that fails is "not yet" (a broker may be down)."""

    def done() -> bool:
        if stop is not None and stop.is_set():
            raise ReassignmentFailed("the run ended before the move completed")
        return moved(bootstrap_servers, plan)

    try:
        # A broker may be down mid-move (a kill): a metadata request nobody answered is "not yet".
        wait_until(
            done,
            timeout_s,
            f"the move did not complete within {timeout_s:g}s",
            POLL_S,
            (KafkaClientError, BrokerUnreachable),
        )
    except WaitTimeout as e:
        raise ReassignmentFailed(str(e)) from e


def verify(dist: KafkaDist, bootstrap_servers: str, plan: Assignment, plan_file: Path) -> str:
    """``--verify``: raise unless Kafka says every move completed (it then clears the throttles); returns its lines
    about the plan's partitions."""
    out = _tool(dist, bootstrap_servers, ["--verify", "--reassignment-json-file", str(plan_file)])
    said = verified(out)
    pending = sorted(f"{t}-{p}" for (t, p) in plan if not said.get((t, p)))
    if pending:
        raise ReassignmentFailed(f"kafka-reassign-partitions --verify does not say {', '.join(pending)} completed")
    return f"{len(said)} partition(s) completed"


def start(
    dist: KafkaDist,
    bootstrap_servers: str,
    topics: Sequence[str],
    source: int,
    destination: int,
    plan_file: Path,
    throttle_bytes: int | None = None,
) -> Assignment:
    """Plan the move of every replica of ``topics`` on ``source`` to ``destination``, execute it; return the plan."""
    before, _ = assignment(bootstrap_servers, topics)
    plan = plan_move(before, source, destination)
    execute(dist, bootstrap_servers, plan, plan_file, throttle_bytes)
    return plan


def finish(
    dist: KafkaDist,
    bootstrap_servers: str,
    plan: Assignment,
    plan_file: Path,
    timeout_s: float = MOVE_TIMEOUT_S,
    stop: threading.Event | None = None,
) -> str:
    """Wait until the plan is in force, then --verify it (which clears the throttles); returns what --verify said."""
    wait_moved(bootstrap_servers, plan, timeout_s, stop)
    return verify(dist, bootstrap_servers, plan, plan_file)


def reassign(
    dist: KafkaDist,
    bootstrap_servers: str,
    topics: Sequence[str],
    source: int,
    destination: int,
    plan_file: Path,
    throttle_bytes: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
    timeout_s: float = MOVE_TIMEOUT_S,
) -> Move:
    """Move every replica of ``topics`` on ``source`` to ``destination``, wait until it is done, verify it."""
    plan = start(dist, bootstrap_servers, topics, source, destination, plan_file, throttle_bytes)
    progress(f"moving {len(plan)} partition(s) from broker {source} to broker {destination}")
    return Move(plan, throttle_bytes, finish(dist, bootstrap_servers, plan, plan_file, timeout_s))
