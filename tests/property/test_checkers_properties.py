"""Generated histories: a clean one checks valid everywhere; one mutation, and its checker says so.

The model is a log of a few partitions, producers that had every record acknowledged at its
offset, one consumer group whose members own disjoint partitions and read them in order in
batches, and a log read of every partition.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from failsafe.checkers import run_checkers
from failsafe.history.load import history_from_ops
from failsafe.history.model import History
from failsafe.scenarios.kinds.lab import CHECKERS as LAB_CHECKERS

TOPIC = "t"
GROUP = "g"
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Model:
    log: dict[int, list[dict]]  # partition -> records in offset order
    producers: dict[str, list[dict]]  # producer -> the records it sent, acknowledged, in send order
    owners: dict[str, list[int]]  # consumer -> partitions assigned
    polls: dict[str, list[list[dict]]] = field(default_factory=dict)  # consumer -> its polls' records

    def ops(self) -> list[dict]:
        ops: list[dict] = []
        clock = iter(range(1, 1_000_000))
        for consumer, partitions in self.owners.items():
            ops.append(
                _op(
                    0,
                    consumer,
                    "info",
                    "assign",
                    group=GROUP,
                    partitions=[{"topic": TOPIC, "partition": p} for p in partitions],
                )
            )
        send_id = 0
        for producer, sent in self.producers.items():
            for record in sent:
                send_id += 1
                body = {"id": send_id, "topic": TOPIC, "key": record["key"], "value": record["value"]}
                ops.append(_op(next(clock), producer, "invoke", "send", **body))
                ops.append(
                    _op(
                        next(clock),
                        producer,
                        "ok",
                        "send",
                        **body,
                        partition=record["partition"],
                        offset=record["offset"],
                    )
                )
        for consumer, polls in self.polls.items():
            ops += [
                _op(next(clock), consumer, "ok", "poll", group=GROUP, records=records) for records in polls if records
            ]
        # The final read names each partition it read, an empty one included.
        ops += [
            _op(next(clock), "log-reader", "ok", "log-read", topic=TOPIC, partition=p, records=records)
            for p, records in self.log.items()
        ]
        return ops

    def history(self) -> History:
        return history_from_ops(self.ops())


def _op(time_ns: int, process: str, type_: str, f: str, **fields: object) -> dict:
    return {"time_ns": time_ns, "process": process, "type": type_, "f": f, **fields}


@st.composite
def models(draw: st.DrawFn, min_consumers: int = 1) -> Model:
    n_partitions = draw(st.integers(1, 3))
    keys = st.sampled_from(["k0", "k1", "k2"])
    log = {
        p: [
            {"topic": TOPIC, "partition": p, "offset": o, "key": draw(keys), "value": f"v{p}-{o}"}
            for o in range(draw(st.integers(1, 6)))
        ]
        for p in range(n_partitions)
    }
    producers: dict[str, list[dict]] = {f"producer-{i}": [] for i in range(draw(st.integers(1, 2)))}
    # One producer per partition keeps each producer's offsets rising in send order.
    for partition, records in log.items():
        producers[f"producer-{partition % len(producers)}"] += [dict(record) for record in records]
    n_consumers = draw(st.integers(min_consumers, max(min_consumers, 3)))
    owners = {f"consumer-{i}": [p for p in log if p % n_consumers == i] for i in range(n_consumers)}
    model = Model(log, producers, owners)
    for consumer, partitions in owners.items():
        queue = [record for p in partitions for record in log[p]]
        # Interleave partitions however Kafka pleases, each partition's records in offset order.
        order = draw(st.permutations(queue))
        by_partition = {p: iter(log[p]) for p in partitions}
        sequence = [next(by_partition[record["partition"]]) for record in order]
        polls, position = [], 0
        while position < len(sequence):
            size = draw(st.integers(1, 3))
            polls.append([dict(record) for record in sequence[position : position + size]])
            position += size
        model.polls[consumer] = polls
    return model


def _reads(model: Model) -> list[tuple[str, int, int]]:
    """(consumer, poll index, index in poll) of every record read."""
    return [
        (c, i, j) for c, polls in model.polls.items() for i, records in enumerate(polls) for j in range(len(records))
    ]


def _valid(results: dict, *names: str) -> None:
    for name in names:
        assert results[name]["valid"] is True, (name, results[name])


@SETTINGS
@given(models())
def test_a_clean_history_is_valid_everywhere(model: Model) -> None:
    results = run_checkers(model.history(), None, LAB_CHECKERS)
    _valid(results, *LAB_CHECKERS)
    assert results["delivery"]["counts"]["read"] == sum(len(records) for records in model.log.values())


@SETTINGS
@given(models(), st.data())
def test_dropping_an_acknowledged_record_is_lost(model: Model, data: st.DataObject) -> None:
    partition = data.draw(st.sampled_from(sorted(model.log)))
    dropped = data.draw(st.sampled_from(model.log[partition]))
    model.log[partition] = [r for r in model.log[partition] if r is not dropped]
    for consumer, polls in model.polls.items():
        model.polls[consumer] = [[r for r in records if r["value"] != dropped["value"]] for records in polls]
    results = run_checkers(model.history(), None, LAB_CHECKERS)
    delivery = results["delivery"]
    assert delivery["valid"] is False
    # Its partition was read completely (empty, perhaps): the write is not in the log.
    assert delivery["counts"]["lost"] == delivery["counts"]["lost-not-in-log"] == 1
    assert delivery["examples"]["lost-not-in-log"][0]["value"] == dropped["value"]
    assert delivery["counts"]["duplicate"] == delivery["counts"]["inconsistent-offsets"] == 0
    _valid(results, "order", "availability", "rebalance")


@SETTINGS
@given(models(), st.data())
def test_a_value_at_a_second_offset_is_a_duplicate(model: Model, data: st.DataObject) -> None:
    partition = data.draw(st.sampled_from(sorted(model.log)))
    original = data.draw(st.sampled_from(model.log[partition]))
    again = {**original, "offset": len(model.log[partition])}
    model.log[partition].append(again)
    owner = next(c for c, partitions in model.owners.items() if partition in partitions)
    model.polls[owner].append([dict(again)])
    results = run_checkers(model.history(), None, LAB_CHECKERS)
    delivery = results["delivery"]
    assert delivery["valid"] is False and delivery["counts"]["duplicate"] == 1
    assert delivery["counts"]["lost"] == delivery["counts"]["inconsistent-offsets"] == 0
    _valid(results, "order", "semantics")


@SETTINGS
@given(models(), st.data())
def test_swapping_two_offsets_in_a_consumers_polls_is_nonmonotonic(model: Model, data: st.DataObject) -> None:
    reads = _reads(model)
    pairs = [
        (a, b)
        for a in reads
        for b in reads
        if a[0] == b[0]
        and a < b
        and _at(model, a)["partition"] == _at(model, b)["partition"]
        and _at(model, a)["key"] != _at(model, b)["key"]
    ]
    assume(pairs)
    first, second = data.draw(st.sampled_from(pairs))
    _swap(model, first, second)
    results = run_checkers(model.history(), None, LAB_CHECKERS)
    order = results["order"]
    assert order["valid"] is False and order["counts"]["nonmonotonic-poll"] >= 1
    assert order["counts"]["nonmonotonic-send"] == 0
    _valid(results, "delivery", "semantics")


@SETTINGS
@given(models(), st.data())
def test_reading_a_key_out_of_order_is_key_reordered(model: Model, data: st.DataObject) -> None:
    reads = _reads(model)
    pairs = [
        (a, b)
        for a in reads
        for b in reads
        if a[0] == b[0]
        and a < b
        and _at(model, a)["partition"] == _at(model, b)["partition"]
        and _at(model, a)["key"] == _at(model, b)["key"]
    ]
    assume(pairs)
    first, second = data.draw(st.sampled_from(pairs))
    _swap(model, first, second)
    results = run_checkers(model.history(), None, LAB_CHECKERS)
    order = results["order"]
    assert order["valid"] is False and order["counts"]["key-reordered"] >= 1
    assert order["examples"]["key-reordered"][0]["key"] == _at(model, first)["key"]
    _valid(results, "delivery", "semantics")


@SETTINGS
@given(models(min_consumers=2), st.data())
def test_a_record_to_two_members_without_rebalance_is_a_double_delivery(model: Model, data: st.DataObject) -> None:
    reads = _reads(model)
    assume(reads)
    reader, poll_index, index = data.draw(st.sampled_from(reads))
    record = model.polls[reader][poll_index][index]
    other = data.draw(st.sampled_from([c for c in model.owners if c != reader]))
    model.polls[other].append([dict(record)])
    results = run_checkers(model.history(), None, LAB_CHECKERS)
    semantics = results["semantics"]
    assert semantics["valid"] is False
    assert semantics["counts"]["double-delivery"] == 1 and semantics["counts"]["redelivered-across-rebalance"] == 0
    assert semantics["examples"]["double-delivery"][0]["offset"] == record["offset"]
    _valid(results, "delivery", "order")


def _at(model: Model, where: tuple[str, int, int]) -> dict:
    consumer, poll_index, index = where
    return model.polls[consumer][poll_index][index]


def _swap(model: Model, first: tuple[str, int, int], second: tuple[str, int, int]) -> None:
    a, b = copy.deepcopy(_at(model, first)), copy.deepcopy(_at(model, second))
    model.polls[first[0]][first[1]][first[2]] = b
    model.polls[second[0]][second[1]][second[2]] = a
