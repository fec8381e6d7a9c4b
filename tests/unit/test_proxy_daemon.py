"""The proxy's daemon between a client and a small fake broker (in one event loop): frames pass as they came, answers
find their requests by correlation id, and each protocol fault does what it says, held requests in order."""

from __future__ import annotations

import asyncio
import contextlib
import struct

import pytest

from failsafe.proxy.daemon import Proxy
from failsafe.proxy.wire import API_KEYS, request_frame

PRODUCE, END_TXN, FETCH = API_KEYS["Produce"], API_KEYS["EndTxn"], API_KEYS["Fetch"]
# The fake broker answers no request of this version: a Produce with acks=0.
NO_ANSWER_VERSION = 99
INVALID_TXN_STATE = 48


class FakeBroker:
    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []  # (api key, correlation id) in the order they came
        self.server: asyncio.AbstractServer | None = None
        self.open = 0  # connections being served

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                body = await reader.readexactly(size)
                key, version, correlation = struct.unpack_from(">hhi", body)
                self.seen.append((key, correlation))
                if version != NO_ANSWER_VERSION:
                    # EndTxn v1's answer as Kafka writes it: ThrottleTimeMs 0, then ErrorCode (INVALID_TXN_STATE).
                    rest = struct.pack(">ih", 0, INVALID_TXN_STATE) if key == END_TXN else b"answer"
                    answer = struct.pack(">i", correlation) + rest
                    writer.write(struct.pack(">i", len(answer)) + answer)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.open -= 1


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader, self.writer, self.client_id = reader, writer, client_id

    async def send(self, api: int, correlation: int, version: int = 1) -> None:
        self.writer.write(request_frame(api, version, correlation, self.client_id, b"body"))
        await self.writer.drain()

    async def answer(self, timeout_s: float = 2.0) -> int | None:
        """The correlation id of the next answer, None when the proxy closed the connection."""
        try:
            (size,) = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), timeout_s))
            return struct.unpack_from(">i", await self.reader.readexactly(size))[0]
        except (asyncio.IncompleteReadError, ConnectionError):
            return None


@contextlib.asynccontextmanager
async def harness(broker_port: int | None = None):
    """A fake broker, a proxy in front of it, and a way to connect clients; all closed at the end."""
    broker = FakeBroker()
    port = await broker.start() if broker_port is None else broker_port
    proxy = Proxy("127.0.0.1", port)
    server = await asyncio.start_server(proxy.serve_client, "127.0.0.1", 0)
    listen = server.sockets[0].getsockname()[1]
    clients: list[Client] = []

    async def connect(cid: str = "producer-1") -> Client:
        clients.append(Client(*await asyncio.open_connection("127.0.0.1", listen), cid))
        return clients[-1]

    try:
        yield broker, proxy, connect
    finally:
        for client in clients:
            client.writer.close()
        for conn in list(proxy.connections):
            conn.close()
        server.close()
        if broker.server is not None:
            broker.server.close()
        await _until(lambda: not proxy.connections and not broker.open)


async def _until(condition, timeout_s: float = 2.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.005)


def run(coro):
    return asyncio.run(coro)


def test_frames_pass_and_an_unanswered_request_does_not_shift_the_matching():
    async def scenario():
        async with harness() as (broker, proxy, connect):
            client = await connect()
            await client.send(PRODUCE, 1, version=NO_ANSWER_VERSION)  # acks=0: no answer comes
            await client.send(FETCH, 2)
            assert await client.answer() == 2
            await proxy.control({"op": "add", "rule_id": "d", "action": "drop-response", "apis": ["Fetch"], "limit": 1})
            await client.send(PRODUCE, 3)  # answered: the drop takes Fetch only
            assert await client.answer() == 3
            status = await proxy.control({"op": "status"})
            assert status["frames"]["requests"] == 3 and status["connections"] == 1

    run(scenario())


def test_held_requests_go_on_in_order_when_the_rule_ends_even_after_their_client_left():
    async def scenario():
        async with harness() as (broker, proxy, connect):
            await proxy.control({"op": "add", "rule_id": "h", "action": "hold", "apis": ["EndTxn"]})
            first, second = await connect("txn-0"), await connect("txn-1")
            await first.send(END_TXN, 10)
            await second.send(END_TXN, 20)
            await second.send(FETCH, 21)  # behind the held EndTxn on its connection
            other = await connect("consumer")
            await other.send(FETCH, 30)
            assert await other.answer() == 30
            assert broker.seen == [(FETCH, 30)]
            first.writer.close()  # the client gives up on its commit; the held request still reaches the broker
            cleared = await proxy.control({"op": "clear", "rule_id": "h"})
            assert cleared["cleared"]["taken"] == 2
            # Ending the hold waits for the broker's answers to what it released, the gone client's included.
            assert cleared["cleared"]["answers"] == [
                {"api": "EndTxn", "client_id": "txn-0", "error_code": INVALID_TXN_STATE, "client_gone": True},
                {"api": "EndTxn", "client_id": "txn-1", "error_code": INVALID_TXN_STATE, "client_gone": False},
            ]
            await _until(lambda: len(broker.seen) == 4)
            assert broker.seen[1:] == [(END_TXN, 10), (END_TXN, 20), (FETCH, 21)]
            assert [await second.answer(), await second.answer()] == [20, 21]

    run(scenario())


