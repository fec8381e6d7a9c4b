"""The process that serves one broker's protocol proxy: ``python -m failsafe.proxy.daemon LISTEN BROKER CONTROL``.

It accepts clients at LISTEN (the address the broker advertises to them), opens one connection to the
broker's own listener at BROKER for each, and passes frames both ways, reading each request's header
and matching each answer to its request by correlation id (Kafka answers a connection's requests in
order; a Produce with acks=0 has no answer, so an answer also settles the requests sent before it).
With no rule in force a frame goes on as it came. The owner adds and clears rules on the control socket
(supervisor/control.py):

    {"op": "status"}                          rules in force with their counts, connections, frames
    {"op": "add", "rule_id": ..., "action": ..., "apis": [...], ...}   a rule (rules.py Rule.from_message)
    {"op": "clear", "rule_id": ...}           the rule ends (held requests go on, in order); its counts

A rule names its owner (pid and creation time): when that process dies (failsafe killed mid-fault), the proxy
ends its rules itself, held requests going on.

A broker that is down: a client's connection is accepted and closed at once (the client reconnects, as
after a refused connection). Exit codes: 0 on SIGTERM, 2 cannot listen, 1 anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from failsafe.proxy.rules import PASS_REQUEST, OnRequest, Rule, Rules
from failsafe.proxy.wire import (
    SIZE,
    FramingError,
    answer_error_code,
    api_name,
    frame_size,
    request_header,
    response_correlation_id,
)

# How long a connection whose client left is kept to the broker so the answers to what was sent (a held request
# released after its client gave up) are taken, not cut off mid-way.
QUIESCE_TIMEOUT_S = 30.0
# Answers still owed on a connection, at most: a producer with acks=0 gets none, so its requests are forgotten oldest
# first.
MAX_PENDING = 10_000
# A stream's buffer: above Kafka's default batch and fetch sizes, so a frame is read without pausing its socket.
BUFFER_BYTES = 4 * 1024 * 1024
CONTROL_TIMEOUT_S = 10.0
# How often the owners of the rules in force are looked at: a rule whose owner died (failsafe killed mid-fault) ends,
# as a network fault's rules do by the leash.
OWNER_CHECK_S = 0.5
# How long ending a hold waits for the broker's answers to the requests it released (recorded with what it took).
RELEASED_ANSWERS_TIMEOUT_S = 3.0


@dataclass
class Pending:
    correlation_id: int
    api_key: int
    client_id: str | None
    swallow: bool = False  # the second answer to a request sent twice
    api_version: int = 0
    held_by: tuple[str, ...] = ()  # the hold rules it waited for: its answer is recorded for them


class Connection:
    """One client's connection and its connection to the broker."""

    def __init__(self, client: asyncio.StreamWriter, broker: asyncio.StreamWriter) -> None:
        self.client = client
        self.broker = broker
        self.pending: collections.deque[Pending] = collections.deque(maxlen=MAX_PENDING)
        self.answered = asyncio.Event()
        self.stalled = False
        self.client_gone = False

    def owed(self, correlation_id: int) -> Pending | None:
        """The request this answer is for, settling those before it (acks=0 Produce: no answer comes)."""
        while self.pending:
            entry = self.pending.popleft()
            if entry.correlation_id == correlation_id:
                if not self.pending:
                    self.answered.set()
                return entry
        self.answered.set()
        return None

    def close(self) -> None:
        for writer in (self.client, self.broker):
            with contextlib.suppress(Exception):
                writer.close()


