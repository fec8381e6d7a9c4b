"""A cluster in a security mode: its nodes' properties as failsafe writes them, its secrets made once, its storage
format's SCRAM users, and the register through which every client of failsafe's finds its cluster's settings."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from failsafe.cluster.properties import kraft_properties
from failsafe.cluster.security import secured
from failsafe.cluster.security.store import ADMIN_USER, CLIENT_USER
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.tools import connections
from failsafe.tools.security import from_properties


@pytest.fixture(autouse=True)
def empty_register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(connections.ENV, raising=False)


def test_a_plaintext_cluster_s_protocol_map_is_what_it_always_was(tmp_path: Path) -> None:
    spec = ClusterSpec().validate()
    broker, controller = spec.brokers_nodes()[0], spec.controller_nodes()[0]
    assert kraft_properties(spec, broker, tmp_path)["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT"
    )
    assert kraft_properties(spec, controller, tmp_path)["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    )
    assert not any(k.startswith(("ssl.", "sasl.", "listener.name.")) for k in kraft_properties(spec, broker, tmp_path))
    assert secured.ensure_secrets(tmp_path, spec) is None and not (tmp_path / secured.SECRETS).exists()


def test_a_sasl_ssl_cluster_s_nodes_read_secrets_made_once(tmp_path: Path) -> None:
    spec = ClusterSpec(security="sasl-ssl").validate()
    made = secured.ensure_secrets(tmp_path, spec)
    assert made is not None
    ca = made.authority.cert_file.read_bytes()
    password = made.password(CLIENT_USER)
    again = secured.ensure_secrets(tmp_path, spec)
    assert again is not None and again.authority.cert_file.read_bytes() == ca
    assert again.password(CLIENT_USER) == password
    broker = spec.brokers_nodes()[0]
    props = kraft_properties(spec, broker, tmp_path)
    assert props["listener.security.protocol.map"] == "CONTROLLER:SSL,PLAINTEXT:SASL_SSL,REPLICATION:SASL_SSL"
    assert props["ssl.keystore.location"] == str(made.node(broker.name).key_store)
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    args = secured.format_args(tmp_path, spec)
    assert args[0] == "--add-scram" and f"name={CLIENT_USER},password={password}]" in " ".join(args)
    for user in (CLIENT_USER, ADMIN_USER):
        path = secured.client_file(tmp_path, user)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        client = from_properties(path)
        assert (client.protocol, client.username, client.password) == ("SASL_SSL", user, made.password(user))


def test_security_is_refused_where_it_cannot_work_yet() -> None:
    with pytest.raises(UserError, match="--security tls: KRaft on this machine only .*protocol proxy"):
        ClusterSpec(security="tls", protocol_proxy=True).validate()
    with pytest.raises(UserError, match="not a security mode"):
        ClusterSpec(security="ssl").validate()


def test_clients_find_their_cluster_s_settings_by_address_and_a_plaintext_cluster_there_removes_them(
    tmp_path: Path,
) -> None:
    spec = ClusterSpec(security="sasl-scram").validate()
    made = secured.ensure_secrets(tmp_path, spec)
    assert made is not None
    servers = spec.bootstrap_servers()
    secured.register_clients(tmp_path, spec, servers.split(","))
    config = connections.secured({"bootstrap.servers": servers.split(",")[1], "acks": "all"})
    assert config["sasl.username"] == CLIENT_USER and config["security.protocol"] == "sasl_plaintext"
    assert config["sasl.password"] == made.password(CLIENT_USER) and config["acks"] == "all"
    assert connections.secured({"bootstrap.servers": servers}, connections.ADMIN)["sasl.username"] == ADMIN_USER
    assert connections.bootstrap_args(servers) == [
        "--bootstrap-server",
        servers,
        "--command-config",
        str(secured.client_file(tmp_path, ADMIN_USER).resolve()),
    ]
    assert connections.secured({"bootstrap.servers": "127.0.0.1:1"}) == {"bootstrap.servers": "127.0.0.1:1"}
    # The register holds paths, never a secret.
    assert made.password(CLIENT_USER) not in os.environ[connections.ENV]
    secured.register_clients(tmp_path, ClusterSpec().validate(), servers.split(","))
    assert connections.secured({"bootstrap.servers": servers}) == {"bootstrap.servers": servers}
    assert connections.bootstrap_args(servers) == ["--bootstrap-server", servers]


def test_a_scenario_s_security_mode_is_given_to_a_cluster_it_starts_and_checked_on_one_it_finds() -> None:
    from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
    from failsafe.scenarios.registry import load_scenario

    secured_failover = load_scenario("secured-broker-failover")
    needs = needs_of([secured_failover])
    assert needs.security == "sasl-ssl" and spec_for(needs, None, None, None).security == "sasl-ssl"
    assert misfit(ClusterSpec(), needs, [secured_failover]) == (
        "its listeners are plaintext and the scenario needs sasl-ssl (failsafe up --security sasl-ssl)"
    )
    with pytest.raises(UserError, match="need clusters in different security modes"):
        needs_of([secured_failover, load_scenario("broker-failover", ('cluster.security="tls"',))])
    with pytest.raises(UserError, match=r"cluster.security.*'ssl' is not one of plaintext, tls"):
        load_scenario("broker-failover", ('cluster.security="ssl"',))
    # A fault of a secured cluster's on a plaintext one: the fault type says why it does not fit.
    rotation = load_scenario("scram-password-change", ('cluster.security=""',))
    tls = ClusterSpec(security="tls", overrides={"connections.max.reauth.ms": "5000"})
    assert "no SCRAM users" in str(misfit(tls, needs_of([rotation]), [rotation]))


def test_an_attached_cluster_s_client_file_is_checked_kept_in_java_s_names_and_registered(tmp_path: Path) -> None:
    from failsafe.tools.security import ClientSecurityError

    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    user = tmp_path / "client.properties"
    user.write_text(
        f"security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=me\nsasl.password=pw\n"
        f"ssl.ca.location={ca}\n"
    )
    work = tmp_path / "work"
    secured.attach_clients(work, user, ["broker1:9093"])
    kept = work / "secrets" / "clients" / secured.ATTACHED
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE((work / "secrets").stat().st_mode) == 0o700
    assert "sasl.jaas.config" in kept.read_text() and "sasl.mechanism=SCRAM-SHA-512" in kept.read_text()
    assert connections.secured({"bootstrap.servers": "broker1:9093"})["sasl.username"] == "me"
    assert connections.bootstrap_args("broker1:9093")[-1] == str(kept.resolve())
    user.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n")
    with pytest.raises(ClientSecurityError, match="SASL_SSL needs a SASL username and password"):
        secured.attach_clients(work, user, ["broker1:9093"])
