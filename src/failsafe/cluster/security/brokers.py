"""A KRaft node's security properties in a security mode (cluster/security/modes.py), from the cluster's secrets.

Per-listener settings are prefixed ``listener.name.<listener in lower case>.``, as Kafka reads them; the key store
and trust store are the node's for every listener (one certificate per node, its CN the node's name, mapped to
its principal by ``ssl.principal.mapping.rules``). A broker dials the controllers with the controller listener's
settings and ``sasl.mechanism.controller.protocol``, and other brokers with the replication listener's and
``sasl.mechanism.inter.broker.protocol``.
"""

from __future__ import annotations

from failsafe.cluster.security.modes import CONTROLLER, SecurityMode
from failsafe.cluster.security.store import (
    ADMIN_USER,
    BROKER_USER,
    CONTROLLER_USER,
    ClusterSecrets,
)
from failsafe.tools.security import jaas

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# The CN of a certificate's subject (CN=server-0,O=failsafe) is the principal; DEFAULT keeps a DN no rule matches.
CN_PRINCIPAL_RULE = "RULE:^.*CN=([^,]+).*$/$1/,DEFAULT"


def protocol_map(mode: SecurityMode, listeners: dict[str, str]) -> str:
    """``listener.security.protocol.map`` for ``listeners`` (a listener's name: its role)."""
    return ",".join(f"{name}:{mode.listening(role).protocol}" for name, role in listeners.items())


def node_security_properties(
    mode: SecurityMode, secrets: ClusterSecrets | None, node: str, listeners: dict[str, str], nodes: list[str]
) -> dict[str, str]:
    """The properties ``node`` needs for ``listeners`` (name: role; also those it only dials, as CONTROLLER on a
    broker) besides the protocol map; ``nodes``: every node's name, the super users next to failsafe's own."""
    if not mode.secured:
        return {}
    assert secrets is not None, "a secured mode needs the cluster's secrets"
    props: dict[str, str] = {}
    if mode.needs_certificates:
        identity = secrets.node(node)
        props |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(identity.key_store),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(secrets.authority.cert_file),
            "ssl.principal.mapping.rules": CN_PRINCIPAL_RULE,
        }
    for name, role in listeners.items():
        listening, prefix = mode.listening(role), f"listener.name.{name.lower()}."
        if listening.tls and listening.client_auth:
            props[prefix + "ssl.client.auth"] = "required"
        if listening.mechanism:
            props[prefix + "sasl.enabled.mechanisms"] = listening.mechanism
            user = CONTROLLER_USER if role == CONTROLLER else BROKER_USER
            props[prefix + listening.mechanism.lower() + ".sasl.jaas.config"] = _server_jaas(
                listening.mechanism, user, secrets.password(user)
            )
    if mode.replication.mechanism:
        props["sasl.mechanism.inter.broker.protocol"] = mode.replication.mechanism
    if mode.controller.mechanism:
        props["sasl.mechanism.controller.protocol"] = mode.controller.mechanism
    if mode.authorizer:
        props |= {
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": ";".join(f"User:{u}" for u in (ADMIN_USER, BROKER_USER, CONTROLLER_USER, *nodes)),
            "allow.everyone.if.no.acl.found": "false",
        }
    return props


def _server_jaas(mechanism: str, user: str, password: str) -> str:
    """The listener's JAAS configuration: the user this node logs in as when it dials the listener, and for
    PLAIN, the users the listener accepts (``user_NAME``: there are no others)."""
    text = jaas(mechanism, user, password)
    if mechanism == "PLAIN":
        text = text.removesuffix(";") + f' user_{user}="{password}";'
    return text
