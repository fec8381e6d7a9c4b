"""A broker's certificate changed while it serves, through a dynamic listener update (docs/security.md): what operators
do on a running secured cluster, made under load.

    certificate-rotated   a new certificate for the broker from the cluster's CA (same name, same addresses), put in
                          force on each TLS listener it serves (``listener.name.<listener>.ssl.keystore.location``,
                          incrementalAlterConfigs on the broker): a rotation without a restart. The undo deletes
                          those dynamic configs, so the broker's own certificate is in force again: a second rotation.
    certificate-expired   the same with a certificate whose validity ended yesterday, on the listeners clients
                          dial: what a broker serves when nobody renewed its certificate in time. Sessions already
                          open go on (TLS checks a certificate at the handshake only); every new client connection
                          to the broker fails its handshake. The undo puts the broker's own certificate back. The
                          inter-broker listener keeps its certificate: Kafka refuses an expired one there (its
                          SslFactory checks an inter-broker listener's new key store against its trust store with a
                          handshake, keystoreVerifiableUsingTruststore; a client listener's only for the same names:
                          measured on Kafka 4.3.1, docs/security.md).

Either fault waits until every listener it changed presents the new certificate (a TLS handshake that reads the
serial number) and records how long that took; the expired one also records what a client that checks the
certificate is told. Kafka keeps dynamic broker configs in the metadata log, so a broker restarted while the fault
is in force comes back with the changed certificate.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from cryptography import x509

from failsafe.cluster.security import secured
from failsafe.cluster.security.modes import CONTROLLER, security_mode
from failsafe.cluster.security.pki import DEFAULT_VALID_DAYS, Identity, issue
from failsafe.cluster.security.store import ADMIN_USER, ClusterSecrets, node_certificate_names
from failsafe.cluster.site import RunSite
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.faults.base import AppliedFault, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.nodes import NodeChoice, check_node_choice, chosen, target_of
from failsafe.faults.registry import register
from failsafe.faults.security import FAMILY
from failsafe.tools.admin import describe_error, new_admin
from failsafe.waiting import WaitTimeout, wait_until

CERTIFICATE_ROTATED = "certificate-rotated"
CERTIFICATE_EXPIRED = "certificate-expired"
ADMIN_TIMEOUT_S = 60.0
ATTEMPT_TIMEOUT_S = 10.0
# How long a broker may take to put a changed key store in force on every processor of a listener (it reads the
# metadata record, then rebuilds each processor's SSL engine in turn: up to a few seconds on 2 loaded cores).
IN_FORCE_TIMEOUT_S = 30.0
HANDSHAKE_TIMEOUT_S = 5.0
# Kafka's default num.network.threads; _until_presented probes each listener twice that many times in a row.
KAFKA_NETWORK_THREADS = 3
PROBES_PER_PROCESSOR = 2
# Where the changed certificates go: DIR/secrets/nodes/<fault>-N/server-K.pem, a new directory each time (the file's
# name is the node's: issue() names it after the certificate's CN).
ROTATIONS = "nodes"


def _fits(spec: ClusterSpec) -> str | None:
    mode = security_mode(spec.security)
    return (
        None
        if mode.needs_certificates and mode.client.tls
        else f"its listeners are {spec.security}: brokers serve no certificate (failsafe up --security tls)"
    )


@dataclass(frozen=True)
class Listener:
    """One TLS listener a broker serves: its name as Kafka reads it, and where it is."""

    name: str
    host: str
    port: int

    @property
    def keystore_config(self) -> str:
        return f"listener.name.{self.name.lower()}.ssl.keystore.location"


def tls_listeners(spec: ClusterSpec, node: NodeSpec, inter_broker: bool = True) -> list[Listener]:
    """The broker's listeners that speak TLS, but its controller listener (a controller's certificate is not a
    broker's to rotate) and, unless ``inter_broker``, the listener other brokers fetch from."""
    mode, found = security_mode(spec.security), []
    inter_broker_name = "REPLICATION" if node.replication_port else "PLAINTEXT"
    for name, role in secured.listener_roles(spec, node).items():
        if role == CONTROLLER or not mode.listening(role).tls or (name == inter_broker_name and not inter_broker):
            continue
        if name == "REPLICATION":
            found.append(Listener(name, node.address, node.replication_port))
        elif name == "PLAINTEXT":
            found.append(Listener(name, node.client_address, spec.listener_port(node)))
        else:
            found.append(Listener(name, node.client_address, spec.direct_port(node)))
    return found


