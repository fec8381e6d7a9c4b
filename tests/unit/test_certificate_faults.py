"""certificate-rotated and certificate-expired (faults/certificates.py) without Kafka: which listeners each changes,
which clusters take them, and what their probes read from a real TLS server serving certificates of failsafe's CA
(the e2e test in tests/e2e/test_secured_cluster.py changes a running broker's)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from cryptography import x509

from failsafe.cluster.security import secured
from failsafe.cluster.security.pki import Identity, issue
from failsafe.cluster.security.store import ClusterSecrets
from failsafe.cluster.spec import ClusterSpec
from failsafe.faults import certificates
from failsafe.faults.base import FaultError, FaultSpec, FaultTargets
from failsafe.faults.certificates import Listener, handshake_verdict, presented_serial, tls_listeners
from failsafe.faults.nodes import NodeChoice
from failsafe.faults.registry import fault_type


def test_a_rotation_changes_every_tls_listener_of_a_broker_an_expiry_all_but_the_inter_broker_one() -> None:
    spec = ClusterSpec(security="sasl-ssl").validate()
    broker = spec.brokers_nodes()[0]
    rotated = tls_listeners(spec, broker)
    assert [(x.name, x.host, x.port) for x in rotated] == [
        ("PLAINTEXT", broker.client_address, broker.port),
        ("REPLICATION", broker.address, broker.replication_port),
    ]
    assert rotated[0].keystore_config == "listener.name.plaintext.ssl.keystore.location"
    assert [x.name for x in tls_listeners(spec, broker, inter_broker=False)] == ["PLAINTEXT"]


@pytest.mark.parametrize("name", [certificates.CERTIFICATE_ROTATED, certificates.CERTIFICATE_EXPIRED])
def test_only_a_cluster_whose_brokers_serve_certificates_takes_them(name: str) -> None:
    kind = fault_type(name)
    assert kind.family == "security" and kind.params is NodeChoice
    for mode in ("tls", "mtls", "sasl-ssl"):
        assert kind.fits(ClusterSpec(security=mode)) is None, mode
    for mode in ("plaintext", "sasl-scram"):
        assert "serve no certificate" in kind.fits(ClusterSpec(security=mode)), mode


@contextmanager
def serving(identity: Identity, secrets: ClusterSecrets) -> Iterator[Listener]:
    """A TLS server on a loopback port presenting ``identity``, asking a client certificate when the mode does."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(identity.cert_file), str(identity.key_file))
    if secrets.mode.client.client_auth:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(str(secrets.authority.cert_file))
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)  # the accept loop looks at ``stop`` this often
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(5)
            try:
                with context.wrap_socket(connection, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass  # the client refused the handshake: what handshake_verdict reports

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield Listener("PLAINTEXT", "127.0.0.1", server.getsockname()[1])
    finally:
        stop.set()
        server.close()
        thread.join(timeout=5)


@pytest.mark.parametrize("mode", ["sasl-ssl", "mtls"])
def test_the_probes_read_a_rotated_and_an_expired_certificate(tmp_path: Path, mode: str) -> None:
    spec = ClusterSpec(security=mode).validate()
    secrets = secured.ensure_secrets(tmp_path, spec)
    assert secrets is not None
    own = secrets.node("server-0")
    with serving(own, secrets) as listener:
        assert presented_serial(listener, secrets) == _serial(own)
        assert handshake_verdict(listener, secrets) == "accepted"
    rotated = issue(secrets.authority, tmp_path / "rotated", "server-0", ("127.0.0.1",))
    expired = issue(secrets.authority, tmp_path / "expired", "server-0", ("127.0.0.1",), valid_days=-1)
    with serving(rotated, secrets) as listener:
        assert presented_serial(listener, secrets) == _serial(rotated) != _serial(own)
        assert handshake_verdict(listener, secrets) == "accepted"
    with serving(expired, secrets) as listener:
        assert presented_serial(listener, secrets) == _serial(expired)  # read, though no client would trust it
        assert handshake_verdict(listener, secrets) == "refused: certificate has expired"


def _serial(identity: Identity) -> int:
    return x509.load_pem_x509_certificate(identity.cert_file.read_bytes()).serial_number


def test_a_fault_that_cannot_change_every_broker_puts_back_those_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = ClusterSpec(security="sasl-ssl").validate()
    secured.ensure_secrets(tmp_path, spec)
    site = SimpleNamespace(spec=spec, dir=SimpleNamespace(root=tmp_path))
    first, second = spec.brokers_nodes()[:2]
    calls: list[tuple[int, str]] = []

    def alter(cluster, node, listeners, key_store) -> None:  # noqa: ANN001 - the fake's arguments are the real one's
        calls.append((node.node_id, "own" if key_store is None else "changed"))
        if node is second and key_store is not None:
            raise FaultError("broker 1 refused the key store")

    monkeypatch.setattr(certificates, "chosen", lambda params, targets: (site, [first, second], "replicas of t-0"))
    monkeypatch.setattr(certificates, "alter_key_store", alter)
    monkeypatch.setattr(certificates, "_until_presented", lambda *args: 0.1)
    monkeypatch.setattr(certificates, "handshake_verdict", lambda *args: "accepted")
    start = fault_type(certificates.CERTIFICATE_ROTATED).start
    with pytest.raises(FaultError, match="broker 1 refused"):
        start(FaultSpec(certificates.CERTIFICATE_ROTATED, 0, params=NodeChoice()), FaultTargets(site, None, None))
    assert calls == [(first.node_id, "changed"), (second.node_id, "changed"), (first.node_id, "own")]
