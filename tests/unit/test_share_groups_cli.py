"""Share groups as Kafka's kafka-share-groups prints them, read back; the consume command's share-group refusals."""

from __future__ import annotations

from failsafe.tools.share_groups import ShareGroupDescription, fixed_width_rows, format_share_group
from tests.helpers import run_cli

# As Kafka 4.3.1's ShareGroupCommand printed them for a share group of four members on two partitions.
MEMBERS = """
GROUP           CONSUMER-ID            HOST            CLIENT-ID       #PARTITIONS  MEMBER-EPOCH  ASSIGNMENT
myqueue         MdocW4bTSUKbY07pVap/Zw /127.0.0.1      worker-2        1            5             my-failsafe-topic:1
myqueue         QiWf1F/oQlSfPp9pTtdp9g /127.0.0.1      worker-1        1            5             my-failsafe-topic:0
"""
STATE = """
GROUP           COORDINATOR (ID)          STATE           GROUP-EPOCH  ASSIGNMENT-EPOCH  #MEMBERS
myqueue         127.0.0.1:28264  (2)      Stable          5            5                 4
"""
OFFSETS = """
GROUP           TOPIC             PARTITION  LEADER-EPOCH  START-OFFSET  LAG
myqueue         my-failsafe-topic 0          0             2482          178
myqueue         my-failsafe-topic 1          -             -             -
"""


def test_the_tools_tables_are_read_by_their_columns() -> None:
    [state] = fixed_width_rows(STATE)
    assert (
        state["COORDINATOR (ID)"] == "127.0.0.1:28264  (2)" and state["STATE"] == "Stable" and state["#MEMBERS"] == "4"
    )
    members = fixed_width_rows(MEMBERS)
    assert [(m["CLIENT-ID"], m["ASSIGNMENT"]) for m in members] == [
        ("worker-2", "my-failsafe-topic:1"),
        ("worker-1", "my-failsafe-topic:0"),
    ]
    offsets = fixed_width_rows(OFFSETS)
    assert (offsets[0]["START-OFFSET"], offsets[0]["LAG"], offsets[1]["START-OFFSET"]) == ("2482", "178", "-")
    assert fixed_width_rows("Share group 'sg' has no active members.\n") == []


def test_a_description_prints_its_state_members_and_offsets() -> None:
    desc = ShareGroupDescription(
        "q",
        "127.0.0.1:9094  (2)",
        "Stable",
        5,
        5,
        [
            {
                "consumer_id": "id",
                "host": "/127.0.0.1",
                "client_id": "w-0",
                "partitions": 1,
                "member_epoch": 5,
                "assignment": ["t:0"],
            }
        ],
        [{"topic": "t", "partition": 0, "leader_epoch": 0, "start_offset": 10, "lag": 40}],
    )
    text = format_share_group(desc)
    assert "Stable" in text and "w-0" in text and "t:0" in text
    assert text.splitlines()[-1].split() == ["t", "0", "10", "40"]


def test_consume_refuses_both_groups_and_the_end_of_a_share_groups_partition() -> None:
    both = run_cli("consume", "t", "--group", "g", "--share-group", "s", "--bootstrap-server", "127.0.0.1:1")
    assert both.returncode == 2 and "not both" in both.stderr and both.stderr.count("\n") == 1
    at_end = run_cli("consume", "t", "--share-group", "s", "--exit-at-end", "--bootstrap-server", "127.0.0.1:1")
    assert at_end.returncode == 2 and "--exit-at-end" in at_end.stderr and at_end.stderr.count("\n") == 1
