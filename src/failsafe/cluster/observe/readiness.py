"""When is a cluster ready? Observable conditions only, each with a timeout.

A controller is ready when its CONTROLLER listener accepts connections; a broker when the
metadata served by every broker lists it (a broker appears in metadata only once it has
registered with the controller quorum and is unfenced).
"""

from __future__ import annotations

import json
import socket

from confluent_kafka import KafkaException

from failsafe.tools.admin import new_admin

CONNECT_TIMEOUT_S = 0.5


def port_accepts(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def registered_brokers(port: int, timeout_s: float = 2.0, host: str = "127.0.0.1") -> set[int]:
    """The broker ids in the metadata served by the broker on ``host:port`` (empty if it does not answer)."""
    if not port_accepts(port, host):
        return set()
    admin = new_admin(f"{host}:{port}")
    try:
        return set(admin.list_topics(timeout=timeout_s).brokers)
    except KafkaException:
        return set()


def under_replicated(port: int, timeout_s: float = 5.0, host: str = "127.0.0.1") -> list[str] | None:
    """The partitions whose ISR is smaller than their replicas, as the broker on ``host:port`` sees them (None: no
    answer)."""
    if not port_accepts(port, host):
        return None
    admin = new_admin(f"{host}:{port}")
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException:
        return None
    return sorted(
        f"{t}-{p}"
        for t, tm in metadata.topics.items()
        for p, pm in tm.partitions.items()
        if pm.leader < 0 or len(pm.isrs) < len(pm.replicas)
    )


QUORUM_STATE = "__cluster_metadata-0/quorum-state"


def quorum_leader(quorum_states: list[str | None]) -> int | None:
    """The KRaft quorum leader as the controllers last persisted it (highest epoch wins), from the text of each
    controller's ``__cluster_metadata-0/quorum-state`` (None: unreadable), which a voter writes when it learns of a new
    leader."""
    best: tuple[int, int] | None = None
    for text in quorum_states:
        try:
            data = json.loads(text) if text else None
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        leader, epoch = data.get("leaderId", -1), data.get("leaderEpoch", -1)
        if leader is not None and leader >= 0 and (best is None or epoch > best[1]):
            best = (leader, epoch)
    return best[0] if best else None
