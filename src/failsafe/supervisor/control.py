"""How an owner talks to a daemon it started (a disk layer's, a protocol proxy's): one JSON request and one JSON
answer per connection, over a Unix socket in the abstract namespace (no file to leave behind; the name is in the
daemon's state file, or derived from what it serves).

Each daemon says which requests it takes (disk/daemon.py, proxy/daemon.py); every one takes ``{"op": "status"}``.
Answers: ``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

DEFAULT_REQUEST_TIMEOUT_S = 30.0


def _address(name: str) -> str:
    return "\0" + name


def request(name: str, message: dict[str, Any], timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> dict[str, Any]:
    """Send ``message`` to the daemon listening at ``name``; raises OSError when nobody listens or answers in time."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(_address(name))
        sock.sendall(json.dumps(message).encode() + b"\n")
        with sock.makefile("rb") as answer:
            line = answer.readline()
    if not line:
        raise ConnectionError(f"the daemon at {name} closed the connection without an answer")
    return json.loads(line)


def serve(name: str, handle: Callable[[dict[str, Any]], dict[str, Any]], thread_name: str = "control") -> socket.socket:
    """Listen at ``name`` and answer each request with ``handle`` in a daemon thread; returns the listening socket."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(_address(name))
    server.listen(8)

    def loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return  # closed: the daemon is exiting
            with conn, conn.makefile("rwb") as stream:
                try:
                    answer = {"ok": True, **handle(json.loads(stream.readline() or b"{}"))}
                except Exception as e:  # noqa: BLE001 - any failure of a request is the requester's answer, not the daemon's end
                    answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                stream.write(json.dumps(answer).encode() + b"\n")
                stream.flush()

    threading.Thread(target=loop, name=thread_name, daemon=True).start()
    return server
