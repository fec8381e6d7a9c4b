"""Setting up a scenario's topics and groups on a cluster, and the admin actions a scenario can take."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace

from confluent_kafka import KafkaException
from confluent_kafka.admin import NewTopic

from failsafe.errors import KafkaClientError, UserError
from failsafe.history.ops import Op, OpType, Process, op
from failsafe.history.recorder import Recorder
from failsafe.scenarios.base import TopicSpec
from failsafe.tools.admin import describe_error, new_admin
from failsafe.tools.broker_metadata import MetadataError, partitions_led
from failsafe.tools.groups import elect_preferred_leaders, list_groups
from failsafe.tools.retry import retriable, retrying
from failsafe.waiting import wait_until

ADMIN_TIMEOUT_S = 30.0
CREATE_DURING_FAULT_TIMEOUT_S = 5.0
BROKER_METADATA_TIMEOUT_S = 5.0  # one broker asked alone (tools/broker_metadata.py)
# A killed run's consumers stay members until the coordinator expires them: session.timeout.ms is 45 s by default.
STALE_MEMBERS_TIMEOUT_S = 60.0


def fresh_topics(
    bootstrap_servers: str,
    topics: tuple[TopicSpec, ...],
    groups: list[str],
    defaults: Mapping[str, str] | None = None,
    made_later: tuple[str, ...] = (),
) -> None:
    """Delete the scenario's topics and groups left by an earlier run, then create the topics and wait for their
    leaders. ``made_later``: topics the run itself creates (its create-topic actions): an earlier run's are deleted too,
    or the run's own creation would find them there.

    A scenario reuses the seeds' topic names (my-failsafe-topic, foo), so an earlier run's records
    and committed offsets must not leak into this run's history. ``defaults``: the cluster profile's topic configs, each
    topic's own configs over them (topic_configs).
    """
    topics = tuple(replace(t, configs=topic_configs(t, defaults or {})) for t in topics)
    admin = new_admin(bootstrap_servers)
    names = [t.name for t in topics]
    existing = set(
        retrying(
            lambda: admin.list_topics(timeout=ADMIN_TIMEOUT_S), f"listing the topics at {bootstrap_servers}"
        ).topics
    )
    stale = [n for n in (*names, *made_later) if n in existing]
    if stale:
        delete_topics(admin, stale)
    stale_groups = sorted(set(groups) & existing_groups(bootstrap_servers))
    if stale_groups:
        delete_groups(admin, stale_groups)
    _create_when_deleted(admin, [_new_topic(t) for t in topics])

    def all_led_and_in_sync() -> bool:
        metadata = admin.list_topics(timeout=ADMIN_TIMEOUT_S)
        for t in topics:
            tm = metadata.topics.get(t.name)
            if tm is None or tm.error is not None or len(tm.partitions) != t.partitions:
                return False
            if any(p.leader < 0 or len(p.isrs) < len(p.replicas) for p in tm.partitions.values()):
                return False
        # And every broker serves them: the answer above is one broker's.
        return all(_serves(b.host, b.port, topics) for b in metadata.brokers.values())

    wait_until(
        all_led_and_in_sync,
        ADMIN_TIMEOUT_S,
        f"topics {names} did not get leaders and full ISRs within {ADMIN_TIMEOUT_S:g}s",
    )


def _serves(host: str, port: int, topics: tuple[TopicSpec, ...]) -> bool:
    """Whether the broker at ``host:port`` knows every topic of ``topics`` with all its partitions led; True when it
    cannot be asked this way (a listener that is not plaintext): one broker's answer is then all there is."""
    try:
        known = partitions_led(host, port, [t.name for t in topics], timeout_s=BROKER_METADATA_TIMEOUT_S)
    except MetadataError:
        return True
    return all(
        len(led := known.get(t.name, {})) == t.partitions and all(leader >= 0 for leader in led.values())
        for t in topics
    )


