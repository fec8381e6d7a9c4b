"""One broker's own metadata, asked of it alone: the request's bytes, the answer parsed, a broker that cannot be asked,
and the setup's wait that every broker serves the run's topics."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from failsafe.scenarios.base import TopicSpec
from failsafe.scenarios.engine import setup
from failsafe.tools import broker_metadata as bm


def _s(text: str | None) -> bytes:
    return struct.pack(">h", -1) if text is None else struct.pack(">h", len(text)) + text.encode()


def _answer(topics: list[tuple[int, str, list[tuple[int, int]]]]) -> bytes:
    """A Metadata v4 answer body: one broker, then each topic (error, name, [(partition, leader)])."""
    body = struct.pack(">ii", 1, 0) + struct.pack(">i", 1) + struct.pack(">i", 0) + _s("127.0.0.1")
    body += struct.pack(">i", 9092) + _s(None) + _s("cluster") + struct.pack(">i", 0) + struct.pack(">i", len(topics))
    for error, name, partitions in topics:
        body += struct.pack(">h", error) + _s(name) + struct.pack(">b", 0) + struct.pack(">i", len(partitions))
        for index, leader in partitions:
            body += (
                struct.pack(">hii", 0, index, leader) + struct.pack(">ii", 1, leader) + struct.pack(">ii", 1, leader)
            )
    return body


def test_the_request_is_metadata_v4_for_the_topics_without_auto_creation() -> None:
    frame = bm.request(["a", "bc"], correlation_id=7, client_id="x")
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    assert struct.unpack_from(">hhi", frame, 4) == (3, 4, 7)
    assert frame[14:15] == b"x" and struct.unpack_from(">i", frame, 15) == (2,)
    assert frame[19:22] == b"\x00\x01a" and frame[22:26] == b"\x00\x02bc" and frame[-1:] == b"\x00"


def test_the_answer_gives_each_known_topic_s_leaders_and_leaves_out_errors() -> None:
    body = _answer([(0, "t", [(0, 1), (1, -1)]), (3, "gone", [])])
    assert bm.parse(body) == {"t": {0: 1, 1: -1}}
    with pytest.raises(bm.MetadataError, match="ends before"):
        bm.parse(body[:-3])


def _serve(answer: bytes) -> tuple[int, threading.Thread]:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def one() -> None:
        conn, _ = server.accept()
        with conn, server:
            (size,) = struct.unpack(">i", conn.recv(4))
            conn.recv(size)
            conn.sendall(struct.pack(">i", len(answer)) + answer)

    thread = threading.Thread(target=one, daemon=True)
    thread.start()
    return port, thread


def test_a_broker_is_asked_alone_and_one_that_cannot_be_asked_says_so() -> None:
    port, thread = _serve(_answer([(0, "t", [(0, 2)])]))
    assert bm.partitions_led("127.0.0.1", port, ["t"]) == {"t": {0: 2}}
    thread.join(5)
    closed = socket.create_server(("127.0.0.1", 0))
    free = closed.getsockname()[1]
    closed.close()
    with pytest.raises(bm.MetadataError, match=f"127.0.0.1:{free}"):
        bm.partitions_led("127.0.0.1", free, ["t"], timeout_s=1)


def test_the_setup_waits_for_every_partition_led_on_each_broker(monkeypatch) -> None:
    topics = (TopicSpec("t", 2, 3),)
    answers = {
        "lagging": {},
        "no-leader": {"t": {0: 1, 1: -1}},
        "serving": {"t": {0: 1, 1: 2}},
        "short": {"t": {0: 1}},
    }

    def asked(host: str, port: int, names: list[str], timeout_s: float) -> dict:
        if host == "unreachable":
            raise bm.MetadataError("refused")
        return answers[host]

    monkeypatch.setattr(setup, "partitions_led", asked)
    assert setup._serves("serving", 1, topics)
    assert not any(setup._serves(h, 1, topics) for h in ("lagging", "no-leader", "short"))
    assert setup._serves("unreachable", 1, topics)  # one broker's answer is then all there is
