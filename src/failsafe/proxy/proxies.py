"""Starting, asking and stopping protocol proxies, and finding the ones a crashed owner left.

A proxy is known by its pidfile, ``STATE_DIR/proxies/NAME.pid`` (pid and creation time, written by the
supervisor as it starts the daemon), and answers on a control socket whose name is derived from the
state directory and NAME, so a later command (``down``, ``clean``, another terminal) finds and stops every
proxy an owner started, after a SIGKILL of that owner too. Proxies are never found by process name.
"""

from __future__ import annotations

import hashlib
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from failsafe.errors import ProvisionError, UserError
from failsafe.supervisor import DOWN, TrackedProcess, control, read_pidfile, spawn
from failsafe.waiting import wait_until

STATE_SUBDIR = "proxies"
DEFAULT_START_TIMEOUT_S = 10.0
DEFAULT_STOP_TIMEOUT_S = 10.0


class ProxyError(UserError):
    """A proxy that does not answer, or refused what it was asked."""


def pidfile(state_dir: Path, name: str) -> Path:
    return state_dir / STATE_SUBDIR / f"{name}.pid"


def control_name(state_dir: Path, name: str) -> str:
    digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:16]
    return f"failsafe-proxy-{digest}-{name}"


class ProxyHandle:
    """One running proxy, as its owner asks it: add a rule, clear it (its counts come back), status."""

    def __init__(self, state_dir: Path, name: str) -> None:
        self.state_dir = state_dir
        self.name = name

    def status(self) -> dict[str, Any]:
        return self._ask({"op": "status"})

    def add(self, rule: dict[str, Any]) -> dict[str, Any]:
        return self._ask({"op": "add", **rule})

    def clear(self, rule_id: str) -> dict[str, Any] | None:
        """End the rule; what it took (rules.py Rule.counts), or None when it was not in force."""
        return self._ask({"op": "clear", "rule_id": rule_id}).get("cleared")

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = control.request(control_name(self.state_dir, self.name), message)
        except OSError as e:
            raise ProxyError(f"the protocol proxy of {self.name} does not answer ({e}): see its log") from e
        if not answer.get("ok"):
            raise ProxyError(f"the protocol proxy of {self.name} refused {message['op']}: {answer.get('error')}")
        return {k: v for k, v in answer.items() if k != "ok"}


def tracked(state_dir: Path, name: str) -> TrackedProcess | None:
    found = read_pidfile(pidfile(state_dir, name))
    return found if found is not None and found.state() != DOWN else None


def running(state_dir: Path, name: str) -> ProxyHandle | None:
    return ProxyHandle(state_dir, name) if tracked(state_dir, name) is not None else None


def start(
    state_dir: Path,
    name: str,
    listen: tuple[str, int],
    broker: tuple[str, int],
    *,
    log_path: Path,
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
) -> ProxyHandle:
    """Start NAME's proxy listening at ``listen`` for the broker at ``broker`` unless it runs; returns once it accepts
    connections and answers its control socket. The proxy outlives this command, as the nodes do."""
    if tracked(state_dir, name) is not None:
        return ProxyHandle(state_dir, name)
    path = pidfile(state_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "failsafe.proxy.daemon",
        f"{listen[0]}:{listen[1]}",
        f"{broker[0]}:{broker[1]}",
        control_name(state_dir, name),
    ]
    child = spawn(cmd, name=f"protocol proxy {name}", log_path=log_path, pidfile=path, dies_with_parent=False)
    handle = ProxyHandle(state_dir, name)

    def serving() -> bool:
        if not child.running():
            path.unlink(missing_ok=True)
            raise ProvisionError(
                f"the protocol proxy of {name} exited with {child.exit_code()}: "
                f"{child.tail() or 'see ' + str(log_path)}"
            )
        with socket.create_connection(listen, timeout=1.0):
            pass
        handle.status()
        return True

    try:
        wait_until(
            serving,
            timeout_s,
            f"the protocol proxy of {name} did not serve at {listen[0]}:{listen[1]} within {timeout_s:g}s",
            retry_on=(OSError, ProxyError),
        )
    except BaseException:
        stop(state_dir, name)
        raise
    return handle


def stop(state_dir: Path, name: str, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
    found = read_pidfile(pidfile(state_dir, name))
    if found is not None:
        found.stop(timeout_s, signal.SIGTERM)
    pidfile(state_dir, name).unlink(missing_ok=True)


def names(state_dir: Path) -> list[str]:
    """Every proxy with a pidfile under ``state_dir``, running or not."""
    return sorted(p.stem for p in (state_dir / STATE_SUBDIR).glob("*.pid"))


def stop_all(state_dir: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[str]:
    """Stop every proxy tracked under ``state_dir`` (after ``down``, ``clean`` or a crash of their owner); returns their
    names."""
    stopped = names(state_dir)
    for name in stopped:
        stop(state_dir, name, timeout_s)
    return stopped