def test_a_dropped_answer_closes_or_stalls_the_connection_after_the_broker_took_the_request():
    async def scenario():
        async with harness() as (broker, proxy, connect):
            await proxy.control(
                {"op": "add", "rule_id": "c", "action": "drop-response", "apis": ["Produce"], "limit": 1}
            )
            client = await connect()
            await client.send(PRODUCE, 1)
            assert await client.answer() is None  # closed, with no answer
            assert broker.seen == [(PRODUCE, 1)]
            await proxy.control({"op": "clear", "rule_id": "c"})
            await proxy.control(
                {
                    "op": "add",
                    "rule_id": "s",
                    "action": "drop-response",
                    "apis": ["Produce"],
                    "after": "stall",
                    "limit": 1,
                }
            )
            stalled = await connect()
            await stalled.send(PRODUCE, 2)
            await stalled.send(FETCH, 3)
            with pytest.raises(TimeoutError):
                await stalled.answer(timeout_s=0.3)  # the Fetch's answer is not given either: the connection is stalled
            assert broker.seen[1:] == [(PRODUCE, 2), (FETCH, 3)]

    run(scenario())


def test_a_duplicated_request_reaches_the_broker_twice_and_its_client_gets_one_answer():
    async def scenario():
        async with harness() as (broker, proxy, connect):
            await proxy.control({"op": "add", "rule_id": "x", "action": "duplicate-request", "apis": ["Produce"]})
            client = await connect()
            await client.send(PRODUCE, 5)
            await client.send(FETCH, 6)
            assert [await client.answer(), await client.answer()] == [5, 6]
            assert broker.seen == [(PRODUCE, 5), (PRODUCE, 5), (FETCH, 6)]
            assert (await proxy.control({"op": "status"}))["frames"]["swallowed"] == 1

    run(scenario())


def test_disconnect_on_closes_before_the_broker_sees_the_request_and_only_for_its_clients():
    async def scenario():
        async with harness() as (broker, proxy, connect):
            await proxy.control(
                {"op": "add", "rule_id": "d", "action": "disconnect-on", "apis": ["EndTxn"], "clients": "txn-*"}
            )
            other = await connect("admin")
            await other.send(END_TXN, 1)
            assert await other.answer() == 1
            txn = await connect("txn-0")
            await txn.send(END_TXN, 2)
            assert await txn.answer() is None
            assert broker.seen == [(END_TXN, 1)]

    run(scenario())


def test_delays_make_a_request_and_an_answer_late():
    async def scenario():
        async with harness() as (broker, proxy, connect):
            loop = asyncio.get_running_loop()
            client = await connect()
            for action in ("delay-request", "delay-response"):
                await proxy.control(
                    {"op": "add", "rule_id": action, "action": action, "apis": ["Fetch"], "delay_ms": 200}
                )
                began = loop.time()
                await client.send(FETCH, 1)
                assert await client.answer() == 1
                assert loop.time() - began >= 0.19
                await proxy.control({"op": "clear", "rule_id": action})

    run(scenario())


def test_a_client_of_a_broker_that_is_down_is_closed_at_once():
    async def scenario():
        async with harness(broker_port=1) as (_, proxy, connect):  # nothing listens on port 1
            client = await connect()
            assert await asyncio.wait_for(client.reader.read(), 2.0) == b""
            assert proxy.refused == 1

    run(scenario())


def test_the_rules_of_an_owner_that_died_end_by_themselves_and_release_what_they_held():
    async def scenario():
        async with harness() as (broker, proxy, connect):
            dead, living = (111, 1.0), (222, 2.0)
            for rule_id, owner in (("gone", dead), ("kept", living)):
                await proxy.control(
                    {"op": "add", "rule_id": rule_id, "action": "hold", "apis": ["EndTxn"], "owner": list(owner)}
                )
            client = await connect()
            await client.send(END_TXN, 1)
            watcher = asyncio.create_task(proxy.watch_owners(lambda pid, ct: (pid, ct) != dead))
            await _until(lambda: proxy.rules.ids() == ["kept"], timeout_s=3.0)
            assert broker.seen == []  # still held by the living owner's rule
            await proxy.control({"op": "clear", "rule_id": "kept"})
            assert await client.answer() == 1
            watcher.cancel()

    run(scenario())
