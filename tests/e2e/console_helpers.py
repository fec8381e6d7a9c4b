"""Running 'failsafe console' as a user does, in a process of its own, for the console's end-to-end tests."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psutil

from tests.helpers import tracked_processes

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 20


@dataclass
class RunningConsole:
    proc: subprocess.Popen
    url: str

    @property
    def base(self) -> str:
        u = urlparse(self.url)
        return f"{u.scheme}://{u.netloc}"

    @property
    def token(self) -> str:
        return parse_qs(urlparse(self.url).query)["token"][0]

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Failsafe-Token": self.token}


def start_console(cluster_dir: Path, *extra: str) -> RunningConsole:
    proc = subprocess.Popen(
        [sys.executable, "-m", "failsafe.cli.main", "console", "--dir", str(cluster_dir), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if selector.select(timeout=max(0.0, deadline - time.monotonic())):
            line = proc.stdout.readline()
            if line.startswith("http://"):
                return RunningConsole(proc, line.strip())
            if not line:
                break
    proc.kill()
    raise AssertionError(f"the console printed no URL: {proc.stderr.read()}")


def listening_addresses(console: RunningConsole) -> list:
    """Where the console's process listens."""
    return [
        c.laddr for c in psutil.Process(console.proc.pid).net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
    ]


def stop_console(console: RunningConsole, cluster_dir: Path) -> str:
    """SIGTERM, as a service manager stops it; returns stderr. Every process it leaves must be a node of the cluster."""
    if console.proc.poll() is not None:
        return console.proc.stderr.read()  # it died already: what it said is the evidence
    nodes = {t.pid for t in tracked_processes(cluster_dir)}
    children = psutil.Process(console.proc.pid).children(recursive=True)
    console.proc.send_signal(signal.SIGTERM)
    _, err = console.proc.communicate(timeout=STOP_TIMEOUT_S)
    left = [c.pid for c in children if c.is_running() and c.pid not in nodes]
    assert left == [], f"the console left processes {left} running"
    return err


def console_fate(console: RunningConsole) -> str:
    """For a request the console never answered: whether its process is still there, and if not how it ended."""
    try:
        code = console.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return "the console process is still running"
    err = console.proc.stderr.read()
    crashed = err.find("Fatal Python error")
    return (
        f"the console process exited with code {code}; its stderr: "
        f"{err[max(0, crashed - 2000) :] if crashed >= 0 else err[-3000:]}"
    )
