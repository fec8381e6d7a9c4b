"""The proxy's framing on request bytes as Kafka's clients write them, and its rules' matching and counts."""

from __future__ import annotations

import struct

import pytest

from failsafe.proxy import rules as r
from failsafe.proxy.wire import (
    API_KEYS,
    FramingError,
    api_key,
    frame_size,
    request_frame,
    request_header,
    response_correlation_id,
)


def _body(frame: bytes) -> bytes:
    assert frame_size(frame[:4]) == len(frame) - 4
    return frame[4:]


# Header version 1 (a non-flexible request): Produce v8 as librdkafka writes it, client id "rdkafka", then the body
# (transactional_id null, acks -1, ...).
PRODUCE_V8 = struct.pack(">ihhih", 0, 0, 8, 42, 7) + b"rdkafka" + struct.pack(">hhi", -1, -1, 30000)
# Header version 2 (a flexible request): EndTxn v3, client id "producer-1", an empty tagged-field section (0), then the
# body (compact strings: transactional id "t-0" as length+1).
END_TXN_V3 = struct.pack(">ihhih", 0, 26, 3, 7, 10) + b"producer-1" + b"\x00" + b"\x04t-0"


def _sized(raw: bytes) -> bytes:
    return struct.pack(">i", len(raw) - 4) + raw[4:]


@pytest.mark.parametrize(
    ("raw", "key", "version", "correlation", "client"),
    [
        (PRODUCE_V8, 0, 8, 42, "rdkafka"),
        (END_TXN_V3, 26, 3, 7, "producer-1"),
    ],
)
def test_request_headers_of_both_versions_read_alike(raw, key, version, correlation, client):
    header = request_header(_body(_sized(raw)))
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        key,
        version,
        correlation,
        client,
    )


def test_a_null_client_id_and_controlled_shutdown_v0():
    assert request_header(_body(request_frame(3, 12, 5, None, b"\x00"))).client_id is None
    # ControlledShutdown v0 has header version 0: what follows the correlation id is body, not a client id.
    header = request_header(struct.pack(">hhi", 7, 0, 9) + struct.pack(">i", 1))
    assert header.client_id is None and header.correlation_id == 9


def test_bytes_that_are_not_kafka_are_refused():
    with pytest.raises(FramingError):
        frame_size(struct.pack(">i", -1))
    with pytest.raises(FramingError):
        frame_size(struct.pack(">i", 2**30))
    with pytest.raises(FramingError):
        request_header(b"\x00\x00")
    with pytest.raises(FramingError):
        request_header(struct.pack(">hhih", 0, 8, 1, 50) + b"short")
    with pytest.raises(FramingError):
        response_correlation_id(b"\x00")


def test_a_response_is_matched_by_its_first_four_bytes():
    assert response_correlation_id(struct.pack(">i", 1234) + b"\x00rest") == 1234


def test_api_names_are_kafkas_and_numbers_pass():
    assert api_key("EndTxn") == 26 and api_key("end_txn") == 26 and api_key("ShareAcknowledge") == 79
    assert api_key("61") == 61
    with pytest.raises(ValueError, match="not an API"):
        api_key("Commit")
    assert len(set(API_KEYS.values())) == len(API_KEYS)


def _header(api: str, client: str | None = "c", correlation: int = 1):
    return request_header(_body(request_frame(API_KEYS[api], 0, correlation, client, b"")))


def test_a_rule_takes_its_apis_and_clients_only_and_counts_them():
    rules = r.Rules()
    rules.add(r.Rule("d", r.DELAY_REQUEST, frozenset({0}), clients="producer-*", delay_ms=50))
    assert rules.on_request(_header("Produce", "producer-1")).delay_s == pytest.approx(0.05)
    assert rules.on_request(_header("Produce", "consumer-1")).delay_s == 0
    assert rules.on_request(_header("Fetch", "producer-1")).delay_s == 0
    counts = rules.counts()[0]
    assert counts["taken"] == 1 and counts["seen"] == 1
    assert counts["by_api_client"] == [{"api": "Produce", "client_id": "producer-1", "requests": 1}]


def test_limit_and_probability_bound_what_a_rule_takes():
    limited = r.Rule("l", r.DROP_RESPONSE, frozenset({0}), limit=2)
    assert [limited.takes(0, "c") for _ in range(4)] == [True, True, False, False]
    assert limited.seen == 4 and limited.taken == 2
    half = r.Rule("p", r.DUPLICATE_REQUEST, frozenset({0}), probability=0.5, seed=3)
    taken = sum(half.takes(0, "c") for _ in range(1000))
    assert 400 < taken < 600
    again = r.Rule("p", r.DUPLICATE_REQUEST, frozenset({0}), probability=0.5, seed=3)
    assert sum(again.takes(0, "c") for _ in range(1000)) == taken  # seeded: the same draw


def test_request_and_response_actions_are_told_apart():
    rules = r.Rules()
    rules.add(r.Rule("h", r.HOLD, frozenset({26})))
    rules.add(r.Rule("x", r.DUPLICATE_REQUEST, frozenset({26})))
    rules.add(r.Rule("drop", r.DROP_RESPONSE, frozenset({26}), after="stall"))
    on_request = rules.on_request(_header("EndTxn"))
    assert on_request.hold == ("h",) and on_request.duplicate and not on_request.disconnect
    on_response = rules.on_response(26, "c")
    assert on_response.drop and on_response.after == "stall"
    assert rules.on_response(0, "c") == r.OnResponse()
    assert rules.remove("h") is not None and rules.ids() == ["x", "drop"]


def test_jitter_is_within_its_bound():
    rule = r.Rule("j", r.DELAY_RESPONSE, frozenset({1}), delay_ms=10, jitter_ms=20, seed=1)
    delays = [rule.delay_s() for _ in range(200)]
    assert min(delays) >= 0.010 and max(delays) <= 0.030 and max(delays) - min(delays) > 0.01


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"action": "reorder"}, "not a protocol fault"),
        ({"apis": []}, "at least one API"),
        ({"probability": 0}, "probability"),
        ({"limit": 0}, "limit"),
        ({"after": "later"}, "after"),
        ({"delay_ms": -1}, "not negative"),
    ],
)
def test_a_bad_rule_is_refused_by_name(fields, message):
    base = {"rule_id": "a", "action": r.HOLD, "apis": ["EndTxn"]}
    with pytest.raises(ValueError, match=message):
        r.Rule.from_message({**base, **fields})
    rules = r.Rules()
    rules.add(r.Rule.from_message(base))
    with pytest.raises(ValueError, match="in force already"):
        rules.add(r.Rule.from_message(base))


def test_the_error_code_of_a_transactional_answer_is_read_after_its_header():
    """EndTxn's answer: ThrottleTimeMs then ErrorCode, after a tagged-fields count from version 3 (flexible) on; an API
    whose answer does not start so, or a header with tagged fields, gives None."""
    from failsafe.proxy.wire import answer_error_code

    end_txn, produce = API_KEYS["EndTxn"], API_KEYS["Produce"]
    plain = struct.pack(">iih", 7, 0, 48)
    flexible = struct.pack(">ibih", 7, 0, 0, 90)
    assert answer_error_code(end_txn, 2, plain) == 48
    assert answer_error_code(end_txn, 4, flexible) == 90
    assert answer_error_code(API_KEYS["InitProducerId"], 1, plain) == 48
    assert answer_error_code(produce, 9, flexible) is None
    assert answer_error_code(end_txn, 4, struct.pack(">ib", 7, 1) + b"tag") is None
    assert answer_error_code(end_txn, 2, struct.pack(">i", 7)) is None