class Proxy:
    def __init__(self, broker_host: str, broker_port: int) -> None:
        self.broker_host = broker_host
        self.broker_port = broker_port
        self.rules = Rules()
        self.holds: dict[str, asyncio.Event] = {}
        self.connections: set[Connection] = set()
        self.frames = collections.Counter()
        self.refused = 0
        # Per hold rule: its requests still waiting or sent and unanswered, and the answers to those it released.
        self.unanswered: collections.Counter[str] = collections.Counter()
        self.released_answers: dict[str, list[dict[str, Any]]] = {}
        self.progress = asyncio.Event()

    # -- control (on the loop, asked from the control thread) --------------------------------------------------------
    async def control(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if op == "status":
            return {
                "rules": self.rules.counts(),
                "connections": len(self.connections),
                "frames": dict(self.frames),
                "refused": self.refused,
            }
        if op == "add":
            rule = Rule.from_message(message)
            self.rules.add(rule)
            if rule.action == "hold":
                self.holds[rule.rule_id] = asyncio.Event()
            return {"rules": self.rules.ids()}
        if op == "clear":
            rule_id = str(message.get("rule_id"))
            counts = self.end(rule_id)
            if counts is not None and rule_id in self.released_answers:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._all_answered(rule_id), RELEASED_ANSWERS_TIMEOUT_S)
                counts["answers"] = self.released_answers.pop(rule_id)
                self.unanswered.pop(rule_id, None)
            return {"cleared": counts, "rules": self.rules.ids()}
        raise ValueError(f"unknown request {op!r}")

    def end(self, rule_id: str) -> dict[str, Any] | None:
        """End a rule: held requests go on (waiters wake in the order they began to wait); what it took."""
        rule = self.rules.remove(rule_id)
        held = self.holds.pop(rule_id, None)
        if held is not None:
            held.set()
        return rule.counts() if rule is not None else None

    async def _all_answered(self, rule_id: str) -> None:
        """Until every request the hold took has been sent and answered."""
        while self.unanswered[rule_id] > 0:
            self.progress.clear()
            await self.progress.wait()

    def _note(self, rule_ids: tuple[str, ...], change: int) -> None:
        for rule_id in rule_ids:
            self.unanswered[rule_id] += change
        self.progress.set()

    async def watch_owners(self, alive: Callable[[int, float], bool]) -> None:
        """End the rules of owners that died, every OWNER_CHECK_S (the pace of a check, not a synchronisation)."""
        while True:
            await asyncio.sleep(OWNER_CHECK_S)
            for (pid, create_time), rule_ids in self.rules.owners().items():
                if not alive(pid, create_time):
                    for rule_id in rule_ids:
                        counts = self.end(rule_id)
                        self.released_answers.pop(rule_id, None)
                        self.unanswered.pop(rule_id, None)
                        print(f"failsafe.proxy.daemon: owner {pid} is gone; ended {rule_id}: {counts}", flush=True)

    # -- connections --------------------------------------------------------------------------------------------------
    async def serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_connection(
                self.broker_host, self.broker_port, limit=BUFFER_BYTES
            )
        except OSError:
            self.refused += 1
            writer.close()
            return
        conn = Connection(writer, broker_writer)
        self.connections.add(conn)
        try:
            requests = asyncio.create_task(self._requests(reader, conn))
            answers = asyncio.create_task(self._answers(broker_reader, conn))
            done, _ = await asyncio.wait({requests, answers}, return_when=asyncio.FIRST_COMPLETED)
            if answers in done:  # the broker closed (killed, restarted), or the proxy closed the connection
                requests.cancel()
            else:
                await self._quiesce(conn)
                answers.cancel()
            await asyncio.gather(requests, answers, return_exceptions=True)
        finally:
            conn.close()
            self.connections.discard(conn)

    async def _quiesce(self, conn: Connection) -> None:
        """The client left: wait, a while at most, for the answers to what reached the broker."""
        conn.client_gone = True
        if conn.pending:
            conn.answered.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._drained(conn), QUIESCE_TIMEOUT_S)

    async def _drained(self, conn: Connection) -> None:
        while conn.pending:
            await conn.answered.wait()
            conn.answered.clear()

    async def _requests(self, reader: asyncio.StreamReader, conn: Connection) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, FramingError):
            while True:
                prefix = await reader.readexactly(SIZE.size)
                body = await reader.readexactly(frame_size(prefix))
                header = request_header(body)
                self.frames["requests"] += 1
                action = self.rules.on_request(header)
                if action is not PASS_REQUEST and not await self._before_sending(action, conn):
                    return
                held_by = action.hold
                conn.pending.append(
                    Pending(header.correlation_id, header.api_key, header.client_id, False, header.api_version, held_by)
                )
                conn.broker.write(prefix)
                conn.broker.write(body)
                if action.duplicate:
                    conn.pending.append(Pending(header.correlation_id, header.api_key, header.client_id, swallow=True))
                    conn.broker.write(prefix)
                    conn.broker.write(body)
                await conn.broker.drain()

    async def _before_sending(self, action: OnRequest, conn: Connection) -> bool:
        """Delay, hold or refuse one request; False when its connection is to be closed instead."""
        if action.disconnect:
            conn.close()
            return False
        if action.delay_s:
            await asyncio.sleep(action.delay_s)  # the fault itself: the request is late
        for rule_id in action.hold:
            self.released_answers.setdefault(rule_id, [])
            self._note((rule_id,), +1)
        for rule_id in action.hold:
            held = self.holds.get(rule_id)
            if held is not None:
                await held.wait()
        return True

    async def _answers(self, reader: asyncio.StreamReader, conn: Connection) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, FramingError):
            while True:
                prefix = await reader.readexactly(SIZE.size)
                body = await reader.readexactly(frame_size(prefix))
                self.frames["responses"] += 1
                entry = conn.owed(response_correlation_id(body))
                if entry is not None and entry.held_by and not entry.swallow:
                    answer = {
                        "api": api_name(entry.api_key),
                        "client_id": entry.client_id,
                        "error_code": answer_error_code(entry.api_key, entry.api_version, body),
                        "client_gone": conn.client_gone,
                    }
                    for rule_id in entry.held_by:
                        self.released_answers.setdefault(rule_id, []).append(answer)
                    self._note(entry.held_by, -1)
                if entry is not None and entry.swallow:
                    self.frames["swallowed"] += 1
                    continue
                if conn.stalled or conn.client_gone:
                    continue
                if entry is not None and self.rules:
                    action = self.rules.on_response(entry.api_key, entry.client_id)
                    if action.drop:
                        self.frames["dropped"] += 1
                        if action.after == "close":
                            conn.close()
                            return
                        conn.stalled = True
                        continue
                    if action.delay_s:
                        await asyncio.sleep(action.delay_s)  # the fault itself: the answer is late
                conn.client.write(prefix)
                conn.client.write(body)
                try:
                    await conn.client.drain()
                except ConnectionError:
                    conn.client_gone = True  # the broker's answers to what was sent are still read, and dropped


