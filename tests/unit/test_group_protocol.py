from __future__ import annotations

import pytest

from failsafe.checkers.group_protocol import group_protocols, member_protocol
from tests.unit.test_checker_builders import assign, client_config, history


@pytest.mark.parametrize(
    ("client", "settings", "protocol"),
    [
        ("librdkafka", {}, "eager"),  # range,roundrobin
        ("kafka-java", {}, "eager"),  # range first, then cooperative-sticky
        ("librdkafka", {"partition.assignment.strategy": "cooperative-sticky"}, "cooperative"),
        (
            "kafka-java",
            {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
            "cooperative",
        ),
        ("kafka-java", {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.StickyAssignor"}, "eager"),
        (
            "kafka-java",
            {"partition.assignment.strategy": "cooperative-sticky, range"},
            "eager",
        ),  # range supports eager only
        (
            "kafka-java",
            {
                "partition.assignment.strategy": "cooperative-sticky, org.apache.kafka.clients.consumer.CooperativeStickyAssignor"  # noqa: E501
            },
            "cooperative",
        ),
        ("librdkafka", {"group.protocol": "consumer", "group.remote.assignor": "range"}, "consumer-range"),
        ("kafka-java", {"group.protocol": "CONSUMER"}, "consumer-uniform"),
        ("librdkafka", {"group.protocol": "classic"}, "eager"),
        ("another-client", {}, None),
    ],
)
def test_a_members_protocol_comes_from_its_settings_or_its_librarys_default(
    client: str, settings: dict, protocol: str | None
) -> None:
    assert member_protocol(client, settings) == protocol


def test_a_group_has_a_protocol_only_when_every_member_agrees_and_said() -> None:
    h = history(
        client_config("a0", group_protocol="consumer"),
        client_config("a1", group_protocol="consumer"),
        client_config("b0", group_protocol="consumer"),
        client_config("b1"),
        assign("a0", [0], group="a"),
        assign("a1", [1], group="a"),
        assign("b0", [0], group="b"),
        assign("b1", [1], group="b"),
        assign("c0", [0], group="c"),
    )
    assert group_protocols(h) == {"a": "consumer-uniform", "b": None, "c": None}
