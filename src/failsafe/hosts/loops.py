"""Loops failsafe holds on hosts, each over an SSH channel of its own (the network leash, cluster/net/hosts.py; the
start leash, hosts/processes.py): lines told to every loop, and at the end each channel's end awaited, what its loop
said kept in a log file. A loop acts when its channel ends, so it acts also when failsafe dies: its connection
closes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from failsafe.hosts.ssh import RemoteCommandFailed, SshHost

CLOSE_TIMEOUT_S = 30


class HostLoops:
    """One loop per (host, script); ``what`` names them in errors and in the log."""

    def __init__(self, scripts: list[tuple[SshHost, str]], log_file: Path, what: str) -> None:
        self.log_file = log_file
        self.what = what
        self._channels: list[tuple[SshHost, Any]] = []
        try:
            for ssh, script in scripts:
                self._channels.append((ssh, ssh.open_channel(script)))
        except BaseException:
            self.close()
            raise

    def tell(self, line: str) -> None:
        """``line`` to every loop (all of them, whatever failed), then one error naming the first that failed."""
        lost = []
        for ssh, channel in self._channels:
            try:
                channel.sendall(f"{line}\n".encode())
            except OSError as e:
                lost.append(f"host {ssh.host}: the {self.what}'s channel was lost ({e})")
        if lost:
            raise RemoteCommandFailed(lost[0])

    def close(self) -> None:
        """Each loop's channel ended from here, what the loop said then kept in the log file (a timeout or a lost
        connection is said too: the loop there acts all the same)."""
        for ssh, channel in self._channels:
            out = b""
            try:
                channel.shutdown_write()
                channel.settimeout(CLOSE_TIMEOUT_S)
                while chunk := channel.recv(4096):
                    out += chunk
            except OSError as e:
                out += f"{self.what} channel: {e}\n".encode()
            finally:
                channel.close()
            if out.strip():
                self.log_file.parent.mkdir(parents=True, exist_ok=True)
                with self.log_file.open("a") as log:
                    log.write(f"{ssh.host.name}: {out.decode(errors='replace')}")
        self._channels = []
