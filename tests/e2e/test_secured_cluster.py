"""A secured cluster (failsafe up --security sasl-ssl, docs/security.md): broker failover with librdkafka's and Kafka's
Java clients is VALID and costs each client a TLS handshake and a SCRAM exchange; a SCRAM password changed under load
and an ACL removed during a controller failover are judged, their refusals measured, nothing acknowledged lost; a run
attached with the user's client properties works, and a wrong password or an untrusted CA is one line and exit 2;
no secret is world-readable, nor in a run directory, a report or a log."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from tests.conftest import RunningCluster, module_cluster
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