def existing_groups(bootstrap_servers: str) -> set[str]:
    """The names of the groups the cluster lists, asked again while a coordinator is not ready: a broker whose
    coordinator is still loading (a cluster restarted with its data) leaves its groups out of a partial answer, and an
    earlier run's group missed here would keep its committed offsets, so an app or a consumer of this run would skip
    input."""
    return {
        g
        for g, _ in retrying(
            lambda: list_groups(bootstrap_servers, ADMIN_TIMEOUT_S, complete=True),
            f"listing the groups at {bootstrap_servers}",
        )
    }


def topic_configs(topic: TopicSpec, defaults: Mapping[str, str]) -> dict[str, str]:
    """A topic's configs: the profile's ``defaults``, then the scenario's own (which win). UserError when a default
    min.insync.replicas is above the topic's replication factor: no acks=all write could ever be acknowledged."""
    configs = {**defaults, **topic.configs}
    wanted = defaults.get("min.insync.replicas", "")
    if "min.insync.replicas" not in topic.configs and wanted.isdigit() and int(wanted) > topic.replication_factor:
        raise UserError(
            f"topic {topic.name} has replication factor {topic.replication_factor} and the cluster's profile sets "
            f"min.insync.replicas={wanted}: no acks=all write to it could be acknowledged; give it configs."
            f'"min.insync.replicas" of at most {topic.replication_factor}, or run it on a cluster of another profile'
        )
    return configs


def delete_topics(admin, names: list[str]) -> None:
    """Delete ``names`` and wait until no broker lists them. One already gone counts as deleted: the metadata a broker
    answers with can still list a topic the controller has finished deleting. A retriable answer (a controller that
    moved, a request that timed out) is asked again."""
    retrying(
        lambda: _await_all(
            admin.delete_topics(names, request_timeout=ADMIN_TIMEOUT_S),
            "cannot delete the earlier run's topic",
            ignore=("UNKNOWN_TOPIC_OR_PART",),
        ),
        f"deleting topics {names}",
    )
    wait_until(
        lambda: not (set(names) & set(admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics)),
        ADMIN_TIMEOUT_S,
        f"topics {names} were still listed {ADMIN_TIMEOUT_S:g}s after their deletion",
    )


def _new_topic(t: TopicSpec) -> NewTopic:
    if t.replica_assignment is not None:
        # librdkafka wants the partition count with an assignment, and the replication factor left to it (-1).
        return NewTopic(
            t.name,
            len(t.replica_assignment),
            -1,
            replica_assignment=[list(r) for r in t.replica_assignment],
            config=dict(t.configs),
        )
    return NewTopic(t.name, t.partitions, t.replication_factor, config=dict(t.configs))


def _create_when_deleted(admin, new: list[NewTopic]) -> None:
    """Create the topics; one still being deleted (ZooKeeper mode deletes in the background, after the
    metadata has stopped listing it: TOPIC_ALREADY_EXISTS "marked for deletion") is tried again until it is gone, and so
    is one whose creation got a retriable answer (a controller that moved, a request that timed out). A topic that then
    already exists was made by that earlier request: the earlier run's were deleted before."""
    pending = list(new)
    tried: set[str] = set()

    def created() -> bool:
        retry = []
        for topic, future in admin.create_topics(pending, request_timeout=ADMIN_TIMEOUT_S).items():
            try:
                future.result(timeout=ADMIN_TIMEOUT_S)
            except (KafkaException, TimeoutError) as e:
                said = describe_error(e)
                if topic in tried and said.startswith("TOPIC_ALREADY_EXISTS") and "marked for deletion" not in said:
                    continue
                if "marked for deletion" not in said and not retriable(e):
                    raise KafkaClientError(f"cannot create topic {topic}: {said}") from e
                tried.add(topic)
                retry.append(next(t for t in pending if t.topic == topic))
        pending[:] = retry
        return not pending

    wait_until(
        created,
        ADMIN_TIMEOUT_S,
        f"topics {[t.topic for t in new]} were not created within {ADMIN_TIMEOUT_S:g}s "
        "(still being deleted, or every answer was a retriable error)",
    )


