"""A consume-transform-produce service with Kafka transactions: exactly-once from its input to its output.

Each input record goes to the output as {"id": <its value>, "by": <this process>}, with its value in the header
failsafe-id too, and the input offsets are committed
in the same transaction (send_offsets_to_transaction, with the group's metadata: a transaction of an instance the group
no longer counts is fenced, KIP-447). A transaction that must abort is aborted and the consumer rewound to its group's
committed offsets; a fenced instance stops. It reads what failsafe gives it in its environment (docs/apps.md)."""

import json
import os
import signal
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

env = os.environ
output = env["FAILSAFE_OUTPUT_TOPICS"].split(",")[0]
me = env["FAILSAFE_PROCESS"]
stopping = False


def stop(*_):
    global stopping
    stopping = True


def rewind(consumer):
    """Back to what the group committed: an aborted transaction's input is read again."""
    for tp in consumer.committed(consumer.assignment(), timeout=30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))


def commit(producer, records, consumer):
    """Offsets past the batch's last record of each partition, committed with the batch's output."""
    ends = {}
    for r in records:
        ends[(r.topic(), r.partition())] = r.offset() + 1
    offsets = [TopicPartition(t, p, o) for (t, p), o in ends.items()]
    producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
    while True:
        try:
            producer.commit_transaction(30)
            return
        except KafkaException as e:
            if not e.args[0].retriable():
                raise


def abort(producer):
    """Abort the open transaction, asking again while the answer is retriable (a coordinator moving)."""
    while True:
        try:
            producer.abort_transaction(30)
            return
        except KafkaException as e:
            if not e.args[0].retriable():
                raise


def main():
    signal.signal(signal.SIGTERM, stop)
    consumer = Consumer(
        {
            "bootstrap.servers": env["FAILSAFE_BOOTSTRAP_SERVERS"],
            "group.id": env["FAILSAFE_GROUP"],
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            # A killed instance's partitions go to the others after this long (librdkafka's default is 45 s).
            "session.timeout.ms": 10000,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": env["FAILSAFE_BOOTSTRAP_SERVERS"],
            "transactional.id": env["FAILSAFE_TRANSACTIONAL_ID"],
            "transaction.timeout.ms": 10000,
        }
    )
    producer.init_transactions(60)
    consumer.subscribe(env["FAILSAFE_INPUT_TOPICS"].split(","))
    while not stopping:
        records = [r for r in consumer.consume(200, timeout=0.5) if r.error() is None]
        if not records:
            continue
        producer.begin_transaction()
        try:
            for r in records:
                # The identity twice: in the value's "id" (the example's contract) and in a header
                # (identity = "header:failsafe-id" judges by that one instead).
                value = json.dumps({"id": r.value().decode(), "by": me})
                producer.produce(output, key=r.key(), value=value, headers={"failsafe-id": r.value()})
            commit(producer, records, consumer)
        except KafkaException as e:
            error = e.args[0]
            if error.fatal():
                print(f"{me}: fatal: {error}", file=sys.stderr, flush=True)
                return 3
            print(f"{me}: aborting: {error}", file=sys.stderr, flush=True)
            abort(producer)
            rewind(consumer)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