def presented_serial(listener: Listener, secrets: ClusterSecrets) -> int:
    """The serial number of the certificate ``listener`` presents to a new connection now (read, not checked: an
    expired one is read too). Mutual TLS listeners are shown failsafe's admin certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _show_client_certificate(context, secrets)
    with (
        socket.create_connection((listener.host, listener.port), HANDSHAKE_TIMEOUT_S) as raw,
        context.wrap_socket(raw) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).serial_number


def handshake_verdict(listener: Listener, secrets: ClusterSecrets) -> str:
    """What a new client that trusts the cluster's CA is told by ``listener``: "accepted", or its refusal."""
    context = ssl.create_default_context(cafile=str(secrets.authority.cert_file))
    _show_client_certificate(context, secrets)
    try:
        with (
            socket.create_connection((listener.host, listener.port), HANDSHAKE_TIMEOUT_S) as raw,
            context.wrap_socket(raw, server_hostname=listener.host),
        ):
            return "accepted"
    except ssl.SSLCertVerificationError as e:
        return f"refused: {e.verify_message}"


def _show_client_certificate(context: ssl.SSLContext, secrets: ClusterSecrets) -> None:
    if secrets.mode.client.client_auth:
        admin = secrets.user(ADMIN_USER)
        context.load_cert_chain(str(admin.cert_file), str(admin.key_file))


def certificate_names(node: NodeSpec) -> tuple[str, ...]:
    """The names a certificate for ``node`` must carry: its own certificate's (cluster/security/store.py)."""
    return node_certificate_names((node.address, node.client_address))


def _serial(identity: Identity) -> int:
    return x509.load_pem_x509_certificate(identity.cert_file.read_bytes()).serial_number


def alter_key_store(cluster: RunSite, node: NodeSpec, listeners: list[Listener], key_store: Path | None) -> None:
    """Set each listener's key store to ``key_store``, or delete the dynamic configs (None): Kafka validates the new
    store on the broker before it takes it. A broker-level config goes to that broker itself, so the deletion (an
    undo) does not check the certificate it presents: the broker may be serving an expired one, and failsafe's admin
    must reach it to put its own back (SASL still authenticates the admin)."""
    operation = AlterConfigOpType.DELETE if key_store is None else AlterConfigOpType.SET
    unchecked = {"enable.ssl.certificate.verification": "false"} if key_store is None else {}
    entries = [
        ConfigEntry(listener.keystore_config, str(key_store or ""), incremental_operation=operation)
        for listener in listeners
    ]
    resource = ConfigResource(ResourceType.BROKER, str(node.node_id), incremental_configs=entries)
    what = f"the key store {key_store}" if key_store else "the broker's own key store back"

    def altered() -> bool:
        admin = new_admin(cluster.bootstrap_servers, **unchecked)  # held until its futures are done
        try:
            for future in admin.incremental_alter_configs([resource], request_timeout=ATTEMPT_TIMEOUT_S).values():
                future.result(timeout=ATTEMPT_TIMEOUT_S)
        except KafkaException as e:
            if e.args and isinstance(e.args[0], KafkaError) and e.args[0].retriable():
                raise _NotYet(describe_error(e)) from e
            raise FaultError(f"broker {node.node_id} refused {what}: {describe_error(e)}") from e
        except concurrent.futures.TimeoutError as e:  # a broker just started may not answer its first request
            raise _NotYet(f"no answer within {ATTEMPT_TIMEOUT_S:.0f} s") from e
        return True

    try:
        wait_until(altered, ADMIN_TIMEOUT_S, f"broker {node.node_id} did not take {what}", retry_on=(_NotYet,))
    except WaitTimeout as e:
        raise FaultError(f"{e}: {e.__cause__}") from e


class _NotYet(Exception):
    """A retriable refusal or no answer: the alteration is tried again until ADMIN_TIMEOUT_S."""


