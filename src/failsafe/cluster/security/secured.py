"""A failsafe cluster in a security mode (``failsafe up --security``, ``cluster.security`` of a scenario): its
secrets made once, before any node's properties; each KRaft node's listener protocols and security properties; its
SCRAM users in the storage format; its clients' properties files registered where every client looks
(tools/connections.py); the ACLs of failsafe's client principal once the brokers answer.

    DIR/secrets/...                          the CA, certificates, passwords (store.py)
    DIR/secrets/clients/failsafe-*.properties  each of failsafe's users as a Java client reads it (owner-only)
"""

from __future__ import annotations

from pathlib import Path

from failsafe.cluster.security.acls import client_acls
from failsafe.cluster.security.brokers import node_security_properties, protocol_map
from failsafe.cluster.security.modes import CLIENT, CONTROLLER, REPLICATION, security_mode
from failsafe.cluster.security.store import ADMIN_USER, CLIENT_USER, ClusterSecrets
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.tools import connections
from failsafe.tools.security import ClientSecurity, from_properties, secret_dir

SECRETS = "secrets"
CLIENTS = "clients"
ATTACHED = "attached.properties"
# Which of failsafe's users each kind of client connects as (tools/connections.py).
CLIENT_FILES = {connections.CLIENT: CLIENT_USER, connections.ADMIN: ADMIN_USER}


def secrets_of(root: Path, spec: ClusterSpec) -> ClusterSecrets | None:
    """The cluster's secrets, or None for a plaintext cluster."""
    mode = security_mode(spec.security)
    return ClusterSecrets(Path(root) / SECRETS, mode) if mode.secured else None


def ensure_secrets(root: Path, spec: ClusterSpec) -> ClusterSecrets | None:
    """Make the cluster's secrets unless they are there (a cluster's certificates and passwords never change by
    themselves: a rotation is a scenario's act), and its clients' properties files."""
    secrets = secrets_of(root, spec)
    if secrets is None:
        return None
    if not (secrets.directory / "passwords.json").is_file():
        addresses = {n.name: (n.address, n.client_address) for n in spec.nodes()}
        secrets = ClusterSecrets.create(secrets.directory, secrets.mode, addresses)
    secret_dir(secret_dir(Path(root) / SECRETS) / CLIENTS)
    for user in CLIENT_FILES.values():
        secrets.client_security(user).write_java_config(client_file(root, user))
    return secrets


def client_file(root: Path, user: str) -> Path:
    return Path(root) / SECRETS / CLIENTS / f"{user}.properties"


def listener_roles(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    """Every listener name in ``node``'s protocol map with its role, in the order the map has always had."""
    roles = {"CONTROLLER": CONTROLLER, "PLAINTEXT": CLIENT}
    if node.replication_port:
        roles["REPLICATION"] = REPLICATION
    if spec.direct_port(node):
        roles["DIRECT"] = CLIENT
    return roles


def node_properties(spec: ClusterSpec, node: NodeSpec, root: Path) -> dict[str, str]:
    """``listener.security.protocol.map`` and, in a secured mode, what each listener needs (brokers.py). The client
    listener keeps its name PLAINTEXT whatever protocol it speaks: a listener's name is only a name to Kafka."""
    mode, roles = security_mode(spec.security), listener_roles(spec, node)
    props = {"listener.security.protocol.map": protocol_map(mode, roles)}
    names = [n.name for n in spec.nodes()]
    return props | node_security_properties(mode, secrets_of(root, spec), node.name, roles, names)


def format_args(root: Path, spec: ClusterSpec) -> list[str]:
    """kafka-storage format's ``--add-scram`` for the SCRAM users; holds passwords: never log the command line."""
    secrets = secrets_of(root, spec)
    return secrets.scram_format_args() if secrets else []


def register_clients(root: Path, spec: ClusterSpec, addresses: list[str]) -> None:
    """Every client failsafe runs against ``addresses`` from now on uses this cluster's settings (none if
    plaintext)."""
    secured = security_mode(spec.security).secured
    files = {kind: client_file(root, user) for kind, user in CLIENT_FILES.items()} if secured else None
    connections.register(addresses, files)


def attach_clients(root: Path, path: Path, addresses: list[str]) -> ClientSecurity:
    """A user's client properties file for a cluster failsafe did not start (``--attach --client-config``), read and
    checked whole (one line, exit 2), kept as Kafka's Java clients spell it in DIR/secrets/clients (owner-only: the
    user may have written librdkafka's names, which Kafka's tools do not read) and registered for ``addresses``, as
    both of failsafe's users: on a cluster of yours, failsafe is whoever that file says."""
    security = from_properties(path)
    copy = secret_dir(secret_dir(Path(root) / SECRETS) / CLIENTS) / ATTACHED
    security.write_java_config(copy)
    connections.register(addresses, dict.fromkeys(connections.USERS, copy))
    return security


def grant_client_acls(admin: object, spec: ClusterSpec, timeout_s: float) -> int:
    """Allow failsafe's client principal what its clients ask of Kafka (acls.py), through ``admin`` (an AdminClient of
    failsafe-admin). Creating a binding that exists changes nothing, so a restart grants them again harmlessly.
    Returns the number of bindings."""
    if not security_mode(spec.security).authorizer:
        return 0
    bindings = client_acls(f"User:{CLIENT_USER}")
    for future in admin.create_acls(bindings, request_timeout=timeout_s).values():  # type: ignore[attr-defined]
        future.result(timeout=timeout_s)
    return len(bindings)
