"""A secured cluster (failsafe up --security sasl-ssl, docs/security.md): broker failover with librdkafka's and Kafka's
Java clients is VALID and costs each client a TLS handshake and a SCRAM exchange; a SCRAM password changed under load
and an ACL removed during a controller failover are judged, their refusals measured, nothing acknowledged lost; a run
attached with the user's client properties works, and a wrong password or an untrusted CA is one line and exit 2;
a broker's certificate rotated and then expired through dynamic listener updates, each seen by a new client; the console
on the secured cluster; a node whose certificate another CA signed keeps failsafe's own cluster from starting (exit 5);
no secret is world-readable, nor in a run directory, a report or a log."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import httpx
import pytest
from cryptography import x509

from failsafe.cluster.security.pki import issue, make_authority
from failsafe.cluster.security.secured import secrets_of
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.faults.base import FaultError, FaultSpec, FaultTargets
from failsafe.faults.certificates import (
    CERTIFICATE_EXPIRED,
    CERTIFICATE_ROTATED,
    alter_key_store,
    certificate_names,
    presented_serial,
    tls_listeners,
)
from failsafe.faults.nodes import NodeChoice
from failsafe.faults.registry import fault_type
from failsafe.tools.admin import check_access
from failsafe.tools.security import ClientSecurityError, write_secret
from failsafe.waiting import wait_until
from tests.conftest import RunningCluster, module_cluster
from tests.e2e.console_helpers import listening_addresses, start_console, stop_console
from tests.e2e.test_lab_scenarios import assert_valid_run, only_run_dir
from tests.helpers import run_cli

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster, pytest.mark.slow]
RUN_TIMEOUT_S = 300
# The scram-password-change scenario's brokers re-authenticate every session this often (KIP-368).
REAUTH = "connections.max.reauth.ms=5000"


@pytest.fixture(scope="module")
def secured(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    # Three controllers: acl-removed-during-controller-failover kills the active one.
    yield from module_cluster(
        shared_cluster_holder,
        tmp_path_factory,
        "secured",
        "--security",
        "sasl-ssl",
        "--controllers",
        "3",
        "--override",
        REAUTH,
        controllers=3,
    )


def passwords(cluster: RunningCluster) -> dict[str, str]:
    return json.loads((cluster.dir / "secrets" / "passwords.json").read_text())


def assert_no_secret_in(cluster: RunningCluster, *where: Path) -> None:
    """No password of the cluster's users, nor its CA's key, in any file under ``where``."""
    secrets = [
        *passwords(cluster).values(),
        (cluster.dir / "secrets" / "ca" / "ca-key.pem").read_text().splitlines()[1],
    ]
    for root in where:
        for path in (p for p in root.rglob("*") if p.is_file()):
            text = path.read_bytes()
            assert not any(s.encode() in text for s in secrets), path


def run(cluster: RunningCluster, scenario: str, tmp_path: Path) -> tuple[Path, dict, list[dict]]:
    runs = tmp_path / "runs"
    result = cluster.cli("run", scenario, "--runs", str(runs), timeout_s=RUN_TIMEOUT_S)
    run_dir = only_run_dir(runs, scenario)
    results = assert_valid_run(run_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_no_secret_in(cluster, run_dir)
    assert not any(s in result.stdout + result.stderr for s in passwords(cluster).values())
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    return run_dir, results, history


def test_secrets_are_owner_only_and_in_no_log(secured: RunningCluster) -> None:
    secrets = secured.dir / "secrets"
    for path in (secrets, *(p for p in secrets.rglob("*") if p.is_dir())):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    # Keys, key stores, passwords, client properties, and the nodes' properties (their JAAS passwords); certificates
    # are public.
    kept = [p for p in secrets.rglob("*") if p.is_file() and not p.name.endswith(("-cert.pem", "ca.pem"))]
    for path in [*kept, *secured.dir.glob("server-*.properties")]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert_no_secret_in(secured, secured.dir / "logs")


def test_broker_failover_with_librdkafka_and_java_clients_is_valid(secured: RunningCluster, tmp_path: Path) -> None:
    _, results, history = run(secured, "secured-broker-failover", tmp_path)
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    configs = {op["process"]: op for op in history if op["f"] == "client-config"}
    assert {op["client"] for op in configs.values()} == {"librdkafka", "kafka-java"}
    for op in configs.values():
        said = {e["name"]: e["value"] for e in op["config"]}
        assert said["security.protocol"] == "SASL_SSL" and said["sasl.username"] == "failsafe-client", op
    acked = {op["process"] for op in history if op["f"] == "send" and op["type"] == "ok"}
    assert {"producer", "vproducer"} <= acked


def test_a_scram_password_changed_under_load_is_refused_at_reauthentication_and_loses_nothing(
    secured: RunningCluster, tmp_path: Path
) -> None:
    before = passwords(secured)["failsafe-client"]
    run_dir, results, history = run(secured, "scram-password-change", tmp_path)
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    # The undo gave the old password back, in Kafka and in the clients' file.
    assert passwords(secured)["failsafe-client"] == before
    start = next(op for op in history if op["f"] == "fault-start")
    stop = next(op for op in history if op["f"] == "fault-stop" and op["fault"] == start["fault"])
    # Sessions ended at their re-authentication (KIP-368), which the brokers refused with the new password in force.
    refused = (run_dir / "logs" / "producer.client.log").read_text().count("failed during re-authentication")
    assert refused > 0
    acked_after = [op for op in history if op["f"] == "send" and op["type"] == "ok" and op["time_ns"] > stop["time_ns"]]
    assert acked_after, "the producer wrote again once its password was back"


def test_an_acl_removed_during_a_controller_failover_fails_sends_and_loses_nothing(
    secured: RunningCluster, tmp_path: Path
) -> None:
    _, results, history = run(secured, "acl-removed-during-controller-failover", tmp_path)
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    failed = [op for op in history if op["f"] == "send" and op["type"] == "fail"]
    assert failed and {op["error"] for op in failed} == {"TOPIC_AUTHORIZATION_FAILED"}
    stop = next(op for op in history if op["f"] == "fault-stop" and op["fault"] == "acl-removed")
    assert any(op["f"] == "send" and op["type"] == "ok" and op["time_ns"] > stop["time_ns"] for op in history)


def test_a_broker_s_certificate_rotated_then_expired_while_it_serves(secured: RunningCluster, tmp_path: Path) -> None:
    """Both through a dynamic listener update on broker 0, each undone by deleting it; a new client's view between."""
    cluster = Cluster.open(secured.dir)  # registers the cluster's client settings, as a run does
    broker = cluster.node(0, "broker")
    secrets = secrets_of(cluster.dir.root, cluster.spec)
    assert secrets is not None
    own = presented_serial(tls_listeners(cluster.spec, broker)[0], secrets)
    alone = f"{broker.client_address}:{broker.port}"  # a client that knows only broker 0

    def start(name: str):  # noqa: ANN202 - the AppliedFault
        spec = FaultSpec(name, 0, params=NodeChoice(node=0))
        return fault_type(name).start(spec, FaultTargets(cluster, None, lambda partition: None))

    rotated = start(CERTIFICATE_ROTATED)
    try:
        said = rotated.details["brokers"]["0"]
        assert said["listeners"] == ["PLAINTEXT", "REPLICATION"] and said["new_client"] == "accepted", said
        for listener in tls_listeners(cluster.spec, broker):
            assert presented_serial(listener, secrets) != own, listener
        check_access(alone)
    finally:
        rotated.undo()
    assert rotated.stop_details["back_ms"]["0"] >= 0
    # An expired certificate on the inter-broker listener: Kafka checks it with a handshake and refuses it.
    replication = [x for x in tls_listeners(cluster.spec, broker) if x.name == "REPLICATION"]
    stale = issue(secrets.authority, tmp_path / "stale", broker.name, certificate_names(broker), valid_days=-1)
    try:
        with pytest.raises(FaultError, match="validity check failed"):
            alter_key_store(cluster, broker, replication, stale.key_store)
    finally:
        alter_key_store(cluster, broker, replication, None)  # nothing to delete unless Kafka took it
    expired = start(CERTIFICATE_EXPIRED)
    try:
        said = expired.details["brokers"]["0"]
        # Not the inter-broker listener: Kafka refuses an expired certificate there (faults/certificates.py).
        assert said["listeners"] == ["PLAINTEXT"] and said["new_client"] == "refused: certificate has expired", said
        with pytest.raises(ClientSecurityError, match="certificate verify failed"):
            check_access(alone, timeout_s=10)
    finally:
        expired.undo()
    check_access(alone)
    for listener in tls_listeners(cluster.spec, broker):
        assert presented_serial(listener, secrets) == own, listener


