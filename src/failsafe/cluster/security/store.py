"""A secured cluster's secrets, in DIR/secrets (owner-only): the CA, each node's certificate, failsafe's own
users' certificates and passwords, and the ClientSecurity each of failsafe's clients gets from them.

    DIR/secrets/ca/ca.pem, ca-key.pem         the CA (cluster/security/pki.py)
    DIR/secrets/nodes/server-N.pem ...        each node's key store (its CN is its name: its principal)
    DIR/secrets/users/failsafe-*.pem ...      failsafe's users' key stores (mutual TLS modes)
    DIR/secrets/passwords.json                the users' passwords (SASL modes)

failsafe's users: ``failsafe-admin`` (a super user: topics, ACLs, SCRAM credentials, configs),
``failsafe-client`` (producers, consumers, the pipeline: what ACLs grant), ``failsafe-broker`` (replication in the
SASL modes) and ``failsafe-controller`` (the controller listener's PLAIN user in sasl-scram).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path

from failsafe.cluster.security.modes import CLIENT, SCRAM, SecurityMode
from failsafe.cluster.security.pki import (
    Authority,
    Identity,
    identity_in,
    issue,
    make_authority,
    secret_dir,
    write_secret,
)
from failsafe.tools.security import ClientSecurity

ADMIN_USER = "failsafe-admin"
CLIENT_USER = "failsafe-client"
BROKER_USER = "failsafe-broker"
CONTROLLER_USER = "failsafe-controller"
USERS = (ADMIN_USER, CLIENT_USER, BROKER_USER, CONTROLLER_USER)
# 24 random bytes, URL-safe: no comma, which kafka-storage's --add-scram cannot carry, and no quote.
PASSWORD_BYTES = 24


def node_certificate_names(addresses: tuple[str, ...]) -> tuple[str, ...]:
    """A node's certificate's subject alternative names: the addresses its listeners are on, and localhost. A
    certificate that replaces it must have the same (Kafka refuses a new key store whose names differ: "Keystore
    SubjectAltNames do not match")."""
    return (*dict.fromkeys(addresses), "localhost")


@dataclass(frozen=True)
class ClusterSecrets:
    directory: Path
    mode: SecurityMode

    @classmethod
    def create(cls, directory: Path, mode: SecurityMode, nodes: dict[str, tuple[str, ...]]) -> ClusterSecrets:
        """Make every secret of ``mode`` for ``nodes`` (a node's name: the addresses its listeners are on)."""
        secret_dir(directory)
        if mode.needs_certificates:
            ca = make_authority(directory / "ca")
            for name, addresses in nodes.items():
                issue(ca, directory / "nodes", name, node_certificate_names(addresses))
            for user in (ADMIN_USER, CLIENT_USER):
                issue(ca, directory / "users", user)
        passwords = {user: secrets.token_urlsafe(PASSWORD_BYTES) for user in USERS}
        write_secret(directory / "passwords.json", json.dumps(passwords, indent=2).encode())
        return cls(directory, mode)

    @property
    def authority(self) -> Authority:
        return Authority(self.directory / "ca" / "ca.pem", self.directory / "ca" / "ca-key.pem")

    def node(self, name: str) -> Identity:
        return identity_in(self.directory / "nodes", name)

    def user(self, name: str) -> Identity:
        return identity_in(self.directory / "users", name)

    def password(self, user: str) -> str:
        return json.loads((self.directory / "passwords.json").read_text())[user]

    def set_password(self, user: str, password: str) -> None:
        """Keep ``user``'s new password (after Kafka has it: a SCRAM credential altered, faults/security.py)."""
        passwords = json.loads((self.directory / "passwords.json").read_text()) | {user: password}
        write_secret(self.directory / "passwords.json", json.dumps(passwords, indent=2).encode())

    def client_security(self, user: str = CLIENT_USER) -> ClientSecurity:
        """What one of failsafe's clients, as ``user``, needs to reach the client listener."""
        listening = self.mode.listening(CLIENT)
        identity = self.user(user) if listening.client_auth else None
        return ClientSecurity(
            listening.protocol,
            ca_file=self.authority.cert_file if listening.tls else None,
            cert_file=identity.cert_file if identity else None,
            key_file=identity.key_file if identity else None,
            key_store=identity.key_store if identity else None,
            mechanism=listening.mechanism,
            username=user if listening.mechanism else None,
            password=self.password(user) if listening.mechanism else None,
        )

    def scram_format_args(self) -> list[str]:
        """kafka-storage format's --add-scram for failsafe's SCRAM users (KIP-900): they exist from the metadata
        log's first record, before any client connects. Holds passwords: never log the command line."""
        if not self.mode.scram_users:
            return []
        users = (ADMIN_USER, CLIENT_USER, BROKER_USER)
        return [arg for u in users for arg in ("--add-scram", f"{SCRAM}=[name={u},password={self.password(u)}]")]
