"""Profiles (cluster/profiles.py): loaded and validated from their data files, merged under what the user and the
scenario set, matched by placement, recorded in the state file. Nothing here starts a process."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from failsafe.cluster.config import render_server_properties
from failsafe.cluster.profiles import (
    DEFAULT_PROFILE,
    broker_settings,
    load_profile,
    parse_profile,
    profile_names,
    profile_of,
    spec_fields,
)
from failsafe.cluster.properties import kraft_properties
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.scenarios.base import ScenarioError, TopicSpec
from failsafe.scenarios.engine.core import profile_context
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.engine.setup import topic_configs
from failsafe.scenarios.registry import load_scenario
from failsafe.workloads.client_defaults import ClientDefaults
from failsafe.workloads.share.consumer import ShareConsumerSpec
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec
from failsafe.workloads.txn.specs import KAFKA_JAVA, CtpSpec, TxnProducerSpec
from failsafe.workloads.verifiable.clients import VerifiableConsumerSpec, VerifiableProducerSpec
from failsafe.workloads.worker import client_config_fields
from tests.helpers import run_cli

FAST = "fast-failover"
DURABLE = "durable"
PROFILES_DIR = Path(__file__).parents[2] / "src" / "failsafe" / "cluster" / "profiles"
GOOD = 'version = 1\ndescription = "a test profile"\n'


def fast_spec(**fields) -> ClusterSpec:
    return ClusterSpec(**{**spec_fields(FAST), **fields})


def defaults_of(name: str) -> ClientDefaults:
    return profile_context(load_profile(name))["client_defaults"]


def client_settings(spec) -> dict[str, str]:
    """What the worker's client-config op would record: how a user and the e2e test read a client's settings back."""
    return {entry["name"]: entry["value"] for entry in client_config_fields(spec)["config"]}


# -- loading ------------------------------------------------------------------------------------------------------
def test_failsafe_ships_three_profiles_each_versioned_and_described() -> None:
    assert profile_names() == [DEFAULT_PROFILE, DURABLE, FAST]
    for name in profile_names():
        profile = load_profile(name)
        assert profile.name == name and profile.version >= 1 and profile.description
    # A state file written before profiles reads as the defaults profile's version: the two must agree.
    assert (
        ClusterSpec().profile == DEFAULT_PROFILE
        and ClusterSpec().profile_version == load_profile(DEFAULT_PROFILE).version
    )


def test_defaults_sets_nothing() -> None:
    assert all(not values for values in load_profile(DEFAULT_PROFILE).settings().values())


def test_fast_failover_has_the_values_each_library_takes() -> None:
    p = load_profile(FAST)
    assert p.broker == {
        "broker.session.timeout.ms": "750",
        "broker.heartbeat.interval.ms": "150",
        "replica.lag.time.max.ms": "10000",
    }
    common = {
        "request.timeout.ms": "5000",
        "retry.backoff.ms": "50",
        "retry.backoff.max.ms": "250",
        "metadata.max.age.ms": "30000",
        "socket.connection.setup.timeout.ms": "1000",
    }
    # librdkafka's request.timeout.ms is only the broker's ack timeout: its own wait is socket.timeout.ms.
    assert p.client("producer", "librdkafka") == {**common, "socket.timeout.ms": "5000"}
    assert p.client("producer", KAFKA_JAVA) == common
    assert p.client("consumer", "librdkafka") == {
        "session.timeout.ms": "10000",
        "heartbeat.interval.ms": "1000",
        "retry.backoff.ms": "50",
    }
    # Every section of it says how its values were chosen.
    text = (PROFILES_DIR / "fast-failover.toml").read_text()
    assert "provisional" not in text
    for section in (
        "[broker]\n# chosen by measurement",
        "[producer]\n# from the clients' documentation",
        "[producer.librdkafka]\n# from librdkafka's",
        "[consumer]\n# from the clients' documentation; untested",
    ):
        assert section in text, section


def test_durable_is_what_findings_10_and_11_measured() -> None:
    p = load_profile(DURABLE)
    assert p.topic == {"min.insync.replicas": "2", "flush.messages": "1", "unclean.leader.election.enable": "false"}
    assert p.broker == {"unclean.leader.election.enable": "false", "min.insync.replicas": "2"}
    assert p.client("producer", "librdkafka") == {"acks": "all", "enable.idempotence": "true"}
    assert "findings.md section 10" in p.description


# -- validation ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version = ", "not valid TOML"),
        (
            GOOD + "[brokers]\na = 1\n",
            "unknown section 'brokers' (known: version, description, broker, topic, producer, consumer)",
        ),
        ('description = "x"\n', "version is None: a whole number from 1"),
        ('version = "1"\ndescription = "x"\n', "version is '1'"),
        ("version = 1\n", "description is missing"),
        (
            GOOD + '[producer.librdkafak]\n"socket.timeout.ms" = 1\n',
            "[producer.librdkafak] names no client library (known: librdkafka, kafka-java)",
        ),
        (GOOD + '[broker]\n"log.dirs" = "/tmp"\n', "[broker] log.dirs is set by failsafe itself"),
        (GOOD + '[consumer]\n"group.protocol" = "consumer"\n', "[consumer] group.protocol is set by failsafe itself"),
        (GOOD + '[topic]\n"flush.messages" = [1]\n', "[topic] flush.messages is [1]: a setting's value is a string"),
        (GOOD + "broker = 3\n", "[broker] must be a table"),
    ],
)
def test_a_bad_profile_file_is_one_line_naming_the_file_and_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(UserError) as e:
        parse_profile(text, "mine", "mine.toml")
    assert (
        str(e.value).startswith("profile mine (mine.toml): ") and message in str(e.value) and "\n" not in str(e.value)
    )


def test_values_are_kafkas_words() -> None:
    p = parse_profile(
        GOOD + '[topic]\n"unclean.leader.election.enable" = true\n"flush.messages" = 1\n"cleanup.policy" = "delete"\n',
        "t",
        "t",
    )
    assert p.topic == {"unclean.leader.election.enable": "true", "flush.messages": "1", "cleanup.policy": "delete"}


def test_an_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(
        UserError,
        match=r"^unknown profile 'fast': the profiles are defaults, durable, fast-failover \(failsafe profiles\)$",
    ):
        load_profile("fast")


@pytest.mark.parametrize("args", [["profiles", "show", "fast"], ["up", "--profile", "fast"]])
def test_an_unknown_profile_on_the_command_line_is_exit_2_in_one_line(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    from failsafe.cli import cluster as cli_cluster
    from failsafe.cli.main import main

    # Whatever the order of up's steps, this test must never start a cluster.
    monkeypatch.setattr(cli_cluster.topology, "topology_kind", lambda *a: pytest.fail("up went on to start a cluster"))
    assert main([*args, *(["--dir", str(tmp_path)] if args[0] == "up" else [])]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == "failsafe: unknown profile 'fast': the profiles are defaults, durable, fast-failover (failsafe profiles)"
    )


def test_profiles_lists_each_with_its_version_and_show_prints_its_settings() -> None:
    listed = run_cli("profiles", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(p["name"], p["version"]) for p in json.loads(listed.stdout)] == [
        (n, load_profile(n).version) for n in profile_names()
    ]
    assert "fast-failover" in run_cli("profiles").stdout
    shown = run_cli("profiles", "show", FAST)
    assert shown.returncode == 0, shown.stderr
    assert (
        "[producer.librdkafka]\nsocket.timeout.ms=5000" in shown.stdout
        and "broker.session.timeout.ms=750" in shown.stdout
    )
    as_json = json.loads(run_cli("profiles", "show", DURABLE, "--json").stdout)
    assert as_json["settings"]["topic"]["flush.messages"] == "1" and "consumer" not in as_json["settings"]


# -- broker settings ----------------------------------------------------------------------------------------------
def test_broker_settings_go_to_every_kafka_node_under_the_users_override() -> None:
    spec = fast_spec(overrides={"broker.session.timeout.ms": "4000", "num.io.threads": "4"})
    assert broker_settings(spec) == {
        "broker.session.timeout.ms": "4000",
        "broker.heartbeat.interval.ms": "150",
        "replica.lag.time.max.ms": "10000",
        "num.io.threads": "4",
    }
    root = Path("/tmp/c")
    for node in spec.nodes():  # the controller too: it fences brokers by broker.session.timeout.ms
        props = kraft_properties(spec, node, root)
        assert props["broker.session.timeout.ms"] == "4000" and props["broker.heartbeat.interval.ms"] == "150"
    broker = spec.brokers_nodes()[0]
    assert "\nreplica.lag.time.max.ms=10000\n" in render_server_properties(spec, broker, root)
    # Failsafe's own defaults stay under the profile: an internal topic's replication is still the cluster's.
    assert kraft_properties(spec, broker, root)["offsets.topic.replication.factor"] == "3"


def test_a_zookeeper_mode_broker_gets_them_too() -> None:
    spec = ClusterSpec.zookeeper_mode(**spec_fields(DURABLE))
    props = render_server_properties(spec, spec.brokers_nodes()[0], Path("/tmp/z"))
    assert "\nmin.insync.replicas=2\n" in props and "\nunclean.leader.election.enable=false\n" in props


def test_durable_needs_two_brokers_unless_the_user_overrides_min_insync_replicas() -> None:
    with pytest.raises(
        UserError,
        match=r"^profile durable sets min.insync.replicas=2: a cluster of 1 broker could acknowledge no acks=all write",
    ):
        ClusterSpec(brokers=1, **spec_fields(DURABLE)).validate()
    ClusterSpec(brokers=1, overrides={"min.insync.replicas": "1"}, **spec_fields(DURABLE)).validate()
    ClusterSpec(brokers=2, **spec_fields(DURABLE)).validate()
    with pytest.raises(UserError, match=r"^--override sets min.insync.replicas=3"):
        ClusterSpec(brokers=2, overrides={"min.insync.replicas": "3"}).validate()


def test_a_cluster_made_with_another_version_says_to_make_it_again() -> None:
    old = fast_spec(profile_version=load_profile(FAST).version + 1)
    with pytest.raises(
        UserError, match=r"made with version 2 of profile fast-failover and failsafe now ships version 1: make it again"
    ):
        profile_of(old)
    with pytest.raises(UserError, match="unknown profile 'gone'"):
        ClusterSpec(profile="gone").validate()


# -- the state file -----------------------------------------------------------------------------------------------
def test_a_state_file_without_a_profile_is_defaults_and_one_with_it_keeps_it() -> None:
    old = {k: v for k, v in ClusterSpec().to_json().items() if k not in ("profile", "profile_version")}
    assert ClusterSpec.from_json(old).profile == DEFAULT_PROFILE and ClusterSpec.from_json(old).profile_version == 1
    assert ClusterSpec.from_json(fast_spec().to_json()) == fast_spec()
    fields = list(ClusterSpec().to_json())
    assert fields[fields.index("features") + 1 : fields.index("features") + 3] == ["profile", "profile_version"]
    with pytest.raises(ValueError, match=r"spec.profile_version is '1', not a whole number"):
        ClusterSpec.from_json({**old, "profile_version": "1"})
    with pytest.raises(ValueError, match=r"spec.profile is 2, not a string"):
        ClusterSpec.from_json({**old, "profile": 2})


def test_status_shows_the_clusters_profile(tmp_path: Path) -> None:
    from tests.helpers import free_port_block
    from tests.unit.test_topology import _save

    _save(tmp_path, fast_spec(base_port=free_port_block(3), controller_base_port=free_port_block(1)))
    status = run_cli("status", "--json", "--dir", str(tmp_path))
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["profile"] == {"name": FAST, "version": 1}
    assert "profile fast-failover version 1" in " ".join(run_cli("status", "--dir", str(tmp_path)).stdout.split())


# -- topic settings -----------------------------------------------------------------------------------------------
def test_topic_settings_go_under_the_scenarios_own_configs() -> None:
    durable = load_profile(DURABLE).topic
    topic = TopicSpec("t", 3, 3, {"flush.messages": "100", "retention.ms": "60000"})
    assert topic_configs(topic, durable) == {
        "min.insync.replicas": "2",
        "flush.messages": "100",
        "unclean.leader.election.enable": "false",
        "retention.ms": "60000",
    }
    assert topic_configs(topic, {}) == topic.configs


def test_a_topic_too_small_for_the_profiles_min_insync_replicas_is_refused_unless_it_sets_its_own() -> None:
    durable = load_profile(DURABLE).topic
    with pytest.raises(
        UserError, match=r"topic t has replication factor 1 and the cluster's profile sets min.insync.replicas=2"
    ):
        topic_configs(TopicSpec("t", 1, 1), durable)
    assert topic_configs(TopicSpec("t", 1, 1, {"min.insync.replicas": "1"}), durable)["min.insync.replicas"] == "1"


# -- client settings ----------------------------------------------------------------------------------------------
def test_the_engine_hands_each_library_its_settings() -> None:
    assert profile_context(None) == {}
    context = profile_context(load_profile(FAST))
    assert context["topic_configs"] == {}
    defaults = context["client_defaults"]
    assert (
        defaults.producer["librdkafka"]["socket.timeout.ms"] == "5000"
        and "socket.timeout.ms" not in defaults.producer[KAFKA_JAVA]
    )
    assert not profile_context(load_profile(DEFAULT_PROFILE))["client_defaults"]


def test_a_librdkafka_producer_gets_every_setting_it_does_not_set_itself() -> None:
    fast = defaults_of(FAST)
    settings = client_settings(fast.apply(ProducerSpec("p", "t", properties={"retry.backoff.ms": "200"})))
    assert settings["request.timeout.ms"] == "5000" and settings["socket.timeout.ms"] == "5000"
    assert settings["metadata.max.age.ms"] == "30000" and settings["socket.connection.setup.timeout.ms"] == "1000"
    assert settings["retry.backoff.ms"] == "200", "the scenario's own setting wins"
    # ... and with it its pair: librdkafka refuses retry.backoff.ms above retry.backoff.max.ms (the profile's 250).
    assert "retry.backoff.max.ms" not in settings
    assert client_settings(fast.apply(ProducerSpec("p", "t")))["retry.backoff.max.ms"] == "250"


def test_a_producer_that_sets_its_delivery_timeout_keeps_its_request_timeout() -> None:
    fast = defaults_of(FAST)
    # The Java producer refuses delivery.timeout.ms below linger.ms + request.timeout.ms.
    java = fast.apply(VerifiableProducerSpec("vp", "t", delivery_timeout_ms=3000))
    assert "request.timeout.ms" not in client_settings(java) and client_settings(java)["retry.backoff.ms"] == "50"
    # librdkafka's other name for it is its own setting too.
    aliased = fast.apply(ProducerSpec("p", "t", properties={"message.timeout.ms": "3000"}))
    assert "request.timeout.ms" not in client_settings(aliased)


def test_a_java_producer_gets_the_java_clients_names() -> None:
    settings = client_settings(defaults_of(FAST).apply(VerifiableProducerSpec("vp", "t")))
    assert settings["request.timeout.ms"] == "5000" and "socket.timeout.ms" not in settings


def test_durability_settings_come_all_from_the_producer_or_all_from_the_profile() -> None:
    durable = defaults_of(DURABLE)
    plain = client_settings(durable.apply(ProducerSpec("p", "t")))
    assert plain["acks"] == "all" and plain["enable.idempotence"] == "true"
    # An acks=1 producer must not be made idempotent (librdkafka refuses enable.idempotence without acks=all).
    acks1 = client_settings(durable.apply(ProducerSpec("p", "t", acks="1")))
    assert acks1["acks"] == "1" and acks1["enable.idempotence"] == "false"
    no_retries = client_settings(durable.apply(VerifiableProducerSpec("vp", "t", retries=0)))
    assert no_retries["retries"] == "0" and no_retries["enable.idempotence"] == "false"
    # librdkafka's other name for acks is the producer's own choice too.
    assert durable.apply(ProducerSpec("p", "t", properties={"request.required.acks": "1"})).properties == {
        "request.required.acks": "1"
    }


def test_a_classic_consumer_gets_the_session_a_kip848_or_share_member_does_not() -> None:
    fast = defaults_of(FAST)
    classic = client_settings(fast.apply(ConsumerSpec("c", ("t",), group="g")))
    assert (classic["session.timeout.ms"], classic["heartbeat.interval.ms"], classic["retry.backoff.ms"]) == (
        "10000",
        "1000",
        "50",
    )
    kip848 = client_settings(
        fast.apply(ConsumerSpec("c", ("t",), group="g", properties={"group.protocol": "consumer"}))
    )
    assert (
        "session.timeout.ms" not in kip848
        and "heartbeat.interval.ms" not in kip848
        and kip848["retry.backoff.ms"] == "50"
    )
    java848 = client_settings(fast.apply(VerifiableConsumerSpec("vc", ("t",), group="g", group_protocol="consumer")))
    assert "session.timeout.ms" not in java848 and java848["retry.backoff.ms"] == "50"
    share = fast.apply(ShareConsumerSpec("s", ("t",), group="q"))
    assert share.properties == {"retry.backoff.ms": "50"}


def test_a_consumers_own_session_wins_and_the_heartbeat_still_comes() -> None:
    settings = client_settings(
        defaults_of(FAST).apply(VerifiableConsumerSpec("vc", ("t",), group="g", session_timeout_ms=6000))
    )
    assert settings["session.timeout.ms"] == "6000" and settings["heartbeat.interval.ms"] == "1000"


def test_transactional_clients_keep_what_transactions_need() -> None:
    fast, durable = defaults_of(FAST), defaults_of(DURABLE)
    writer = TxnProducerSpec(process="w", topics=("t",), transactional_id="w", driver=KAFKA_JAVA)
    assert durable.apply(writer) == writer
    assert client_settings(fast.apply(writer))["request.timeout.ms"] == "5000"
    processor = fast.apply(CtpSpec(process="x", input_topic="in", output_topic="out", group="g", transactional_id="x"))
    assert processor.properties["socket.timeout.ms"] == "5000"
    assert (
        "session.timeout.ms" not in processor.consumer_properties
        and processor.consumer_properties["heartbeat.interval.ms"] == "1000"
    )
    assert client_settings(processor)["session.timeout.ms"] == "10000"


def test_applying_twice_changes_nothing_more() -> None:
    fast = defaults_of(FAST)
    for spec in (ProducerSpec("p", "t"), ConsumerSpec("c", ("t",), group="g"), VerifiableProducerSpec("vp", "t")):
        once = fast.apply(spec)
        assert fast.apply(once) == once
    assert ClientDefaults().apply(ProducerSpec("p", "t")) == ProducerSpec("p", "t")


def test_the_pool_gives_every_client_it_starts_the_profiles_settings(tmp_path: Path) -> None:
    import io
    from types import SimpleNamespace

    from failsafe.workloads.pool import WorkerPool

    class FakeSupervisor:
        def spawn(self, cmd: list[str], **kwargs: object) -> SimpleNamespace:
            return SimpleNamespace(popen=SimpleNamespace(stdout=io.BytesIO(b"")))

    pool = WorkerPool(SimpleNamespace(write_line=lambda line: None), FakeSupervisor(), tmp_path, defaults_of(FAST))  # type: ignore[arg-type]
    worker = pool.start(ConsumerSpec("c-0", ("t",), group="g"))
    worker.reader.join(5)
    assert worker.spec.properties["session.timeout.ms"] == "10000"


# -- placement ----------------------------------------------------------------------------------------------------
def test_a_scenario_asking_for_a_profile_fits_only_a_cluster_made_with_it() -> None:
    scenario = load_scenario("broker-failover", ("cluster.profile=fast-failover",))
    needs = needs_of([scenario])
    assert needs.profile == FAST
    started = spec_for(needs, None, None, None)
    assert (started.profile, started.profile_version) == (FAST, load_profile(FAST).version)
    assert misfit(started, needs, [scenario]) is None
    assert misfit(ClusterSpec(brokers=3), needs, [scenario]) == (
        "it runs with profile defaults and the scenario asks for profile "
        "fast-failover (failsafe up --profile fast-failover)"
    )
    # A scenario that asks for none runs on whatever the cluster has; a cluster the run starts is made with the
    # defaults.
    plain = load_scenario("broker-failover")
    assert needs_of([plain]).profile == "" and misfit(started, needs_of([plain]), [plain]) is None
    assert spec_for(needs_of([plain]), None, None, None).profile == DEFAULT_PROFILE


def test_scenarios_asking_for_different_profiles_run_separately() -> None:
    with pytest.raises(
        UserError,
        match=r"these scenarios need clusters of different profiles \(durable and fast-failover\): run them separately",
    ):
        needs_of(
            [
                load_scenario("broker-failover", ("cluster.profile=fast-failover",)),
                load_scenario("queue", ("cluster.profile=durable",)),
            ]
        )


def test_a_cluster_made_with_an_older_version_of_its_profile_fits_no_scenario() -> None:
    plain = load_scenario("broker-failover")
    reason = misfit(fast_spec(profile_version=7), needs_of([plain]), [plain])
    assert reason is not None and "version 7 of profile fast-failover" in reason


def test_a_scenarios_overrides_are_met_by_its_clusters_profile() -> None:
    scenario = load_scenario("broker-failover", ('cluster.overrides."min.insync.replicas"="2"',))
    needs = needs_of([scenario])
    assert misfit(ClusterSpec(**spec_fields(DURABLE)), needs, [scenario]) is None
    assert (
        misfit(ClusterSpec(), needs, [scenario])
        == "it was started without min.insync.replicas=2 (failsafe up --override min.insync.replicas=2)"
    )
    # The user's --override wins over the profile's: the cluster no longer has what the scenario needs.
    overridden = ClusterSpec(overrides={"min.insync.replicas": "1"}, **spec_fields(DURABLE))
    assert misfit(overridden, needs, [scenario]) is not None


def test_a_scenario_naming_an_unknown_profile_is_refused_when_parsed() -> None:
    with pytest.raises(
        ScenarioError, match=r"broker-failover.cluster.profile: 'fast' is not one of defaults, durable, fast-failover"
    ):
        load_scenario("broker-failover", ("cluster.profile=fast",))


def test_a_dr_pairs_backup_keeps_the_primarys_profile() -> None:
    from failsafe.cluster.topology.pair import backup_spec

    assert backup_spec(fast_spec()).profile == FAST and replace(fast_spec(), brokers=1).profile_version == 1