async def _main(listen: tuple[str, int], broker: tuple[str, int], control_name: str) -> int:
    from failsafe.supervisor import TrackedProcess
    from failsafe.supervisor.control import serve

    proxy = Proxy(*broker)
    loop = asyncio.get_running_loop()
    try:
        server = await asyncio.start_server(proxy.serve_client, *listen, limit=BUFFER_BYTES)
    except OSError as e:
        print(f"failsafe.proxy.daemon: cannot listen at {listen[0]}:{listen[1]}: {e}", file=sys.stderr)
        return 2

    def handle(message: dict[str, Any]) -> dict[str, Any]:
        return asyncio.run_coroutine_threadsafe(proxy.control(message), loop).result(CONTROL_TIMEOUT_S)

    control = serve(control_name, handle, thread_name="proxy-control")
    watcher = asyncio.create_task(proxy.watch_owners(lambda pid, ct: TrackedProcess(pid, ct).alive()))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with server:
            await stop.wait()
    finally:
        watcher.cancel()
        control.close()
        for conn in list(proxy.connections):
            conn.close()
    return 0


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="failsafe.proxy.daemon")
    parser.add_argument("listen", type=_address, help="HOST:PORT clients connect to (what the broker advertises)")
    parser.add_argument("broker", type=_address, help="HOST:PORT of the broker's own client listener")
    parser.add_argument("control", help="the control socket's name (abstract namespace)")
    args = parser.parse_args(argv)
    return asyncio.run(_main(args.listen, args.broker, args.control))


if __name__ == "__main__":
    sys.exit(main())
