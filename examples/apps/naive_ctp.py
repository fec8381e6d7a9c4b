"""The same service written naively: auto-commit on a timer, a producer without idempotence or transactions.

What it read is committed every 5 s (librdkafka's default; AUTO_COMMIT_INTERVAL_MS in its environment changes it)
whether or not its output was written, and what it wrote is not tied to what it committed: a crash loses what it had
read but not yet written, and its group reads again what it had written but not yet committed. Under failsafe's
exactly-once contract that shows as lost and duplicate output (docs/apps.md).
"""

import json
import os
import signal
import sys

from confluent_kafka import Consumer, Producer

env = os.environ
output = env["FAILSAFE_OUTPUT_TOPICS"].split(",")[0]
me = env["FAILSAFE_PROCESS"]
stopping = False


def stop(*_):
    global stopping
    stopping = True


def main():
    signal.signal(signal.SIGTERM, stop)
    consumer = Consumer(
        {
            "bootstrap.servers": env["FAILSAFE_BOOTSTRAP_SERVERS"],
            "group.id": env["FAILSAFE_GROUP"],
            "enable.auto.commit": True,
            "auto.commit.interval.ms": int(env.get("AUTO_COMMIT_INTERVAL_MS", "5000")),
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
        }
    )
    producer = Producer(
        {"bootstrap.servers": env["FAILSAFE_BOOTSTRAP_SERVERS"], "enable.idempotence": False, "acks": "1"}
    )
    consumer.subscribe(env["FAILSAFE_INPUT_TOPICS"].split(","))
    while not stopping:
        record = consumer.poll(0.5)
        if record is None or record.error() is not None:
            continue
        producer.produce(output, key=record.key(), value=json.dumps({"id": record.value().decode(), "by": me}))
        producer.poll(0)
    producer.flush(30)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
