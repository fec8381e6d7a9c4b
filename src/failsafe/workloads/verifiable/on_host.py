"""A Kafka verifiable client run on a host of the cluster's inventory (a lab scenario's ``host``), over SSH.

The worker stays here and reads the tool's JSON lines over the channel (hosts/remote_child.py). The
tool stamps its events with the host's clock, in milliseconds. The worker measures that clock against
its own once, before it starts the tool (hosts/probe.py, Cristian's algorithm). It takes the offset off
every event's time and records the offset and its error bound in its client-config op, so the checkers
know how far a time of this client may be from failsafe's clock (history/model.py ``clock_error_ns``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from failsafe.hosts import inventory, probe
from failsafe.hosts.remote_child import RemoteChild
from failsafe.hosts.ssh import SshHost


@dataclass
class OnHost:
    ssh: SshHost
    command: list[str]  # the JVM up to its main class (cluster/nodes/hosts.py client_host)
    dir: PurePosixPath
    offset_ns: int  # the host's clock less failsafe's
    error_ns: int  # the offset's error bound, and the tool's timestamps' resolution

    @classmethod
    def open(cls, where: dict[str, Any]) -> OnHost:
        fields = {k: v for k, v in where["host"].items() if v is not None}
        host = inventory.from_mapping({"host": [fields]}, "the worker's spec").hosts[0]
        ssh = SshHost(host)
        offset_s, error_s, _ = probe.clock_offset(ssh)
        return cls(
            ssh, list(where["command"]), PurePosixPath(where["dir"]), round(offset_s * 1e9), tool_time_error_ns(error_s)
        )

    def config_fields(self) -> dict[str, Any]:
        """What the client-config op records of where the client ran and of its clock."""
        return {"host": self.ssh.host.name, "clock_offset_ns": self.offset_ns, "clock_error_ns": self.error_ns}

    def local_time_ns(self, host_ms: int) -> int:
        """A time the tool stamped on the host (ms), on failsafe's clock."""
        return host_ms * 1_000_000 - self.offset_ns

    def start(
        self, main: str, args: list[str], config_text: str, config_name: str, *, name: str, log_path: Path | None
    ) -> RemoteChild:
        """Write the client's config file there, then start the tool; ``args`` name the config as CONFIG."""
        config = self.dir / config_name
        self.ssh.write_text(str(config), config_text)
        argv = [*self.command, main, *[str(config) if a == CONFIG else a for a in args]]
        return RemoteChild(self.ssh, argv, cwd=self.dir, name=name, log_path=log_path)

    def close(self) -> None:
        self.ssh.close()


TIMESTAMP_RESOLUTION_NS = 1_000_000


def tool_time_error_ns(offset_error_s: float) -> int:
    """How far a time the tool stamped on the host may be from failsafe's clock once the offset is taken off: the
    offset's error bound, plus the tool's resolution (its times are whole milliseconds, floored: an event may be up to 1
    ms later)."""
    return round(offset_error_s * 1e9) + TIMESTAMP_RESOLUTION_NS


# Where a tool's arguments name its config file, which is written on the host.
CONFIG = "{config}"
