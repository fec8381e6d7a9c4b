"""Consumer groups (like kafka-consumer-groups.sh) and preferred leader election."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from failsafe.errors import KafkaClientError, UserError
from failsafe.tools.admin import DEFAULT_TIMEOUT_S, describe_error, fetch_metadata, new_admin


@dataclass(frozen=True)
class GroupPartitionRow:
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


@dataclass(frozen=True)
class GroupMember:
    consumer_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[str, ...]  # topic-partition names


@dataclass(frozen=True)
class GroupDescription:
    group: str
    state: str
    members: int
    rows: tuple[GroupPartitionRow, ...]
    # What kafka-consumer-groups.sh --describe --state and --members add: the group protocol
    # (classic or consumer, KIP-848), the partition assignor, the coordinator broker, each member.
    group_type: str = "UNKNOWN"
    assignor: str = ""
    coordinator: int | None = None
    member_list: tuple[GroupMember, ...] = ()

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "state": self.state,
            "type": self.group_type,
            "assignor": self.assignor,
            "coordinator": self.coordinator,
            "members": self.members,
            "member_list": [{**asdict(m), "assignment": list(m.assignment)} for m in self.member_list],
            "partitions": [asdict(r) for r in self.rows],
            "total_lag": self.total_lag,
        }

    @property
    def total_lag(self) -> int:
        return sum(r.lag for r in self.rows if r.lag is not None)


def _result(future, what: str, timeout_s: float):
    try:
        return future.result(timeout=timeout_s)
    except KafkaException as e:
        raise KafkaClientError(f"{what}: {describe_error(e)}") from e
    except TimeoutError as e:
        raise KafkaClientError(f"{what}: no answer within {timeout_s:g}s") from e


def list_groups(
    bootstrap_servers: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    admin: AdminClient | None = None,
    *,
    complete: bool = False,
) -> list[tuple[str, str]]:
    """Every consumer group and its state. ``admin``: a client to reuse (the console polls through one).

    A broker that cannot answer (its coordinator still loading, as on a cluster just restarted) leaves its groups out of
    the list: ``complete`` raises its error instead (KafkaException: ``retrying`` asks again while it is retriable), for
    a caller that acts on a group's absence."""
    if admin is None:
        admin = new_admin(bootstrap_servers)
        fetch_metadata(admin, bootstrap_servers, timeout_s)
    result = _result(admin.list_consumer_groups(request_timeout=timeout_s), "cannot list consumer groups", timeout_s)
    if complete and result.errors:
        raise KafkaException(result.errors[0])
    return sorted((g.group_id, g.state.name if g.state is not None else "UNKNOWN") for g in result.valid)


