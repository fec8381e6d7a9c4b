"""What one broker's own metadata says of some topics: a Metadata request (version 4, non-flexible, served from Kafka
0.11 to 4.x) sent to that broker alone.

librdkafka sends a Metadata request to whichever broker it likes, so an answer of one broker says nothing of the
others; a broker applies the controller's records a little after the others now and then (hundreds of milliseconds, seen
with a tiered broker deleting an earlier topic's remote segments). A consumer group whose leader asks such a broker
just after a topic is made assigns it no partition and does not ask again for minutes (librdkafka's
topic.metadata.refresh.interval.ms). ``partitions_led`` asks each broker itself, so a run starts its consumers once
every broker serves its topics.
"""

from __future__ import annotations

import socket
import struct

METADATA = 3
VERSION = 4
_I8, _I16, _I32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")


class MetadataError(Exception):
    """The broker could not be asked, or answered what is not a Metadata response."""


def request(topics: list[str], correlation_id: int = 1, client_id: str = "failsafe-metadata") -> bytes:
    """A Metadata v4 request frame for ``topics``, with auto-creation off."""
    cid = client_id.encode()
    body = _I16.pack(METADATA) + _I16.pack(VERSION) + _I32.pack(correlation_id) + _I16.pack(len(cid)) + cid
    body += _I32.pack(len(topics))
    for topic in topics:
        name = topic.encode()
        body += _I16.pack(len(name)) + name
    body += _I8.pack(0)
    return _I32.pack(len(body)) + body


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: struct.Struct) -> int:
        if self.at + fmt.size > len(self.data):
            raise MetadataError(f"a Metadata answer of {len(self.data)} bytes ends before its fields do")
        (value,) = fmt.unpack_from(self.data, self.at)
        self.at += fmt.size
        return value

    def string(self) -> str | None:
        length = self.take(_I16)
        if length < 0:
            return None
        text = self.data[self.at : self.at + length].decode("utf-8", errors="replace")
        self.at += length
        return text

    def ints(self) -> list[int]:
        return [self.take(_I32) for _ in range(self.take(_I32))]


def parse(body: bytes) -> dict[str, dict[int, int]]:
    """A Metadata v4 response body (after its size): each topic the broker knows without error, to each partition's
    leader (-1: none). A topic it answered with an error is left out."""
    r = _Reader(body)
    r.take(_I32)  # correlation id
    r.take(_I32)  # throttle time
    for _ in range(r.take(_I32)):  # brokers: id, host, port, rack
        r.take(_I32), r.string(), r.take(_I32), r.string()
    r.string()  # cluster id
    r.take(_I32)  # controller id
    topics: dict[str, dict[int, int]] = {}
    for _ in range(r.take(_I32)):
        error, name, _internal = r.take(_I16), r.string(), r.take(_I8)
        partitions = {}
        for _ in range(r.take(_I32)):
            _perror, index, leader = r.take(_I16), r.take(_I32), r.take(_I32)
            r.ints(), r.ints()  # replicas, ISR
            partitions[index] = leader
        if error == 0 and name is not None:
            topics[name] = partitions
    return topics


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise MetadataError("the broker closed the connection before it answered")
        data += chunk
    return data


def partitions_led(host: str, port: int, topics: list[str], timeout_s: float = 5.0) -> dict[str, dict[int, int]]:
    """What the broker at ``host:port`` answers of ``topics``: each one it knows, to its partitions' leaders;
    MetadataError when it cannot be asked."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(request(topics))
            (size,) = _I32.unpack(_read_exactly(sock, _I32.size))
            return parse(_read_exactly(sock, size))
    except OSError as e:
        raise MetadataError(f"{host}:{port}: {e}") from e
