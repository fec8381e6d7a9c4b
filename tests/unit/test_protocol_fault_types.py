"""Protocol faults without a cluster: their fields and what they refuse, their draws, the proxies they make a run ask
for, and the listeners of a cluster with proxies."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import failsafe.faults  # noqa: F401 - registers the fault types
from failsafe.cluster.properties import kraft_properties
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES, FaultContext, FaultError
from failsafe.faults.draw import Arena
from failsafe.history.ops import Family
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.registry import load_scenario

PROTOCOL = sorted(name for name, t in FAULT_TYPES.items() if t.family == Family.PROTOCOL)
CTX = FaultContext(where="s.faults[0]", topics={"t": 3}, clients={"transactional-ids": ("writer-0",)})


def test_the_six_protocol_faults_are_registered_and_need_proxies() -> None:
    assert PROTOCOL == [
        "delay-request",
        "delay-response",
        "disconnect-on",
        "drop-response",
        "duplicate-request",
        "hold",
    ]
    for name in PROTOCOL:
        assert FAULT_TYPES[name].cluster_needs == ("protocol_proxy",)
        assert "--protocol-proxy" in FAULT_TYPES[name].fits(ClusterSpec())
        assert FAULT_TYPES[name].fits(ClusterSpec(protocol_proxy=True)) is None


@pytest.mark.parametrize(
    ("fault", "table", "field", "fragment"),
    [
        ("hold", {}, "api", "missing"),
        ("hold", {"api": "Commit"}, "api", "not an API"),
        ("hold", {"api": "EndTxn", "clients": " "}, "clients", "empty pattern"),
        ("drop-response", {"api": "Produce", "after": "later"}, "after", "close, stall"),
        ("delay-request", {"api": "Fetch", "delay_ms": -5}, "delay_ms", "not negative"),
        ("duplicate-request", {"api": "Produce", "probability": 1.5}, "probability", "(0, 1]"),
        ("disconnect-on", {"api": "EndTxn", "limit": 0}, "limit", "at least 1"),
        ("hold", {"api": "EndTxn", "node": 7}, "node", "not a broker"),
        ("hold", {"api": "EndTxn", "role": "txn-coordinator", "transactional_id": "nobody"}, "transactional_id", ""),
        ("hold", {"api": "EndTxn", "window": 3}, "window", "not a field"),
    ],
)
def test_a_bad_field_is_named(fault: str, table: dict, field: str, fragment: str) -> None:
    with pytest.raises(FaultError, match=rf"s\.faults\[0\]\.{field}") as raised:
        FAULT_TYPES[fault].parse(table, CTX)
    assert fragment in str(raised.value)


def test_good_fields_parse_with_names_or_numbers() -> None:
    params = FAULT_TYPES["hold"].parse(
        {"api": "EndTxn, 24", "clients": "writer-*", "role": "txn-coordinator", "transactional_id": "writer-0"}, CTX
    )
    assert params.api_keys() == [26, 24] and params.clients == "writer-*"
    delay = FAULT_TYPES["delay-response"].parse({"api": "Fetch", "delay_ms": 250, "jitter_ms": 50}, CTX)
    assert (delay.delay_ms, delay.jitter_ms, delay.role) == (250.0, 50.0, "all")


@pytest.mark.parametrize("fault", PROTOCOL)
def test_every_draw_is_a_fault_a_scenario_could_write_and_takes_no_node(fault: str) -> None:
    arena = Arena(("t-0", "t-1", "t-2"), brokers=3, txn_clients=("writer-0",))
    rng = random.Random(53)
    apis = set()
    for _ in range(50):
        drawn = FAULT_TYPES[fault].draw(rng, arena)  # type: ignore[misc]
        assert (drawn.brokers, drawn.controllers) == (0, 0)
        FAULT_TYPES[fault].parse(drawn.fields, CTX)
        apis.add(drawn.fields["api"])
    assert len(apis) > 1, "the API is part of the draw"


def test_a_scenario_with_a_protocol_fault_gets_a_cluster_with_proxies() -> None:
    scenario = load_scenario("produce-response-lost")
    needs = needs_of([scenario])
    assert needs.protocol_proxy
    assert spec_for(needs, None, None, None).protocol_proxy
    assert "--protocol-proxy" in (misfit(ClusterSpec(), needs, [scenario]) or "")
    assert misfit(ClusterSpec(protocol_proxy=True), needs, [scenario]) is None
    assert not needs_of([load_scenario("broker-failover")]).protocol_proxy


def test_a_broker_behind_its_proxy_advertises_the_proxy_and_a_direct_listener() -> None:
    spec = ClusterSpec(protocol_proxy=True).validate()
    broker = spec.brokers_nodes()[1]
    props = kraft_properties(spec, broker, Path("/tmp/c"))
    assert props["listeners"].startswith("PLAINTEXT://127.0.0.1:9593,DIRECT://127.0.0.1:9643,REPLICATION://")
    assert props["advertised.listeners"].startswith("PLAINTEXT://127.0.0.1:9093,DIRECT://127.0.0.1:9643,")
    assert "DIRECT:PLAINTEXT" in props["listener.security.protocol.map"]
    assert spec.direct_bootstrap_servers() == "127.0.0.1:9642,127.0.0.1:9643,127.0.0.1:9644"
    plain = kraft_properties(ClusterSpec(), broker, Path("/tmp/c"))
    assert "DIRECT" not in plain["listeners"] and plain["advertised.listeners"].startswith("PLAINTEXT://127.0.0.1:9093")


@pytest.mark.parametrize(
    "spec",
    [
        ClusterSpec.zookeeper_mode(protocol_proxy=True),
        ClusterSpec(protocol_proxy=True, placement={f"server-{i}": "10.0.0.2" for i in (0, 1, 2, 1000)}),
    ],
)
def test_proxies_are_refused_where_they_cannot_stand(spec: ClusterSpec) -> None:
    with pytest.raises(UserError, match="--protocol-proxy"):
        spec.validate()


def test_ports_behind_the_proxies_must_be_free_of_the_others() -> None:
    # base 9092: the brokers' own listeners at 9592-9594 and DIRECT at 9642-9644 would meet the metrics' ports moved
    # there.
    with pytest.raises(UserError, match="overlap"):
        ClusterSpec(protocol_proxy=True, metrics_base_port=9590).validate()


def test_a_campaign_draws_protocol_faults_when_asked_and_its_cluster_then_has_proxies() -> None:
    from failsafe.campaigns.nemesis import Envelope
    from failsafe.campaigns.plan import Plan

    default = Plan.make("acks-all", (), Envelope.SAFE, 20)
    assert not set(default.nemesis.faults) & set(PROTOCOL) and not default.scenario.cluster.protocol_proxy
    asked = Plan.make("acks-all", ("hold", "kill"), Envelope.SAFE, 20)
    assert asked.scenario.cluster.protocol_proxy and needs_of([asked.scenario]).protocol_proxy
