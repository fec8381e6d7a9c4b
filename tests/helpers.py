"""Helpers for tests: run the real CLI, find free ports, watch processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from failsafe.cluster.process import read_pidfile

TEST_HEAP = "384M"


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None, timeout_s: float = 240) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args],
        input=input, capture_output=True, text=True, timeout=timeout_s, env={**os.environ, **(env or {})},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port_block(count: int) -> int:
    """The first port of ``count`` consecutive free ports, found by binding port 0 and probing."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count < 65000 and all(_free(p) for p in range(base, base + count)):
            return base
    raise RuntimeError("no block of free ports")


def cluster_ports(brokers: int = 3, controllers: int = 1) -> list[str]:
    """--base-port / --controller-base-port options for a cluster on free ports."""
    base = free_port_block(brokers)
    cbase = free_port_block(controllers)
    while set(range(base, base + brokers)) & set(range(cbase, cbase + controllers)):
        cbase = free_port_block(controllers)
    return ["--base-port", str(base), "--controller-base-port", str(cbase)]


def tracked_processes(cluster_dir: Path):
    return [t for t in (read_pidfile(p) for p in sorted((cluster_dir / "pids").glob("*.pid"))) if t is not None]


def alive_pids(cluster_dir: Path) -> list[int]:
    return [t.pid for t in tracked_processes(cluster_dir) if t.alive()]
