"""The security modes of a failsafe cluster (``failsafe up --security``): which protocol each listener speaks,
who authenticates how, and whether the StandardAuthorizer judges requests.

Listeners have three roles: ``client`` (what producers, consumers and tools dial), ``replication`` (broker to
broker) and ``controller`` (KRaft's quorum, and brokers to it).

    mode         client           replication      controller       principals                        authorizer
    plaintext    PLAINTEXT        PLAINTEXT        PLAINTEXT        none                              no
    tls          SSL              SSL, mutual      SSL, mutual      nodes by certificate (CN)         no
    mtls         SSL, mutual      SSL, mutual      SSL, mutual      all by certificate (CN)           yes
    sasl-scram   SASL_PLAINTEXT   SASL_PLAINTEXT   SASL_PLAINTEXT   SCRAM-SHA-512 users; PLAIN        yes
    sasl-ssl     SASL_SSL         SASL_SSL         SSL, mutual      SCRAM-SHA-512 users; certificate  yes

"mutual": a TLS peer must show a certificate of failsafe's CA. The authorizer is Kafka's StandardAuthorizer; in
tls the clients are anonymous, so there is nobody to grant anything to.

Controllers never authenticate to each other with SCRAM: its credentials live in the metadata log, which has no
leader before the controllers have voted (Confluent's SCRAM docs; kafkatest's kafka.py, "SCRAM currently
unsupported for controller quorum"). They use PLAIN users of their own JAAS configuration, or certificates.
"""

from __future__ import annotations

from dataclasses import dataclass

from failsafe.errors import UserError

SCRAM = "SCRAM-SHA-512"
CONTROLLER_MECHANISM = "PLAIN"
CLIENT, REPLICATION, CONTROLLER = "client", "replication", "controller"
ROLES = (CLIENT, REPLICATION, CONTROLLER)


@dataclass(frozen=True)
class Listening:
    """How one listener role is secured: Kafka's security protocol, whether TLS peers must show a certificate,
    and the SASL mechanism, if any."""

    protocol: str
    client_auth: bool = False
    mechanism: str | None = None

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


@dataclass(frozen=True)
class SecurityMode:
    name: str
    client: Listening
    replication: Listening
    controller: Listening
    authorizer: bool

    def listening(self, role: str) -> Listening:
        return {CLIENT: self.client, REPLICATION: self.replication, CONTROLLER: self.controller}[role]

    @property
    def secured(self) -> bool:
        return self.name != "plaintext"

    @property
    def needs_certificates(self) -> bool:
        return any(self.listening(role).tls for role in ROLES)

    @property
    def scram_users(self) -> bool:
        """Whether users are SCRAM credentials in the metadata log (kafka-storage format --add-scram)."""
        return any(self.listening(role).mechanism == SCRAM for role in ROLES)


_MUTUAL = Listening("SSL", client_auth=True)
MODES: dict[str, SecurityMode] = {
    "plaintext": SecurityMode(
        "plaintext", Listening("PLAINTEXT"), Listening("PLAINTEXT"), Listening("PLAINTEXT"), authorizer=False
    ),
    "tls": SecurityMode("tls", Listening("SSL"), _MUTUAL, _MUTUAL, authorizer=False),
    "mtls": SecurityMode("mtls", _MUTUAL, _MUTUAL, _MUTUAL, authorizer=True),
    "sasl-scram": SecurityMode(
        "sasl-scram",
        Listening("SASL_PLAINTEXT", mechanism=SCRAM),
        Listening("SASL_PLAINTEXT", mechanism=SCRAM),
        Listening("SASL_PLAINTEXT", mechanism=CONTROLLER_MECHANISM),
        authorizer=True,
    ),
    "sasl-ssl": SecurityMode(
        "sasl-ssl",
        Listening("SASL_SSL", mechanism=SCRAM),
        Listening("SASL_SSL", mechanism=SCRAM),
        _MUTUAL,
        authorizer=True,
    ),
}
PLAINTEXT_MODE = MODES["plaintext"]


def security_mode(name: str) -> SecurityMode:
    """The mode called ``name``, or one line saying which there are (exit 2)."""
    try:
        return MODES[name]
    except KeyError:
        raise UserError(f"--security {name!r}: not a security mode; one of {', '.join(MODES)}") from None
