"""A certificate authority of failsafe's own and the certificates it signs, as PEM files Kafka reads directly.

Kafka reads PEM key stores since 2.7 (KIP-651): ``ssl.keystore.type=PEM`` with ``ssl.keystore.location``
naming one file that holds a PKCS#8 private key and its certificate chain, and ``ssl.truststore.type=PEM``
with the CA's certificate. librdkafka, kcat and Python's ``ssl`` read the same files, so one set serves
every client family: no JKS, no keytool.

Each node's certificate names its addresses as subject alternative names (IP SANs for 127.0.0.x), because
both Kafka's Java clients and librdkafka check the broker's name against the address they dialled
(``ssl.endpoint.identification.algorithm=https`` by default). Keys are written owner-only (0600) in a
directory that is owner-only (0700); nothing here prints one.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from failsafe.tools.security import secret_dir, write_secret

# Long enough for any run, short enough that a leaked test CA is worth nothing; a scenario that needs an
# expired certificate asks for one (``valid_days`` below zero).
DEFAULT_VALID_DAYS = 30
ORGANIZATION = "failsafe"


@dataclass(frozen=True)
class Authority:
    """The CA: its certificate (``cert_file``, what a trust store holds) and its key (only failsafe reads it)."""

    cert_file: Path
    key_file: Path

    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_file.read_bytes())

    def private_key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_file.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return key


@dataclass(frozen=True)
class Identity:
    """A node's or a client's certificate: ``key_store`` is the PEM file with its key and chain (Kafka's
    ``ssl.keystore.location``); ``cert_file`` and ``key_file`` the same as two files (librdkafka's)."""

    name: str
    key_store: Path
    cert_file: Path
    key_file: Path


def make_authority(directory: Path, name: str = "failsafe-ca", valid_days: int = DEFAULT_VALID_DAYS) -> Authority:
    """A self-signed CA in ``directory`` (ca.pem, ca-key.pem)."""
    secret_dir(directory)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(name)
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    write_secret(directory / "ca-key.pem", _pkcs8(key))
    (directory / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Authority(directory / "ca.pem", directory / "ca-key.pem")


def issue(
    authority: Authority,
    directory: Path,
    name: str,
    addresses: tuple[str, ...] = (),
    valid_days: int = DEFAULT_VALID_DAYS,
) -> Identity:
    """A certificate for ``name`` signed by ``authority``, for a server and a client alike (a broker is both to
    its peers), with ``addresses`` (IPs or DNS names) as subject alternative names. ``valid_days`` at or below
    zero makes one that has already expired. Files: NAME.pem (key and chain), NAME-cert.pem, NAME-key.pem."""
    secret_dir(directory)
    key = ec.generate_private_key(ec.SECP256R1())
    ca_cert, ca_key = authority.certificate(), authority.private_key()
    now = _now()
    not_after = now + datetime.timedelta(days=valid_days)
    not_before = min(now - datetime.timedelta(minutes=5), not_after - datetime.timedelta(days=1))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if addresses:
        builder = builder.add_extension(x509.SubjectAlternativeName([_san(a) for a in addresses]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM)
    key_pem = _pkcs8(key)
    identity = identity_in(directory, name)
    write_secret(identity.key_store, key_pem + chain)
    write_secret(identity.key_file, key_pem)
    identity.cert_file.write_bytes(chain)
    return identity


def identity_in(directory: Path, name: str) -> Identity:
    """The files of ``name``'s certificate in ``directory``, as issue() writes them."""
    return Identity(name, directory / f"{name}.pem", directory / f"{name}-cert.pem", directory / f"{name}-key.pem")


def _pkcs8(key: ec.EllipticCurvePrivateKey) -> bytes:
    # Kafka's PEM store reads PKCS#8 ("BEGIN PRIVATE KEY") only, not the traditional "BEGIN EC PRIVATE KEY".
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _san(address: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(address))
    except ValueError:
        return x509.DNSName(address)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