def describe_group(
    bootstrap_servers: str, group: str, timeout_s: float = DEFAULT_TIMEOUT_S, admin: AdminClient | None = None
) -> GroupDescription:
    if admin is None:
        admin = new_admin(bootstrap_servers)
        fetch_metadata(admin, bootstrap_servers, timeout_s)
    desc = _result(
        admin.describe_consumer_groups([group], request_timeout=timeout_s)[group],
        f"cannot describe group {group}",
        timeout_s,
    )
    state = desc.state.name if desc.state is not None else "UNKNOWN"
    if state == "DEAD":
        raise UserError(f"consumer group {group} does not exist: 'failsafe groups list' shows the groups there are")
    offsets_future = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s
    )[group]
    committed = {
        (tp.topic, tp.partition): tp.offset
        for tp in _result(offsets_future, f"cannot read the offsets of group {group}", timeout_s).topic_partitions
        if tp.error is None
    }
    owners: dict[tuple[str, int], object] = {}
    for member in desc.members:
        for tp in member.assignment.topic_partitions:
            owners[(tp.topic, tp.partition)] = member
    keys = sorted(set(committed) | set(owners))
    end_offsets: dict[tuple[str, int], int] = {}
    if keys:
        futures = admin.list_offsets(
            {TopicPartition(t, p): OffsetSpec.latest() for t, p in keys}, request_timeout=timeout_s
        )
        for tp, future in futures.items():
            end_offsets[(tp.topic, tp.partition)] = _result(
                future, f"cannot read the log end offset of {tp.topic}-{tp.partition}", timeout_s
            ).offset
    rows = []
    for key in keys:
        current = committed.get(key)
        current = current if current is not None and current >= 0 else None
        end = end_offsets.get(key)
        member = owners.get(key)
        rows.append(
            GroupPartitionRow(
                group=group,
                topic=key[0],
                partition=key[1],
                current_offset=current,
                log_end_offset=end,
                lag=end - current if end is not None and current is not None else None,
                consumer_id=getattr(member, "member_id", None),
                host=getattr(member, "host", None),
                client_id=getattr(member, "client_id", None),
            )
        )
    members = tuple(
        GroupMember(
            m.member_id,
            m.client_id,
            m.host,
            m.group_instance_id,
            tuple(
                f"{tp.topic}-{tp.partition}"
                for tp in sorted(m.assignment.topic_partitions, key=lambda tp: (tp.topic, tp.partition))
            ),
        )
        for m in sorted(desc.members, key=lambda m: m.member_id)
    )
    group_type = getattr(desc.type, "name", str(desc.type)) if getattr(desc, "type", None) is not None else "UNKNOWN"
    return GroupDescription(
        group=group,
        state=state,
        members=len(desc.members),
        rows=tuple(rows),
        group_type=group_type,
        assignor=desc.partition_assignor or "",
        coordinator=desc.coordinator.id if desc.coordinator is not None else None,
        member_list=members,
    )


def format_group(desc: GroupDescription) -> str:
    """The table kafka-consumer-groups.sh --describe prints, with its column widths, '-' where unknown."""
    header = (
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    )
    rows = [
        tuple(
            "-" if v is None else str(v)
            for v in (
                r.group,
                r.topic,
                r.partition,
                r.current_offset,
                r.log_end_offset,
                r.lag,
                r.consumer_id,
                r.host,
                r.client_id,
            )
        )
        for r in desc.rows
    ]
    table = [header, *rows]
    # ConsumerGroupCommand: group, topic, consumer id and host at least 15 wide, partition 10, offsets 15.
    widths = [
        max(15, *(len(row[0]) for row in table)),
        max(15, *(len(row[1]) for row in table)),
        10,
        15,
        15,
        15,
        max(15, *(len(row[6]) for row in table)),
        max(15, *(len(row[7]) for row in table)),
    ]
    lines = []
    for row in table:
        lines.append(" ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + " " + row[-1])
    return "\n".join(lines)


def elect_preferred_leaders(
    bootstrap_servers: str, partitions: list[tuple[str, int]] | None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> tuple[list[str], list[str], list[str]]:
    """Preferred leader election; returns (elected, already preferred, failed with reason)."""
    admin = new_admin(bootstrap_servers)
    fetch_metadata(admin, bootstrap_servers, timeout_s)
    tps = [TopicPartition(t, p) for t, p in partitions] if partitions is not None else None
    # confluent-kafka 2.16's elect_leaders rejects its documented request_timeout keyword
    # (SystemError), so the bound comes from waiting on the future instead.
    result = _result(admin.elect_leaders(ElectionType.PREFERRED, tps), "leader election failed", timeout_s)
    elected, already, failed = [], [], []
    for tp, error in sorted(result.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
        name = f"{tp.topic}-{tp.partition}"
        err = error.args[0] if isinstance(error, KafkaException) and error.args else error
        if err is None:
            elected.append(name)
        elif isinstance(err, KafkaError) and err.code() == KafkaError.ELECTION_NOT_NEEDED:
            already.append(name)
        else:
            failed.append(f"{name}: {describe_error(err)}")
    return elected, already, failed
