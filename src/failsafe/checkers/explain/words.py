"""The words of an explanation's sentence: places, faults, the nearest leader change and fault, client settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from failsafe.checkers.explain.context import Context
from failsafe.history.ops import Target

# A preferred leader election this long before a leader change is taken to be its cause.
_ELECTION_CAUSE_NS = 5_000_000_000


def place(topic: str | None, partition: int | None) -> str:
    return f"{topic}-{partition}" if partition is not None else str(topic)


def seconds(value: float) -> str:
    return f"{value:.1f}"


SAID_CHARS = 200


def fault_words(fault: Mapping[str, Any]) -> str:
    nodes = [str(n) for n in fault.get("nodes") or []]
    target = fault.get("target")
    if target in (Target.BROKER, Target.CONTROLLER) and nodes:
        on = f"{target}{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}"
    else:
        on = ", ".join(nodes) or str(target)
    role = fault.get("role")
    # A node named by id says nothing more than the nodes do ("kill of broker 2", not "kill of broker 2, broker 2").
    why = f", {role}" if role and role != "any" and role != on else ""
    # Its role for the explained partition, when the fault chose its node by another (leader of P0, a follower of P2).
    mine, part = fault.get("partition_role"), fault.get("partition")
    if mine and part and role != f"leader of {part}":
        why += "; " + {
            "leader": f"the leader of {part}",
            "no replica": f"no replica of {part}",
            "follower in the ISR": f"a follower of {part}, in its ISR",
            "follower out of the ISR": f"a follower of {part}, out of its ISR",
        }.get(mine, f"{mine} of {part}")
    said = fault.get("said")
    if said:
        # Kafka's own words about the file it found wrong, without the line's time stamp.
        why += f"; its node's log: {said.split('] ', 1)[-1][:SAID_CHARS]!r}"
    return f"fault {fault['id']} ({fault['fault']} of {on}{why})"


def _broker(leader: int | None) -> str:
    return "no leader" if leader is None or leader < 0 else f"broker {leader}"


def leader_change_words(ns: int, change: Mapping[str, Any], elections: Sequence[int], ctx: Context) -> str:
    gap = (ns - change["time_ns"]) / 1e9
    when = f"{seconds(abs(gap))} s {'after' if gap >= 0 else 'before'}"
    words = f"{when} the leader moved from {_broker(change['previous_leader'])} to {_broker(change['leader'])}"
    cause = [e for e in elections if 0 <= change["time_ns"] - e <= _ELECTION_CAUSE_NS]
    if cause:
        words += f" (preferred leader election at {ctx.s(cause[-1])} s)"
    else:
        words += f" at {change['time_s']} s"
    return words


def context_words(
    ctx: Context,
    ns: int,
    leadership: Sequence[Mapping[str, Any]],
    faults: Sequence[Mapping[str, Any]],
    elections: Sequence[int],
) -> str:
    """Where ns fell: relative to the nearest leader change of its partition and to the fault it fell in or nearest."""
    parts = []
    moves = [c for c in leadership if c["previous_leader"] is not None and c["leader"] != c["previous_leader"]]
    if moves:
        nearest = min(moves, key=lambda c: abs(ns - c["time_ns"]))
        parts.append(leader_change_words(ns, nearest, elections, ctx))
    during = [f for f in faults if f["start_ns"] <= ns and (f["stop_ns"] is None or ns <= f["stop_ns"])]
    if during:
        parts.append(f"during {fault_words(during[0])}")
    elif faults:
        nearest_fault = min(
            faults, key=lambda f: min(abs(ns - f["start_ns"]), abs(ns - (f["stop_ns"] or f["start_ns"])))
        )
        if ns < nearest_fault["start_ns"]:
            parts.append(
                f"{seconds((nearest_fault['start_ns'] - ns) / 1e9)} s before {fault_words(nearest_fault)} began"
            )
        else:
            parts.append(f"{seconds((ns - nearest_fault['stop_ns']) / 1e9)} s after {fault_words(nearest_fault)} ended")
    if not parts:
        return f"with no leader change or fault within {seconds(ctx.window_ns / 1e9)} s"
    return ", ".join(parts)


def client_words(client: Mapping[str, Any]) -> str:
    version = f" {client['client_version']}" if client.get("client_version") else ""
    settings = [f"{s['name']}={s['value']}{' (default)' if s['default'] else ''}" for s in client["settings"]]
    return f"{client['role']}: {client['client']}{version}, {', '.join(settings)}"
