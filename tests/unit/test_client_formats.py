"""Pure formatting and validation of the client commands (no broker needed)."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from failsafe.errors import KafkaClientError, UserError
from failsafe.tools.consume import compile_format
from failsafe.tools.groups import GroupDescription, GroupPartitionRow, format_group
from failsafe.tools.kafka_tools import main_class, needs_bootstrap
from failsafe.tools.produce import key_separator, producer_config
from failsafe.tools.topics import PartitionInfo, TopicInfo, Topics, format_describe, kafka_uuid, validate_topic_name


class FakeMessage:
    def __init__(self, key: bytes | None, value: bytes | None) -> None:
        self._key, self._value = key, value

    def topic(self) -> str:
        return "demo.purchases"

    def partition(self) -> int:
        return 4

    def offset(self) -> int:
        return 17

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return (1, 1700000000123)


def test_kcat_format_of_seed_003() -> None:
    render = compile_format("Part-%p => %k:%s\\n")
    assert render(FakeMessage(b"SF05", b'{"qty": 1}')) == 'Part-4 => SF05:{"qty": 1}\n'


def test_every_kcat_token() -> None:
    render = compile_format("%t|%p|%o|%k|%s|%T|%K|%S|%%\\t\\n")
    assert render(FakeMessage(b"ab", b"xyz")) == "demo.purchases|4|17|ab|xyz|1700000000123|2|3|%\t\n"


def test_null_key_prints_empty_with_length_minus_one() -> None:
    assert compile_format("[%k][%K]")(FakeMessage(None, b"v")) == "[][-1]"


def test_unknown_format_token_is_refused() -> None:
    with pytest.raises(UserError, match="unknown token '%x'"):
        compile_format("%x")


@pytest.mark.parametrize("name", ["", ".", "..", "has space", "slash/no", "x" * 250, "ü"])
def test_illegal_topic_names(name: str) -> None:
    with pytest.raises(UserError):
        validate_topic_name(name)


@pytest.mark.parametrize("name", ["my-failsafe-topic", "demo.purchases", "a_b", "x" * 249])
def test_legal_topic_names(name: str) -> None:
    validate_topic_name(name)


def test_describe_prints_none_for_a_partition_without_leader() -> None:
    info = TopicInfo(
        "foo", "AAAAAAAAAAAAAAAAAAAAAA", (PartitionInfo(1, None, (2, 1), (1,)),), (("min.insync.replicas", "2"),)
    )
    assert format_describe(info) == (
        "Topic: foo\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: "
        "min.insync.replicas=2\n"
        "\tTopic: foo\tPartition: 1\tLeader: none\tReplicas: 2,1\tIsr: 1\tElr: \tLastKnownElr: "
    )


def test_describe_of_a_zookeeper_mode_topic_says_elr_not_available_like_kafka_3_9() -> None:
    info = TopicInfo("foo", "AAAAAAAAAAAAAAAAAAAAAA", (PartitionInfo(0, 1, (1, 2), (1, 2)),), ())
    assert format_describe(info, elr_known=False).splitlines()[1].endswith("Isr: 1,2\tElr: N/A\tLastKnownElr: N/A")


def test_topic_id_is_printed_base64url_like_kafka() -> None:
    assert kafka_uuid("x+ZLb+GRTba+kwFRawGV/w==") == "x-ZLb-GRTba-kwFRawGV_w"


def test_group_table_uses_kafka_column_widths() -> None:
    desc = GroupDescription(
        "mygroup", "STABLE", 1, (GroupPartitionRow("mygroup", "foo", 0, 5, 7, 2, "rdkafka-1", "/127.0.0.1", "c1"),)
    )
    header, row = format_group(desc).splitlines()
    assert header.startswith("GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  ")
    assert row.split() == ["mygroup", "foo", "0", "5", "7", "2", "rdkafka-1", "/127.0.0.1", "c1"]


def test_group_without_members_shows_dashes() -> None:
    desc = GroupDescription("g", "EMPTY", 0, (GroupPartitionRow("g", "t", 0, None, 3, None, None, None, None),))
    text = format_group(desc)
    assert text.splitlines()[-1].split() == ["g", "t", "0", "-", "3", "-", "-", "-", "-"]


def test_console_producer_key_properties_are_understood() -> None:
    assert key_separator(None, {"parse.key": "true", "key.separator": ":"}) == ":"
    assert key_separator(None, {}) is None
    assert key_separator("|", {"parse.key": "true", "key.separator": ":"}) == "|"


def test_idempotence_follows_the_java_default_only_where_acks_allow_it() -> None:
    assert producer_config("b:1", "all", {})["enable.idempotence"] is True
    assert producer_config("b:1", "1", {})["enable.idempotence"] is False
    assert producer_config("b:1", "1", {"parse.key": "true"}).get("parse.key") is None
    with pytest.raises(UserError, match="--acks"):
        producer_config("b:1", "2", {})


def test_tools_get_the_local_bootstrap_only_when_none_given() -> None:
    assert needs_bootstrap("topics", ["--describe"])
    assert not needs_bootstrap("topics", ["--bootstrap-server", "x:1", "--describe"])
    assert not needs_bootstrap("kafka-topics.sh", ["--bootstrap-server=x:1"])
    assert not needs_bootstrap("metadata-quorum", ["describe"])
    assert not needs_bootstrap("topics", ["--version"])


class FakeDist:
    version = "4.3.1"

    def __init__(self, classes: set[str]) -> None:
        self.classes = classes

    def has_class(self, name: str) -> bool:
        return name in self.classes


def test_tool_class_is_the_first_present_in_the_jars() -> None:
    dist = FakeDist({"kafka.admin.ConfigCommand"})
    assert main_class(dist, "configs") == "kafka.admin.ConfigCommand"
    assert main_class(dist, "kafka-configs.sh") == "kafka.admin.ConfigCommand"
    with pytest.raises(UserError, match="has no topics tool"):
        main_class(dist, "topics")
    with pytest.raises(UserError, match="unknown Kafka tool 'nope'"):
        main_class(dist, "nope")


def test_eligible_leader_replicas_from_kafkas_describe_fill_the_partitions_that_lost_replicas() -> None:
    shrunk = TopicInfo("t", "id", (PartitionInfo(0, 1, (1, 2, 0), (1,)), PartitionInfo(1, None, (2, 0, 1), ())), ())
    healthy = TopicInfo("h", "id", (PartitionInfo(0, 1, (1, 2), (1, 2)),), ())
    assert shrunk.may_have_elr and not healthy.may_have_elr
    lines = format_describe(shrunk, elr={("t", 0): ("2", ""), ("t", 1): ("", "2")}).splitlines()
    assert lines[1].endswith("Isr: 1\tElr: 2\tLastKnownElr: ")
    assert lines[2].endswith("Leader: none\tReplicas: 2,0,1\tIsr: \tElr: \tLastKnownElr: 2")


class _DeletingAdmin:
    """delete_topics answers every name with the one error given."""

    def __init__(self, code: int) -> None:
        self.code = code

    def delete_topics(self, names: list[str], request_timeout: float) -> dict[str, Future]:
        futures: dict[str, Future] = {}
        for name in names:
            futures[name] = Future()
            futures[name].set_exception(KafkaException(KafkaError(self.code)))
        return futures


def test_deleting_a_topic_already_gone_is_an_error_unless_missing_is_ok() -> None:
    topics = Topics("127.0.0.1:1", timeout_s=1)
    topics.admin = _DeletingAdmin(KafkaError.UNKNOWN_TOPIC_OR_PART)  # type: ignore[assignment]
    topics.delete("demo.purchases", missing_ok=True)
    with pytest.raises(KafkaClientError, match="cannot delete topic demo.purchases: UNKNOWN_TOPIC_OR_PART"):
        topics.delete("demo.purchases")
    topics.admin = _DeletingAdmin(KafkaError.TOPIC_AUTHORIZATION_FAILED)  # type: ignore[assignment]
    with pytest.raises(KafkaClientError, match="TOPIC_AUTHORIZATION_FAILED"):
        topics.delete("demo.purchases", missing_ok=True)