def delete_groups(admin, groups: list[str]) -> None:
    """Delete an earlier run's groups. A group listed a moment ago may be gone by now (Kafka 3.9 answers
    GROUP_ID_NOT_FOUND): gone is what we want. One whose members were killed with their run (SIGKILL: they never left)
    is not empty until the coordinator expires them after session.timeout.ms: deleted once it is. A coordinator that is
    not ready yet (a cluster just started: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a request timeout: errors
    Kafka marks retriable) is asked again until the same deadline."""
    pending = list(groups)

    def deleted() -> bool:
        try:
            _await_all(
                admin.delete_consumer_groups(pending, request_timeout=ADMIN_TIMEOUT_S),
                "cannot delete the earlier run's consumer group",
                ignore=("GROUP_ID_NOT_FOUND",),
            )
        except KafkaClientError as e:
            if "NON_EMPTY_GROUP" in str(e) or retriable(e):
                return False
            raise
        except TimeoutError:
            return False  # no answer within the request's timeout: asked again
        return True

    wait_until(
        deleted,
        STALE_MEMBERS_TIMEOUT_S,
        f"consumer groups {groups} of an earlier run still had members after {STALE_MEMBERS_TIMEOUT_S:g}s "
        "(its consumers are still running?): stop them, or delete the groups with failsafe kafka "
        "consumer-groups --delete",
        poll_interval_s=1.0,
    )


def _await_all(futures: dict, what: str, ignore: tuple[str, ...] = ()) -> None:
    for name, future in futures.items():
        try:
            future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as e:
            if describe_error(e).split(":")[0] in ignore:
                continue
            raise KafkaClientError(f"{what} {name}: {describe_error(e)}") from e


_admin_ids = itertools.count()


def attempt_create_topic(
    bootstrap_servers: str, topic: str, recorder: Recorder, timeout_s: float = CREATE_DURING_FAULT_TIMEOUT_S
) -> str:
    """Try to create a topic, recording the attempt as a ``create-topic`` op; returns its outcome type."""
    op_id = next(_admin_ids)

    def record(outcome: OpType, error: str | None = None) -> None:
        recorder.record(op(Op.CREATE_TOPIC, outcome, Process.ADMIN, id=op_id, topic=topic, error=error))

    record(OpType.INVOKE)
    admin = new_admin(bootstrap_servers)
    futures = admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=timeout_s, operation_timeout=timeout_s)
    try:
        futures[topic].result(timeout=timeout_s + 2)
    except KafkaException as e:
        err = e.args[0] if e.args else None
        name = describe_error(e).split(":")[0]
        # A timed-out create is indeterminate, not failed: in ZooKeeper mode the controller broker applies it
        # once ZooKeeper is back (seen in zookeeper-outage runs: the topic exists afterwards).
        may_retry = err is not None and getattr(err, "retriable", lambda: False)()
        outcome = OpType.INFO if may_retry or "TIMED_OUT" in name else OpType.FAIL
        record(outcome, name)
        return str(outcome)
    except TimeoutError:
        record(OpType.INFO, f"no answer within {timeout_s + 2:g}s")
        return str(OpType.INFO)
    record(OpType.OK)
    return str(OpType.OK)


def elect_leaders(bootstrap_servers: str, recorder: Recorder) -> None:
    elected, already, failed = retrying(
        lambda: elect_preferred_leaders(bootstrap_servers, None, ADMIN_TIMEOUT_S),
        f"a preferred leader election at {bootstrap_servers}",
    )
    recorder.record(op(Op.ELECT_LEADERS, process=Process.ADMIN, elected=elected, already=len(already), failed=failed))
