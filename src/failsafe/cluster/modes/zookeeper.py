"""What ZooKeeper says about a ZooKeeper-mode cluster, read with kazoo (a ZooKeeper client library).

Kafka keeps its ZooKeeper-mode state in znodes (Kafka's ``kafka.zk.ZkData``):

    /brokers/ids/N          ephemeral: broker N is registered (its ZooKeeper session is alive)
    /controller             ephemeral: {"brokerid": N, ...}, the broker elected controller
                            (a KRaft controller writes it too during a migration, with kraftControllerEpoch)
    /cluster/id             {"id": "..."}, the cluster id the first broker generated
    /migration              the ZooKeeper-to-KRaft migration's state, written by the KRaft controller

A ZooKeeper node's own role (leader, follower, standalone) comes from its ``srvr`` command, which
kazoo sends over the node's client port.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

CONNECT_TIMEOUT_S = 2.0

# kazoo logs every refused connection as a warning; failsafe reports what it could not read instead.
logging.getLogger("kazoo").addHandler(logging.NullHandler())
logging.getLogger("kazoo").propagate = False

ZooKeeperUnavailable = (KazooException, KazooTimeoutError, OSError)


@contextmanager
def connected(hosts: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Iterator[KazooClient]:
    """A kazoo client connected to ``hosts`` ("127.0.0.1:2181,..."); raises one of ZooKeeperUnavailable if none
    answers."""
    client = KazooClient(
        hosts=hosts, timeout=max(timeout_s, 1.0), connection_retry={"max_tries": 0}, command_retry={"max_tries": 0}
    )
    try:
        client.start(timeout=timeout_s)
        yield client
    finally:
        client.stop()
        client.close()


def _json(client: KazooClient, path: str) -> dict | None:
    try:
        data, _ = client.get(path)
    except NoNodeError:
        return None
    try:
        value = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def registered_brokers(client: KazooClient) -> set[int]:
    try:
        return {int(child) for child in client.get_children("/brokers/ids")}
    except NoNodeError:
        return set()


def controller(client: KazooClient) -> dict | None:
    """The /controller znode: {"brokerid": N, ...}; a KRaft controller adds "kraftControllerEpoch"."""
    return _json(client, "/controller")


def controller_id(client: KazooClient) -> int | None:
    data = controller(client)
    return int(data["brokerid"]) if data and "brokerid" in data else None


def cluster_id(client: KazooClient) -> str | None:
    data = _json(client, "/cluster/id")
    return str(data["id"]) if data and "id" in data else None


def migration_state(client: KazooClient) -> dict | None:
    return _json(client, "/migration")


def server_mode(port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """The node's role as its ``srvr`` command says (leader, follower, standalone), or None if it does not serve."""
    try:
        with connected(f"127.0.0.1:{port}", timeout_s) as client:
            text = client.command(b"srvr")
    except ZooKeeperUnavailable:
        return None
    for line in text.splitlines():
        if line.startswith("Mode:"):
            return line.partition(":")[2].strip()
    return None


def view(hosts: str, timeout_s: float = CONNECT_TIMEOUT_S) -> tuple[set[int], int | None] | None:
    """(registered broker ids, controller broker id) as ZooKeeper has them, or None if ZooKeeper does not answer."""
    try:
        with connected(hosts, timeout_s) as client:
            return registered_brokers(client), controller_id(client)
    except ZooKeeperUnavailable:
        return None