def test_the_console_keeps_its_token_and_loopback_and_reads_the_secured_cluster(secured: RunningCluster) -> None:
    topic = "console-secured"
    created = secured.cli("topics", "create", topic, "--partitions", "2", "--replication-factor", "3")
    assert created.returncode == 0, created.stderr
    console = start_console(secured.dir)
    try:
        listening = listening_addresses(console)
        assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
        with httpx.Client(base_url=console.base, timeout=10) as http:
            assert http.get("/api/topics").status_code == 401
            # Its admin client reaches the SASL_SSL listeners as failsafe-admin: the topic with its partitions.
            shown = wait_until(
                lambda: next(
                    (t for t in http.get("/api/topics", headers=console.headers).json() if t["name"] == topic), None
                ),
                60,
                "the console never showed the topic",
            )
            assert len(shown["partitions"]) == 2 and shown["replication_factor"] == 3, shown
            cluster = http.get("/api/cluster", headers=console.headers).json()
            assert {n["state"] for n in cluster["nodes"]} == {"up"}, cluster["nodes"]
    finally:
        err = stop_console(console, secured.dir)
    assert "Traceback" not in err and not any(p in err for p in passwords(secured).values())


def test_attach_with_the_user_s_client_properties_and_refusals_in_one_line(
    secured: RunningCluster, tmp_path: Path
) -> None:
    text = (resources.files("failsafe.scenarios") / "catalog" / "pubsub.toml").read_text()
    text = text.replace("my-failsafe-topic", "attached-secured").replace('name = "pubsub"', 'name = "attached-secured"')
    scenario = tmp_path / "attached-secured.toml"
    scenario.write_text(text)
    ca = secured.dir / "secrets" / "ca" / "ca.pem"
    good = "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=failsafe-admin\n"
    good += f"ssl.ca.location={ca}\n"
    files = {
        "good": good + f"sasl.password={passwords(secured)['failsafe-admin']}\n",
        "wrong-password": good + "sasl.password=not-the-password\n",
        "untrusted": good.replace(f"ssl.ca.location={ca}\n", "")
        + f"sasl.password={passwords(secured)['failsafe-admin']}\n",
    }
    work = tmp_path / "work"
    for name, body in files.items():
        (tmp_path / f"{name}.properties").write_text(body)
    for name, said in (("wrong-password", "invalid credentials"), ("untrusted", "certificate verify failed")):
        config = str(tmp_path / f"{name}.properties")
        refused = run_cli(
            "run", str(scenario), "--attach", secured.bootstrap, "--client-config", config, "--dir", str(work),
            timeout_s=RUN_TIMEOUT_S,
        )  # fmt: skip
        assert refused.returncode == 2, refused.stdout + refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "refused failsafe's client" in lines[0] and said in lines[0], refused.stderr
    result = run_cli(
        "run", str(scenario), "--attach", secured.bootstrap, "--client-config", str(tmp_path / "good.properties"),
        "--dir", str(work), timeout_s=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run_dir(work / "runs", "attached-secured")
    assert_valid_run(run_dir)
    assert_no_secret_in(secured, run_dir)
    kept = work / "secrets" / "clients" / "attached.properties"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE((work / "secrets").stat().st_mode) == 0o700


def test_a_node_whose_certificate_the_cluster_s_ca_did_not_sign_keeps_it_from_starting(
    secured: RunningCluster, tmp_path: Path
) -> None:
    """Last in the module: it stops the module's cluster. Broker 0 gets a certificate of a stranger CA for its own
    name and addresses; Kafka checks its inter-broker listener's key store against its trust store at start-up and
    exits (PKIX path validation failed: signature check failed), and `failsafe up` says so in one line with exit 5
    (failsafe's own cluster could not start), where a client's bad settings are exit 2."""
    assert secured.cli("down").returncode == 0
    nodes = secured.dir / "secrets" / "nodes"
    own = x509.load_pem_x509_certificate((nodes / "server-0-cert.pem").read_bytes())
    names = own.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    addresses = (*map(str, names.get_values_for_type(x509.IPAddress)), *names.get_values_for_type(x509.DNSName))
    forged = issue(make_authority(tmp_path / "stranger"), tmp_path / "forged", "server-0", addresses)
    store = nodes / "server-0.pem"
    kept = store.read_bytes()
    write_secret(store, forged.key_store.read_bytes())
    try:
        result = secured.cli("up", "--timeout-s", "40", timeout_s=RUN_TIMEOUT_S)
    finally:
        write_secret(store, kept)
        secured.cli("down")
    assert result.returncode == 5, result.stdout + result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("failsafe:")]
    assert len(said) == 1 and "Traceback" not in result.stderr, result.stderr
    assert not any(p in result.stdout + result.stderr for p in passwords(secured).values())
