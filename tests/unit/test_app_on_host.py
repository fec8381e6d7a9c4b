"""An app instance on a host (scenarios/kinds/app/on_host.py), its channel faked by a local ``sh`` running the very
command line SSH would run: the environment failsafe gives, stdout reaching the log, a freeze and a thaw, a kill's exit
code as a local child's, a stop that ends the channel. The real SSH path is in tests/hosts/test_kafka_on_hosts.py."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import psutil
import pytest

from failsafe.scenarios.kinds.app.on_host import AppHost, RemoteApp, _signalled
from failsafe.waiting import wait_until

SCRIPT = """
import os, sys, time
print("ready", os.environ["FAILSAFE_PROCESS"], os.environ["FAILSAFE_STATE_DIR"], os.getcwd(), flush=True)
time.sleep(60)
"""


class _Channel:
    """What RemoteChild reads of a paramiko channel, over a local process."""

    def __init__(self, command: str) -> None:
        self.popen = subprocess.Popen(
            ["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.status_event = threading.Event()
        self.stderr_ended = threading.Event()  # RemoteChild's copy of stderr read its end: the pipe may be closed
        threading.Thread(target=lambda: (self.popen.wait(), self.status_event.set()), daemon=True).start()

    def recv(self, size: int) -> bytes:
        return os.read(self.popen.stdout.fileno(), size)

    def recv_stderr(self, size: int) -> bytes:
        chunk = os.read(self.popen.stderr.fileno(), size)
        if not chunk:
            self.stderr_ended.set()
        return chunk

    def sendall(self, data: bytes) -> None:
        self.popen.stdin.write(data)
        self.popen.stdin.flush()

    def exit_status_ready(self) -> bool:
        return self.popen.poll() is not None

    def recv_exit_status(self) -> int:
        return self.popen.wait()

    def close(self) -> None:
        """The channel's end: the loop beside the app kills it, as sshd's end of the channel would."""
        if not self.popen.stdin.closed:
            self.popen.stdin.close()
        self.popen.wait(10)
        self.status_event.wait(10)
        self.stderr_ended.wait(10)
        for stream in (self.popen.stdout, self.popen.stderr):
            stream.close()


@dataclass
class _Ssh:
    commands: list[str]

    @property
    def host(self):
        return type("H", (), {"name": "h3", "address": "10.0.0.3"})()

    def open_channel(self, command: str) -> _Channel:
        self.commands.append(command)
        return _Channel(command)

    def check(self, command: str, what: str) -> str:
        subprocess.run(["sh", "-c", command], check=True)
        return ""


@dataclass
class _On:
    ssh: _Ssh


@pytest.fixture
def host(tmp_path: Path) -> AppHost:
    app_dir = tmp_path / "apps" / "svc"
    app_dir.mkdir(parents=True)
    (app_dir / "svc.py").write_text(SCRIPT)
    return AppHost(_On(_Ssh([])), PurePosixPath(app_dir), {"{python}": "python3"})


def _start(host: AppHost, tmp_path: Path) -> RemoteApp:
    state = host.state_dir("run-1", "svc-0")
    env = {"FAILSAFE_PROCESS": "svc-0", "FAILSAFE_STATE_DIR": str(state)}
    app = host.spawn(["python3", "svc.py"], env, name="svc-0", log_path=tmp_path / "svc-0.log")
    log = tmp_path / "svc-0.log"
    wait_until(lambda: log.exists() and log.read_text().endswith("\n"), 20, "the app never said ready")
    return app


def _app_pid(app: RemoteApp) -> psutil.Process:
    shell = psutil.Process(app.channel.popen.pid)
    return next(p for p in shell.children(recursive=True) if "svc.py" in " ".join(p.cmdline()))


def test_an_instance_runs_in_its_apps_directory_with_failsafes_environment_and_its_stdout_in_its_log(
    host: AppHost, tmp_path: Path
) -> None:
    app = _start(host, tmp_path)
    try:
        said = (tmp_path / "svc-0.log").read_text().split()
        assert said == ["ready", "svc-0", str(host.dir / "state/run-1/svc-0"), str(host.dir)]
        assert Path(said[2]).is_dir(), "the state directory was not made before the start"
        assert app.running() and app.exit_code() is None
    finally:
        assert app.stop(5) == -signal.SIGTERM
    assert not app.running()


def test_a_freeze_stops_the_app_a_thaw_lets_it_go_on_and_a_kill_reads_as_a_local_childs(
    host: AppHost, tmp_path: Path
) -> None:
    app = _start(host, tmp_path)
    proc = _app_pid(app)
    app.signal_group(signal.SIGSTOP)
    wait_until(lambda: proc.status() == psutil.STATUS_STOPPED, 10, "SIGSTOP did not reach the app")
    app.signal_group(signal.SIGCONT)
    wait_until(lambda: proc.status() != psutil.STATUS_STOPPED, 10, "SIGCONT did not reach the app")
    assert app.kill(10) == -signal.SIGKILL
    assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    app.close()


def test_the_channels_end_kills_what_runs_there(host: AppHost, tmp_path: Path) -> None:
    app = _start(host, tmp_path)
    proc = _app_pid(app)
    app.close()
    wait_until(
        lambda: not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE, 10, "the app outlived its channel"
    )


def test_only_an_exit_by_a_signal_is_turned_into_a_negative_code() -> None:
    assert [_signalled(c) for c in (None, 0, 1, 128, 137, 143)] == [None, 0, 1, 128, -9, -15]