def _until_presented(
    listeners: list[Listener], secrets: ClusterSecrets, serial: int, node: NodeSpec, spec: ClusterSpec
) -> float:
    """Seconds until every one of ``listeners`` presents the certificate numbered ``serial`` to every new connection.
    A listener has one network processor per ``num.network.threads``, each with a channel builder of its own, and
    Kafka reconfigures them one after another (hundreds of ms each here): until the last, a new connection gets the
    old certificate or the new one by the processor its acceptor hands it to, in turn. So the check asks twice as
    many connections in a row as there are processors."""
    probes = PROBES_PER_PROCESSOR * int(spec.overrides.get("num.network.threads", KAFKA_NETWORK_THREADS))
    started = time.monotonic()
    try:
        wait_until(
            lambda: all(presented_serial(listener, secrets) == serial for listener in listeners for _ in range(probes)),
            IN_FORCE_TIMEOUT_S,
            f"broker {node.node_id} did not present its changed certificate within {IN_FORCE_TIMEOUT_S:.0f} s",
            retry_on=(OSError,),
        )
    except WaitTimeout as e:
        raise FaultError(str(e)) from e
    return time.monotonic() - started


def _next_directory(secrets: ClusterSecrets, kind: str) -> Path:
    base = secrets.directory / ROTATIONS
    return next(base / f"{kind}-{n}" for n in itertools.count(1) if not (base / f"{kind}-{n}").exists())


def _changing(kind: str, valid_days: int):
    def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
        cluster, nodes, role = chosen(spec.params, targets)
        secrets = secured.secrets_of(Path(cluster.dir.root), cluster.spec)
        if secrets is None or _fits(cluster.spec):  # fits() keeps such a cluster from a run; one attached stays
            raise FaultError(
                f"{kind}: the cluster's brokers serve no certificate of failsafe's ({cluster.spec.security})"
            )
        changed = [(node, tls_listeners(cluster.spec, node, inter_broker=valid_days > 0)) for node in nodes]
        if not all(listeners for _, listeners in changed):
            raise FaultError(f"{kind}: the brokers' only TLS listener is the inter-broker one (see the module)")
        details: dict = {"valid_days": valid_days, "brokers": {}}
        done: list[tuple[NodeSpec, list[Listener]]] = []

        def undo() -> None:
            back = {}
            for node, listeners in done:
                alter_key_store(cluster, node, listeners, None)
                own = _serial(secrets.node(node.name))
                back[str(node.node_id)] = round(_until_presented(listeners, secrets, own, node, cluster.spec) * 1000)
            applied.stop_details = {"back_ms": back}

        applied = AppliedFault(
            kind,
            target_of(nodes),
            [n.node_id for n in nodes],
            role,
            undo,
            details=details,
            label="expired certificate" if valid_days < 0 else "certificate rotated",
            acted_ns=time.time_ns(),
        )
        for node, listeners in changed:
            identity = issue(
                secrets.authority, _next_directory(secrets, kind), node.name, certificate_names(node), valid_days
            )
            try:
                alter_key_store(cluster, node, listeners, identity.key_store)
                done.append((node, listeners))
                in_force_s = _until_presented(listeners, secrets, _serial(identity), node, cluster.spec)
            except FaultError:
                applied.undo()  # a fault that could not start leaves no broker changed behind it
                raise
            details["brokers"][str(node.node_id)] = {
                "listeners": [listener.name for listener in listeners],
                "in_force_ms": round(in_force_s * 1000),
                "new_client": handshake_verdict(listeners[0], secrets),
            }
        return applied

    return start


register(
    FaultType(
        CERTIFICATE_ROTATED,
        FAMILY,
        "a broker's certificate replaced by a new one from the cluster's CA while it serves (a dynamic listener "
        "update)",
        frozenset({Need.NODES}),
        _changing(CERTIFICATE_ROTATED, DEFAULT_VALID_DAYS),
        "the dynamic key store deleted: the broker's own certificate in force again",
        NodeChoice,
        check_node_choice,
        _fits,
    )
)
register(
    FaultType(
        CERTIFICATE_EXPIRED,
        FAMILY,
        "a broker serves a certificate that expired yesterday (a dynamic listener update): new connections to it "
        "fail their handshake",
        frozenset({Need.NODES}),
        _changing(CERTIFICATE_EXPIRED, -1),
        "the broker's own certificate in force again",
        NodeChoice,
        check_node_choice,
        _fits,
    )
)
