"""failsafe's certificate authority: the chain verifies with Python's ssl in a real TLS handshake on loopback, by
address (the IP SAN Kafka's clients check), mutual TLS included; an expired certificate, another CA's certificate
and a wrong address are refused; the keys are owner-only."""

from __future__ import annotations

import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from failsafe.cluster.security.pki import Authority, Identity, issue, make_authority


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return make_authority(tmp_path_factory.mktemp("secrets") / "ca")


def _handshake(
    server: Identity,
    ca_file: Path,
    *,
    client: Identity | None = None,
    require_client: bool = False,
    one_file: bool = False,
) -> str:
    """One TLS handshake over loopback: the server presents ``server`` (``one_file``: read from its key store alone,
    the key and chain in one PEM file); the client trusts ``ca_file`` and checks the name 127.0.0.1. Returns the client
    certificate's CN the server saw ("" without one)."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if one_file:
        server_ctx.load_cert_chain(server.key_store, server.key_store)
    else:
        server_ctx.load_cert_chain(server.cert_file, server.key_file)
    if require_client:
        server_ctx.verify_mode = ssl.CERT_REQUIRED
        server_ctx.load_verify_locations(ca_file)
    client_ctx = ssl.create_default_context(cafile=str(ca_file))
    if client:
        client_ctx.load_cert_chain(client.cert_file, client.key_file)
    seen: dict[str, object] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            try:
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    peer = tls.getpeercert()
                    seen["cn"] = dict(x[0] for x in peer["subject"]).get("commonName", "") if peer else ""
                    tls.sendall(b"ok")
            except (ssl.SSLError, OSError) as e:
                seen["error"] = e

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                assert tls.recv(2) == b"ok"
        thread.join(timeout=10)
    if "error" in seen:
        raise seen["error"]  # type: ignore[misc]
    return str(seen["cn"])


def test_a_node_certificate_verifies_by_its_address(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path, "broker-0", ("127.0.0.1", "127.0.0.2"))
    assert _handshake(node, ca.cert_file) == ""


def test_the_key_store_alone_serves_openssl_as_certificate_and_key(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path, "broker-0", ("127.0.0.1",))
    assert _handshake(node, ca.cert_file, one_file=True) == ""


def test_mutual_tls_shows_the_server_the_client_cn(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path, "broker-0", ("127.0.0.1",))
    client = issue(ca, tmp_path, "failsafe-producer")
    assert _handshake(node, ca.cert_file, client=client, require_client=True) == "failsafe-producer"


def test_a_server_without_a_client_certificate_refuses_the_client(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path, "broker-0", ("127.0.0.1",))
    with pytest.raises((ssl.SSLError, OSError)):
        _handshake(node, ca.cert_file, require_client=True)


def test_a_certificate_for_another_address_is_refused(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path, "broker-0", ("127.0.0.9",))
    with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
        _handshake(node, ca.cert_file)


def test_an_expired_certificate_is_refused(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path, "broker-0", ("127.0.0.1",), valid_days=-1)
    with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
        _handshake(node, ca.cert_file)


def test_another_authority_is_not_trusted(ca: Authority, tmp_path: Path) -> None:
    other = make_authority(tmp_path / "other-ca")
    node = issue(other, tmp_path, "broker-0", ("127.0.0.1",))
    with pytest.raises(ssl.SSLCertVerificationError, match="self-signed certificate in certificate chain"):
        _handshake(node, ca.cert_file)


def test_the_key_store_holds_a_pkcs8_key_and_the_chain_to_the_ca(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path, "broker-0", ("127.0.0.1",))
    text = node.key_store.read_bytes()
    assert text.count(b"-----BEGIN PRIVATE KEY-----") == 1  # PKCS#8, what Kafka's PEM store reads
    assert b"EC PRIVATE KEY" not in text
    chain = x509.load_pem_x509_certificates(text[text.index(b"-----BEGIN CERTIFICATE-----") :])
    assert [c.subject.rfc4514_string() for c in chain] == ["CN=broker-0,O=failsafe", "CN=failsafe-ca,O=failsafe"]
    chain[0].verify_directly_issued_by(ca.certificate())
    key = serialization.load_pem_private_key(node.key_file.read_bytes(), password=None)
    assert key.public_key() == chain[0].public_key()


def test_keys_and_their_directory_are_owner_only(ca: Authority, tmp_path: Path) -> None:
    node = issue(ca, tmp_path / "nodes", "broker-0", ("127.0.0.1",))
    for secret in (ca.key_file, node.key_store, node.key_file):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600, secret
    assert stat.S_IMODE((tmp_path / "nodes").stat().st_mode) == 0o700
    assert stat.S_IMODE(ca.key_file.parent.stat().st_mode) == 0o700
