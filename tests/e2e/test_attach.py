"""``failsafe run --attach``: a client-only scenario on a cluster the run did not start changes nothing there but its
own topic (topics and configs listed before and after); a fault it cannot make there is refused before anything runs."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.helpers import run_cli

pytestmark = pytest.mark.cluster
TOPIC = "attached-topic"


def snapshot(bootstrap: str) -> tuple[set[str], dict[str, dict[str, str]]]:
    """The cluster's topics, and the configs of its brokers and of every topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(timeout=10)
    # One broker per call (Kafka's rule); the topics all at once.
    calls = [[ConfigResource(ConfigResource.Type.BROKER, str(b))] for b in metadata.brokers]
    if metadata.topics:
        calls.append([ConfigResource(ConfigResource.Type.TOPIC, t) for t in metadata.topics])
    configs = {}
    for batch in calls:
        for resource, future in admin.describe_configs(batch, request_timeout=10).items():
            configs[f"{resource.restype}:{resource.name}"] = {k: v.value for k, v in future.result(timeout=10).items()}
    return set(metadata.topics), configs


def test_a_client_only_scenario_on_an_attached_cluster_changes_only_its_topic(shared_cluster, tmp_path: Path) -> None:
    bootstrap = shared_cluster.bootstrap
    text = (resources.files("failsafe.scenarios") / "catalog" / "pubsub.toml").read_text()
    text = text.replace("my-failsafe-topic", TOPIC).replace('name = "pubsub"', 'name = "attached-pubsub"')
    for group in ("group-a", "group-b", "group-c"):
        text = text.replace(f'"{group}"', f'"attached-{group}"')
    scenario = tmp_path / "attached-pubsub.toml"
    scenario.write_text(text)
    topics_before, configs_before = snapshot(bootstrap)
    assert TOPIC not in topics_before
    work = tmp_path / "work"
    try:
        result = run_cli("run", str(scenario), "--attach", bootstrap, "--dir", str(work))
        assert result.returncode == 0, result.stderr[-3000:]
        assert "attached to the cluster at" in result.stderr
        topics_after, configs_after = snapshot(bootstrap)
        # Kafka's own internal topics may appear (its first consumer group makes __consumer_offsets); nothing else but
        # ours.
        assert {t for t in topics_after - topics_before if not t.startswith("__")} == {TOPIC}
        assert topics_before <= topics_after
        assert {k: v for k, v in configs_after.items() if k in configs_before} == configs_before
        # The topic is there now: a second run would delete it first, which failsafe does only to what it made.
        again = run_cli("run", str(scenario), "--attach", bootstrap, "--dir", str(work))
        assert again.returncode == 2 and again.stderr.strip().splitlines()[-1].startswith(
            f"failsafe: the cluster at {bootstrap} has a topic named {TOPIC}"
        )
        # A network fault needs a cluster failsafe started: refused before anything runs, in one line.
        refused = run_cli("run", "leader-isolated", "--attach", bootstrap, "--dir", str(work))
        assert refused.returncode == 2
        assert refused.stderr.strip().splitlines()[-1] == (
            f"failsafe: leader-isolated: its isolate fault needs a cluster failsafe started "
            f"(--attach {bootstrap} makes no network fault); run it without --attach"
        )
        assert not (work / "failsafe-state.json").exists()
    finally:
        run_cli("topics", "delete", TOPIC, "--bootstrap-server", bootstrap)
