"""An app's instances on a host of the cluster's inventory (``[[apps]] host``), over SSH, like the Java clients a lab
scenario places on hosts (workloads/verifiable/on_host.py, docs/hosts.md).

On the host, the app has a directory of its own, ``DIR_ON_HOST/clusters/TAG/clients/apps/NAME``: its ``files`` are
copied there (only what changed), keeping the paths they have here, so a command naming ``examples/apps/x.py`` names
the copy; every instance runs in it. What a command's words stand for there: ``{python}`` is the host's ``python3``,
``{java}`` the host's Java, ``{streams_classpath}`` Kafka Streams' jars of the cluster's version, copied under the
clients' directory. An instance's environment there is the host login's, with failsafe's FAILSAFE_* variables and the
app's ``env``; its FAILSAFE_STATE_DIR is ``state/RUN/NAME-INDEX`` in the app's directory.

Each instance runs over one SSH channel (hosts/remote_child.py): its stdout and stderr are copied into its log here
(logs/PROCESS.log), signals travel to a loop beside it, and when the channel ends (the run is over, or failsafe died,
or the connection was lost) that loop kills it. A signal goes to the process failsafe started there, not to its
process group: a command that starts processes of its own should ``exec`` the last one. An exit by a signal is
recorded as here (-9, not the shell's 137).
"""

from __future__ import annotations

import signal
from pathlib import Path, PurePosixPath
from typing import Any

from failsafe.hosts import sync
from failsafe.hosts.remote_child import RemoteChild
from failsafe.hosts.ssh import quote
from failsafe.workloads.verifiable.on_host import OnHost

REMOTE_PYTHON = "python3"
# A POSIX shell's exit status of a process a signal ended: 128 + the signal's number.
SIGNALLED = 128


class RemoteApp(RemoteChild):
    """An app instance on a host, with the interface of supervisor.Child that the app's workload uses."""

    def exit_code(self) -> int | None:
        return _signalled(super().exit_code())

    def kill(self, timeout_s: float = 10.0) -> int | None:
        """SIGKILL; the channel is closed after (its end would kill the app anyway)."""
        super().kill(timeout_s)
        code = self.exit_code()
        self.close()
        return code

    def signal_group(self, sig: signal.Signals) -> None:
        """A freeze or a thaw: to the process failsafe started there (see the module's docstring)."""
        self.signal(sig)

    def stop(self, timeout_s: float) -> int | None:
        """SIGTERM, then SIGKILL if it still runs after ``timeout_s``; the channel is closed after."""
        if self.running():
            self.signal(signal.SIGTERM)
            self.channel.status_event.wait(timeout_s)
        if self.running():
            self.kill()
        code = self.exit_code()
        self.close()
        return code


class AppHost:
    """One app's side of a host: its directory there, its files, and the words of its commands."""

    def __init__(self, on: OnHost, app_dir: PurePosixPath, words: dict[str, str]) -> None:
        self.on = on
        self.dir = app_dir
        self.words = words

    @classmethod
    def open(
        cls, where: dict[str, Any], app: str, files: tuple[str, ...], kafka_version: str, streams: bool
    ) -> AppHost:
        """Connects, copies the app's files (and Kafka Streams' jars if its command asks for them)."""
        on = OnHost.open(where)
        app_dir = on.dir / "apps" / app
        for name in files:
            local = Path(name)
            if local.is_dir():
                sync.sync_tree(on.ssh, local, app_dir / name)
            else:
                sync.sync_file(on.ssh, local, app_dir / name)
        on.ssh.check(f"mkdir -p {quote(app_dir)}", what=f"making {app_dir}")
        words = {"{python}": REMOTE_PYTHON, "{java}": on.command[0]}
        if streams:
            from failsafe.jvm.streams import resolve_streams

            jars = on.dir / f"streams-{kafka_version}"
            sync.sync_tree(on.ssh, resolve_streams(kafka_version).libs_dir, jars)
            words["{streams_classpath}"] = f"{jars}/*"
        return cls(on, app_dir, words)

    @property
    def name(self) -> str:
        return self.on.ssh.host.name

    @property
    def address(self) -> str:
        return self.on.ssh.host.address

    def state_dir(self, run: str, process: str) -> PurePosixPath:
        return self.dir / "state" / run / process

    def spawn(self, command: list[str], env: dict[str, str], *, name: str, log_path: Path) -> RemoteApp:
        """One instance: ``command`` in the app's directory, with ``env`` added to the login's, its stdout into its
        stderr (both reach ``log_path``)."""
        state = env.get("FAILSAFE_STATE_DIR")
        if state:
            self.on.ssh.check(f"mkdir -p {quote(state)}", what=f"making {state}")
        assigned = [f"{k}={v}" for k, v in env.items()]
        argv = ["sh", "-c", 'exec "$@" >&2', "sh", "env", *assigned, *command]
        return RemoteApp(self.on.ssh, argv, cwd=self.dir, name=name, log_path=log_path)

    def close(self) -> None:
        self.on.close()


def _signalled(code: int | None) -> int | None:
    return -(code - SIGNALLED) if code is not None and code > SIGNALLED else code
