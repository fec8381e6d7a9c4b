"""The console's ASGI app (Starlette): the page, the JSON API, server-sent events and the fault actions.

Every request needs the console's token: ``?token=`` or a header (``Authorization: Bearer`` or
``X-Failsafe-Token``); the page, once opened with ``?token=``, keeps it in a SameSite=Strict
cookie named after the port (a browser sends a host's cookies to every port of it). A request that
changes anything (POST) needs the token in a header: a cross-site form or link cannot set one, so no
other site can make a browser kill a broker; the page the server sends carries the token for its
buttons. The Host header must name the console itself (127.0.0.1 or localhost), which stops DNS
rebinding. A run's report.html is served sandboxed: a script in it cannot act as the console.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from failsafe.cluster.nodes.actions import NODE_ACTIONS, act_on_node, default_timeout_s, record_leader_election
from failsafe.cluster.spec import BROKER, CONTROLLER, ZOOKEEPER
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.console.poller import ClusterPoller
from failsafe.console.rebalances import rebalance_view
from failsafe.console.runs import RunHistories, run_dir, stored_checker
from failsafe.console.share_groups import share_groups_view
from failsafe.errors import FailsafeError, UnknownNode, UserError
from failsafe.history.model import History, HistoryFormatError
from failsafe.waiting import WaitTimeout

TOKEN_COOKIE = "failsafe_console_token"
TOKEN_HEADER = "x-failsafe-token"
KEEPALIVE_S = 15.0
# How old a view an API call may get: two polls' worth of groups.
API_MAX_AGE_S = 2.0
ROLES = (BROKER, CONTROLLER, ZOOKEEPER)
# report.html is self-contained (inline styles, data: images, no script): nothing else may run or load.
REPORT_POLICY = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Guard:
    """ASGI middleware: the Host check, then the token check, before any route runs."""

    def __init__(self, app: ASGIApp, token: str, hosts: set[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        host = request.headers.get("host", "")
        if host not in self.hosts:
            await _error(403, f"the console answers only to {' or '.join(sorted(self.hosts))}, not to Host {host!r}")(
                scope, receive, send
            )
            return
        header = request.headers.get(TOKEN_HEADER) or _bearer(request.headers.get("authorization", ""))
        if request.method not in ("GET", "HEAD"):
            given, where = header, "the X-Failsafe-Token header"
        else:
            given, where = (
                header or request.query_params.get("token") or request.cookies.get(_cookie(request)),
                "?token=",
            )
        # As bytes: compare_digest refuses str with non-ASCII characters (a TypeError, a 500, instead of a 401).
        if not given or not secrets.compare_digest(given.encode(), self.token.encode()):
            what = "missing" if not given else "wrong"
            await _error(401, f"token {what}: open the URL 'failsafe console' printed (the token goes in {where})")(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)


def _cookie(request: Request) -> str:
    """The token cookie's name, with the port: a browser sends it to every port of the host, so two consoles need two
    names."""
    port = request.url.port
    return f"{TOKEN_COOKIE}_{port}" if port else TOKEN_COOKIE


def _bearer(value: str) -> str | None:
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Changes:
    """Wakes every event stream when the poller has a new version (set from the poller's thread)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._event = asyncio.Event()

    def notify_threadsafe(self, _version: int) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._fire)

    def _fire(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    def next(self) -> asyncio.Event:
        """The event the next change sets: take it *before* reading the version, so a change from then on (even one that
        lands while a stream sends) wakes the stream rather than waiting for the one after it."""
        return self._event

    @staticmethod
    async def wait(event: asyncio.Event, timeout_s: float) -> None:
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            pass


def _page() -> str:
    static = resources.files("failsafe.console") / "static"
    html = (static / "index.html").read_text()
    return html.replace("/*CONSOLE_CSS*/", (static / "console.css").read_text()).replace(
        "/*CONSOLE_JS*/", (static / "console.js").read_text()
    )


def create_app(
    cluster: Cluster,
    token: str,
    hosts: set[str],
    runs_root: Path | None = None,
    poller_factory: Callable[..., ClusterPoller] = ClusterPoller,
) -> Starlette:
    runs_root = runs_root if runs_root is not None else cluster.dir.root / "runs"
    changes = Changes()
    poller = poller_factory(cluster, runs_root, on_change=changes.notify_threadsafe)
    page = _page().replace('/*CONSOLE_TOKEN*/""', orjson.dumps(token).decode())
    histories = RunHistories()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        changes.loop = asyncio.get_running_loop()
        await run_in_threadpool(poller.start)
        try:
            yield
        finally:
            await run_in_threadpool(poller.stop)

    async def index(request: Request) -> Response:
        # The page carries the token (for its buttons' header, also after a reload that sent only the cookie): never
        # cached.
        response = HTMLResponse(page, headers={"Cache-Control": "no-store"})
        if request.query_params.get("token"):
            response.set_cookie(_cookie(request), token, httponly=True, samesite="strict")
        return response

    async def fresh(name: str) -> None:
        """A script calling the API while no page is open: read now rather than answer with what is stale."""
        if not poller.fresh(name, API_MAX_AGE_S):
            await run_in_threadpool(poller.poll, True)

    def view(name: str) -> Callable[[Request], JSONResponse]:
        async def handler(request: Request) -> JSONResponse:
            await fresh(name)
            return JSONResponse(poller.views[name])

        return handler

    async def snapshot(request: Request) -> JSONResponse:
        await fresh("groups")
        return JSONResponse(poller.snapshot())

    async def group(request: Request) -> JSONResponse:
        await fresh("groups")
        name = request.path_params["group"]
        found = next((g for g in poller.views["groups"]["groups"] if g.get("group") == name), None)
        if found is None:
            return _error(
                404,
                f"no consumer group {name!r} (the console lists {len(poller.views['groups']['groups'])} groups "
                f"at /api/groups)",
            )
        return JSONResponse(found)

    async def timeline(request: Request) -> JSONResponse:
        since = _int(request.query_params.get("since", "0"))
        if since is None:
            return _error(400, "since must be an integer: the seq of the last event you have (0 for all)")
        return JSONResponse({"started_ms": poller.timeline.started_ms, "events": poller.timeline.since(since)})

    async def events(request: Request) -> Response:
        since = _int(request.query_params.get("since", "0")) or 0

        async def stream() -> AsyncIterator[bytes]:
            seq, sent_version = since, -1
            poller.listeners += 1
            try:
                while True:
                    change = changes.next()
                    if poller.version != sent_version:
                        sent_version = poller.version
                        new = poller.timeline.since(seq)
                        seq = new[-1]["seq"] if new else seq
                        body = {
                            **poller.snapshot(),
                            "timeline": {"started_ms": poller.timeline.started_ms, "events": new},
                        }
                        yield b"data: " + orjson.dumps(body) + b"\n\n"
                    else:
                        yield b": keep-alive\n\n"
                    await changes.wait(change, KEEPALIVE_S)
            finally:
                poller.listeners -= 1

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    async def node_action(request: Request) -> JSONResponse:
        role, action = request.path_params["role"], request.path_params["action"]
        node_id = _int(request.path_params["node"])
        if role not in ROLES:
            return _error(404, f"no role {role!r}: use one of {', '.join(ROLES)}")
        if action not in NODE_ACTIONS:
            return _error(404, f"no action {action!r}: use one of {', '.join(NODE_ACTIONS)}")
        if node_id is None:
            return _error(404, f"{request.path_params['node']!r} is not a node id")
        try:
            node = await run_in_threadpool(
                act_on_node, cluster, role, node_id, action, default_timeout_s(action), source="console"
            )
        except UnknownNode as e:
            return _error(404, str(e))
        except UserError as e:
            return _error(409, str(e))
        except (FailsafeError, WaitTimeout) as e:
            return _error(500, str(e))
        poller.poll_soon()
        return JSONResponse({"role": role, "node": node_id, "action": action, "state": str(cluster.node_state(node))})

    async def elect_leaders(request: Request) -> JSONResponse:
        from failsafe.tools.groups import elect_preferred_leaders

        start_ns = time.time_ns()
        try:
            elected, already, failed = await run_in_threadpool(elect_preferred_leaders, cluster.bootstrap_servers, None)
        except FailsafeError as e:
            return _error(500, str(e))
        record_leader_election(cluster, start_ns, "console", elected, failed)
        poller.poll_soon()
        return JSONResponse(
            {"elected": elected, "already_preferred": len(already), "failed": failed},
            status_code=200 if not failed else 500,
        )

    async def report(request: Request) -> Response:
        scenario, stamp = request.path_params["scenario"], request.path_params["stamp"]
        path = (runs_root / scenario / stamp / "report.html").resolve()
        if runs_root.resolve() not in path.parents or not path.is_file():
            return _error(404, f"no report for run {scenario}/{stamp}: 'failsafe report RUN_DIR' draws one")
        return FileResponse(
            path,
            media_type="text/html",
            headers={"Content-Security-Policy": REPORT_POLICY, "Referrer-Policy": "no-referrer"},
        )

    def run_view(build: Callable[[Path, History], dict]) -> Callable[[Request], JSONResponse]:
        """A view of one run's history (read off the event loop: a long history takes seconds)."""

        async def handler(request: Request) -> JSONResponse:
            scenario, stamp = request.path_params["scenario"], request.path_params["stamp"]
            run = run_dir(runs_root, scenario, stamp)
            if run is None:
                return _error(404, f"no run {scenario}/{stamp} under {runs_root} (the console lists them at /api/runs)")
            try:
                body = await run_in_threadpool(lambda: build(run, histories.get(run)))
            except HistoryFormatError as e:
                return _error(422, f"the history of run {scenario}/{stamp} is damaged: {e}")
            return JSONResponse({"id": f"{scenario}/{stamp}", **body})

        return handler

    def rebalances(run: Path, history: History) -> dict:
        return rebalance_view(history, stored_checker(run, "rebalance"))

    def share_groups(run: Path, history: History) -> dict:
        return share_groups_view(history)

    routes = [
        Route("/", index),
        Route("/api", snapshot),
        Route("/api/cluster", view("cluster")),
        Route("/api/topics", view("topics")),
        Route("/api/groups", view("groups")),
        Route("/api/groups/{group:path}", group),
        Route("/api/runs", view("runs")),
        Route("/api/runs/{scenario}/{stamp}/rebalances", run_view(rebalances)),
        Route("/api/runs/{scenario}/{stamp}/share-groups", run_view(share_groups)),
        Route("/api/timeline", timeline),
        Route("/api/events", events),
        Route("/api/nodes/{role}/{node}/{action}", node_action, methods=["POST"]),
        Route("/api/elect-leaders", elect_leaders, methods=["POST"]),
        Route("/runs/{scenario}/{stamp}/report.html", report),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(Guard, token=token, hosts=hosts)
    app.state.poller = poller
    return app


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
