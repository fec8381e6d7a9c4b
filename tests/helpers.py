"""Helpers for tests: run the real CLI, find free ports, watch processes."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from failsafe.supervisor import read_pidfile
from failsafe.waiting import wait_until

TEST_HEAP = "384M"


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None, timeout_s: float = 240) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, **(env or {})},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port_block(count: int) -> int:
    """The first port of ``count`` consecutive free ports below the ephemeral range.

    Not from port 0: the kernel hands ephemeral ports to outgoing connections too, so while a
    test's broker is down a client socket could take its port and the restart would fail to bind.
    """
    # Room above the block for the controller ports a cluster puts at base-port + 100 by default.
    high = _ephemeral_low() - count - 100
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(15000, high)
        if all(_free(p) for p in range(base, base + count)):
            return base
    raise RuntimeError("no block of free ports")


def spark_base_port(workers: int) -> int:
    """A Spark master port with its workers' ports after it and their web UI ports (+1000) free too."""
    for _ in range(100):
        base = free_port_block(workers + 1)
        if all(_free(p) for p in range(base + 1000, base + 1001 + workers)):
            return base
    raise RuntimeError("no free ports for a Spark cluster")


def cluster_ports(brokers: int = 3, controllers: int = 1) -> list[str]:
    """--base-port / --controller-base-port options for a cluster on free ports."""
    base = free_port_block(brokers)
    cbase = free_port_block(controllers)
    while set(range(base, base + brokers)) & set(range(cbase, cbase + controllers)):
        cbase = free_port_block(controllers)
    return ["--base-port", str(base), "--controller-base-port", str(cbase)]


def tracked_processes(cluster_dir: Path):
    # The nodes, the protocol proxies of a cluster made with --protocol-proxy, the clock keepers of one made with
    # --clock-faults.
    pidfiles = [
        *sorted((cluster_dir / "pids").glob("*.pid")),
        *sorted((cluster_dir / "proxies").glob("*.pid")),
        *sorted((cluster_dir / "clocks").glob("keeper-*.pid")),
    ]
    return [t for t in (read_pidfile(p) for p in pidfiles) if t is not None]


def alive_pids(cluster_dir: Path) -> list[int]:
    return [t.pid for t in tracked_processes(cluster_dir) if t.alive()]


def open_dir() -> Path:
    """A directory a test host's user who is not root may enter (pytest's own are root's alone); the caller removes
    it."""
    path = Path(tempfile.mkdtemp(prefix="failsafe-testbed-"))
    path.chmod(0o755)
    return path


def assert_one_line_error(result: Result, *fragments: str) -> str:
    """Bad input's contract: exit 2, no traceback, one line on stderr holding each of ``fragments``; that line."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def sigkill_run_when(
    cluster_dir: Path, scenario: str, tmp_path: Path, reached, what: str, timeout_s: float = 120
) -> None:
    """Start ``failsafe run SCENARIO`` on the cluster at ``cluster_dir``, wait until ``reached()`` (its fault is in
    force), and SIGKILL it there: what a crash of failsafe mid-fault leaves behind is the caller's to check."""
    err = tmp_path / "run.stderr"
    with open(err, "wb") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "failsafe", "run", scenario, "--runs", str(tmp_path / "runs")],
            env={**os.environ, "FAILSAFE_DIR": str(cluster_dir)},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_until(lambda: reached() or run.poll() is not None, timeout_s, f"{what} never came")
        assert run.poll() is None, err.read_text()
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
