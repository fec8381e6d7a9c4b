"""Kafka's framing as the proxy reads it: a frame's size, a request's header, a response's correlation id.

Every Kafka request and response is a frame: a 4-byte big-endian size, then that many bytes. A request's
header begins with ``request_api_key`` (int16), ``request_api_version`` (int16), ``correlation_id`` (int32)
and ``client_id`` (a nullable string, int16 length, -1 for null), in every header version that has a
client id: version 1 (non-flexible requests) and version 2 (flexible requests, whose tagged fields follow
the client id; the client id itself stays a non-compact string there, by the header's own schema). Header
version 0 (ControlledShutdown version 0 only) has no client id. A response's header begins with the
correlation id of the request it answers (versions 0 and 1 alike; version 1 only adds tagged fields after
it). Bodies are never parsed: a request is routed by its header alone.

Names are Kafka's own (``org.apache.kafka.common.protocol.ApiKeys``, by their message names).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
# A frame larger than this is not Kafka's (the broker's socket.request.max.bytes defaults to 100 MiB).
MAX_FRAME_BYTES = 512 * 1024 * 1024

API_KEYS: dict[str, int] = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "SaslHandshake": 17,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "OffsetForLeaderEpoch": 23,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "WriteTxnMarkers": 27,
    "TxnOffsetCommit": 28,
    "DescribeConfigs": 32,
    "AlterConfigs": 33,
    "SaslAuthenticate": 36,
    "CreatePartitions": 37,
    "DeleteGroups": 42,
    "ElectLeaders": 43,
    "IncrementalAlterConfigs": 44,
    "OffsetDelete": 47,
    "DescribeCluster": 60,
    "DescribeProducers": 61,
    "DescribeTransactions": 65,
    "ListTransactions": 66,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
    "GetTelemetrySubscriptions": 71,
    "PushTelemetry": 72,
    "DescribeTopicPartitions": 75,
    "ShareGroupHeartbeat": 76,
    "ShareGroupDescribe": 77,
    "ShareFetch": 78,
    "ShareAcknowledge": 79,
}
API_NAMES: dict[int, str] = {key: name for name, key in API_KEYS.items()}


class FramingError(ValueError):
    """Bytes that are not a Kafka frame or request header."""


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    @property
    def api(self) -> str:
        """Kafka's name of the request's API (``Produce``), or ``api-N`` for a key this table lacks."""
        return api_name(self.api_key)


def api_name(key: int) -> str:
    return API_NAMES.get(key, f"api-{key}")


def api_key(name: str) -> int:
    """The key of an API named as Kafka names it (``EndTxn``) or as its number; ValueError names the known ones."""
    if name.isdigit():
        return int(name)
    key = API_KEYS.get(name)
    if key is None:
        lowered = {n.lower(): k for n, k in API_KEYS.items()}
        key = lowered.get(name.replace("_", "").replace("-", "").lower())
    if key is None:
        raise ValueError(f"{name!r} is not an API failsafe knows; one of {', '.join(API_KEYS)}, or a number")
    return key


def frame_size(prefix: bytes) -> int:
    """The size a frame's 4-byte prefix announces; FramingError when it cannot be a Kafka frame."""
    (size,) = SIZE.unpack(prefix)
    if size < 4 or size > MAX_FRAME_BYTES:
        raise FramingError(f"a frame of {size} bytes is not Kafka's")
    return size


def request_header(body: bytes) -> RequestHeader:
    """The header of a request frame's body (the bytes after its size)."""
    if len(body) < _HEADER.size:
        raise FramingError(f"a request of {len(body)} bytes is shorter than its header")
    key, version, correlation = _HEADER.unpack_from(body)
    if key < 0:
        raise FramingError(f"api key {key} is not Kafka's")
    client_id = None
    # ControlledShutdown (key 7) version 0 has header version 0: no client id.
    if not (key == 7 and version == 0) and len(body) >= _HEADER.size + _INT16.size:
        (length,) = _INT16.unpack_from(body, _HEADER.size)
        start = _HEADER.size + _INT16.size
        if length >= 0:
            if start + length > len(body):
                raise FramingError(f"a client id of {length} bytes runs past the request's end")
            client_id = body[start : start + length].decode("utf-8", errors="replace")
    return RequestHeader(key, version, correlation, client_id)


# APIs whose answer begins, after its header, with ThrottleTimeMs (int32) then ErrorCode (int16) in every version: the
# transactional producer's own requests. Each with its first version whose headers are flexible (response header v1: a
# tagged-fields count after the correlation id), from Kafka's message schemas.
_THROTTLE_THEN_ERROR = {API_KEYS["EndTxn"]: 3, API_KEYS["InitProducerId"]: 2, API_KEYS["AddOffsetsToTxn"]: 3}


def answer_error_code(api_key: int, api_version: int, body: bytes) -> int | None:
    """The error code of an answer to a request of ``api_key`` at ``api_version``, for the APIs whose answer starts
    with it (_THROTTLE_THEN_ERROR); None for the others, and for an answer whose header carries tagged fields."""
    flexible_from = _THROTTLE_THEN_ERROR.get(api_key)
    if flexible_from is None:
        return None
    offset = _INT32.size
    if api_version >= flexible_from:
        if len(body) <= offset or body[offset] != 0:  # a header's tagged fields: none in Kafka's answers so far
            return None
        offset += 1
    if len(body) < offset + _INT32.size + _INT16.size:
        return None
    return _INT16.unpack_from(body, offset + _INT32.size)[0]


def response_correlation_id(body: bytes) -> int:
    """The correlation id a response frame's body begins with."""
    if len(body) < _INT32.size:
        raise FramingError(f"a response of {len(body)} bytes has no correlation id")
    return _INT32.unpack_from(body)[0]


def request_frame(api_key: int, api_version: int, correlation_id: int, client_id: str | None, rest: bytes) -> bytes:
    """A whole request frame (size included) with a version 1 header, then ``rest`` (tagged fields and body): what
    tests and the benchmark write."""
    cid = b"" if client_id is None else client_id.encode()
    header = _HEADER.pack(api_key, api_version, correlation_id) + _INT16.pack(-1 if client_id is None else len(cid))
    body = header + cid + rest
    return SIZE.pack(len(body)) + body
