"""Serving the console: a socket bound to 127.0.0.1 only, uvicorn, and the URL with its token."""

from __future__ import annotations

import errno
import faulthandler
import socket
import webbrowser
from collections.abc import Callable

import uvicorn

from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.console.app import create_app, new_token
from failsafe.errors import PortInUse, UserError

HOST = "127.0.0.1"
DEFAULT_PORT = 8080
# Pages hold an event stream open; on Ctrl-C uvicorn waits this long for them before closing them.
GRACEFUL_SHUTDOWN_S = 1


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: any free port), or one clear line."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise PortInUse(
                f"port {port} on {HOST} is in use: stop what listens there or pass another --port (0 picks a free one)"
            ) from e
        raise UserError(f"cannot listen on {HOST}:{port}: {e.strerror}") from e
    sock.set_inheritable(True)
    return sock


def serve(cluster: Cluster, port: int, open_browser: bool, announce: Callable[[str], None]) -> None:
    """Run until Ctrl-C or SIGTERM; the poller thread and every open stream stop with it."""
    sock = bind(port)
    # A native crash (in librdkafka, say) would otherwise end the console without a word.
    faulthandler.enable()
    actual = sock.getsockname()[1]
    token = new_token()
    app = create_app(cluster, token, {f"{HOST}:{actual}", f"localhost:{actual}"})
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S
    )
    server = uvicorn.Server(config)
    url = f"http://{HOST}:{actual}/?token={token}"
    announce(url)
    if open_browser:
        webbrowser.open(url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
