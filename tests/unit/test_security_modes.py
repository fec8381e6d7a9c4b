"""Security modes: each node's properties and each of failsafe's clients' settings, rendered from one cluster's
secrets, for every mode."""

from __future__ import annotations

import stat

import pytest

from failsafe.cluster.security.brokers import (
    CN_PRINCIPAL_RULE,
    STANDARD_AUTHORIZER,
    node_security_properties,
    protocol_map,
)
from failsafe.cluster.security.modes import CLIENT, CONTROLLER, MODES, REPLICATION, security_mode
from failsafe.cluster.security.store import ADMIN_USER, BROKER_USER, CLIENT_USER, CONTROLLER_USER, ClusterSecrets
from failsafe.errors import UserError

NODES = {"server-1000": ("127.0.0.10",), "server-0": ("127.0.0.1", "127.0.0.11")}
BROKER_LISTENERS = {"PLAINTEXT": CLIENT, "REPLICATION": REPLICATION, "CONTROLLER": CONTROLLER}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ClusterSecrets]:
    root = tmp_path_factory.mktemp("cluster")
    return {name: ClusterSecrets.create(root / name / "secrets", mode, NODES) for name, mode in MODES.items()}


def test_an_unknown_mode_is_one_line() -> None:
    with pytest.raises(
        UserError, match="'ssl': not a security mode; one of plaintext, tls, mtls, sasl-scram, sasl-ssl"
    ):
        security_mode("ssl")


def test_plaintext_adds_nothing(made: dict[str, ClusterSecrets]) -> None:
    mode = MODES["plaintext"]
    assert protocol_map(mode, BROKER_LISTENERS) == "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert node_security_properties(mode, made["plaintext"], "server-0", BROKER_LISTENERS, list(NODES)) == {}
    assert made["plaintext"].client_security().java() == {"security.protocol": "PLAINTEXT"}


def test_sasl_ssl_node_properties(made: dict[str, ClusterSecrets]) -> None:
    secrets, mode = made["sasl-ssl"], MODES["sasl-ssl"]
    assert protocol_map(mode, BROKER_LISTENERS) == "PLAINTEXT:SASL_SSL,REPLICATION:SASL_SSL,CONTROLLER:SSL"
    props = node_security_properties(mode, secrets, "server-0", BROKER_LISTENERS, list(NODES))
    assert props["ssl.keystore.type"] == "PEM" and props["ssl.keystore.location"] == str(
        secrets.node("server-0").key_store
    )
    assert props["ssl.truststore.location"] == str(secrets.authority.cert_file)
    assert props["ssl.principal.mapping.rules"] == CN_PRINCIPAL_RULE
    assert props["listener.name.controller.ssl.client.auth"] == "required"
    assert "listener.name.plaintext.ssl.client.auth" not in props  # clients show a password, not a certificate
    assert props["listener.name.replication.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert (
        f'username="{BROKER_USER}" password="{secrets.password(BROKER_USER)}"'
        in (props["listener.name.replication.scram-sha-512.sasl.jaas.config"])
    )
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert "sasl.mechanism.controller.protocol" not in props  # certificates, not SASL, on the controller listener
    assert props["authorizer.class.name"] == STANDARD_AUTHORIZER
    assert props["super.users"].split(";") == [
        f"User:{ADMIN_USER}",
        f"User:{BROKER_USER}",
        f"User:{CONTROLLER_USER}",
        "User:server-1000",
        "User:server-0",
    ]
    assert props["allow.everyone.if.no.acl.found"] == "false"


def test_sasl_scram_controllers_use_plain_users_of_their_own(made: dict[str, ClusterSecrets]) -> None:
    secrets, mode = made["sasl-scram"], MODES["sasl-scram"]
    props = node_security_properties(mode, secrets, "server-1000", {"CONTROLLER": CONTROLLER}, list(NODES))
    password = secrets.password(CONTROLLER_USER)
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
    assert props["listener.name.controller.plain.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{CONTROLLER_USER}" password="{password}" user_{CONTROLLER_USER}="{password}";'
    )
    assert not any(k.startswith("ssl.") for k in props)  # no TLS anywhere in sasl-scram


def test_scram_users_are_formatted_into_the_metadata_log(made: dict[str, ClusterSecrets]) -> None:
    args = made["sasl-ssl"].scram_format_args()
    assert args[::2] == ["--add-scram"] * 3
    for user, arg in zip((ADMIN_USER, CLIENT_USER, BROKER_USER), args[1::2], strict=True):
        password = made["sasl-ssl"].password(user)
        assert arg == f"SCRAM-SHA-512=[name={user},password={password}]" and "," not in password
    assert made["mtls"].scram_format_args() == [] and made["tls"].scram_format_args() == []


@pytest.mark.parametrize(
    ("mode", "protocol", "certificate", "sasl"),
    [
        ("tls", "SSL", False, False),
        ("mtls", "SSL", True, False),
        ("sasl-scram", "SASL_PLAINTEXT", False, True),
        ("sasl-ssl", "SASL_SSL", False, True),
    ],
)
def test_failsafe_clients_get_what_the_client_listener_asks(
    made: dict[str, ClusterSecrets], mode: str, protocol: str, certificate: bool, sasl: bool
) -> None:
    client = made[mode].client_security()
    assert client.protocol == protocol
    assert (client.ca_file is not None) == client.uses_tls
    assert (client.key_store is not None) == certificate and (client.cert_file is not None) == certificate
    assert (client.username == CLIENT_USER) == sasl and (client.mechanism == "SCRAM-SHA-512") == sasl
    if certificate:
        assert client.cert_file.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")


def test_every_secret_file_is_owner_only(made: dict[str, ClusterSecrets]) -> None:
    root = made["sasl-ssl"].directory
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o700, path
        elif path.name.endswith("-cert.pem") or path.name == "ca.pem":
            assert mode & 0o022 == 0, path  # certificates are public, but nobody else writes them
        else:
            assert mode == 0o600, path


def test_a_node_certificate_names_its_addresses_and_localhost(made: dict[str, ClusterSecrets]) -> None:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(made["mtls"].node("server-0").cert_file.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "127.0.0.11"]
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert cert.subject.rfc4514_string() == "CN=server-0,O=failsafe"


def test_no_secret_is_in_a_repr(made: dict[str, ClusterSecrets]) -> None:
    secrets = made["sasl-ssl"]
    password = secrets.password(CLIENT_USER)
    assert password not in repr(secrets.client_security()) and password not in repr(secrets)


def test_the_client_principal_gets_what_its_clients_ask_and_no_more() -> None:
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourceType

    from failsafe.cluster.security.acls import client_acls

    bindings = client_acls(f"User:{CLIENT_USER}")
    granted = {(b.restype.name, b.name, b.operation.name) for b in bindings}
    assert ("TOPIC", "*", "WRITE") in granted and ("TOPIC", "*", "READ") in granted
    assert ("GROUP", "*", "READ") in granted and ("TRANSACTIONAL_ID", "*", "WRITE") in granted
    assert ("BROKER", "kafka-cluster", "IDEMPOTENT_WRITE") in granted  # Kafka's CLUSTER resource, code 4
    assert ResourceType.BROKER.value == 4
    assert not any(b.operation in (AclOperation.ALL, AclOperation.ALTER, AclOperation.DELETE) for b in bindings)
    assert {b.permission_type for b in bindings} == {AclPermissionType.ALLOW}
    assert {b.principal for b in bindings} == {f"User:{CLIENT_USER}"} and {b.host for b in bindings} == {"*"}
