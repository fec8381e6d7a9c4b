"""Commands and files on a host over SSH (paramiko): one connection per host, reused, with timeouts.

Every failure is one line naming the host and what to do: ``HostUnreachable`` (a UserError, exit 2)
when failsafe cannot connect or log in, ``RemoteCommandFailed`` (exit 5) when a command it needs
fails or hangs there. Host keys are checked against the inventory's known_hosts file; a key never
seen is refused unless the host says ``new_host_keys = "accept"`` (then it is remembered, as
OpenSSH's ``StrictHostKeyChecking=accept-new`` does); a changed key is always refused.
"""

from __future__ import annotations

import errno
import logging
import select
import shlex
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import paramiko

from failsafe.errors import FailsafeError, UserError
from failsafe.hosts.inventory import Host
from failsafe.hosts.shell import LOOP, Shell, ShellLost

# paramiko logs a connection's failure with its traceback; failsafe says it in one line instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

CONNECT_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 60.0
KEEPALIVE_S = 5
# Shells kept open per host (hosts/shell.py): enough for the run's threads that use a host at once, well within sshd's
# default MaxSessions of 10 with the leash's and SFTP's sessions. A command finding them all busy opens a session of its
# own.
SHELLS = 4
_READ_CHUNK = 1 << 16


class HostUnreachable(UserError):
    """failsafe cannot connect or log in to a host of the inventory."""


class RemoteCommandFailed(FailsafeError):
    """A command failsafe needs failed, or did not end in time, on a host."""


@dataclass(frozen=True)
class Remote:
    """What a command did on a host."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def ok(self) -> bool:
        return self.returncode == 0

    def why(self) -> str:
        """Its last line of stderr (or of stdout), for a one-line error."""
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
            if lines:
                return lines[-1]
        return f"exit status {self.returncode}"


class _AcceptAndRemember(paramiko.MissingHostKeyPolicy):
    """accept-new: a host key never seen is added to the known_hosts file and saved."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        client.save_host_keys(str(self.path))


class SshHost:
    """One host's SSH connection, opened at first use and reused by every command (thread-safe)."""

    def __init__(self, host: Host, *, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.host = host
        self.connect_timeout_s = connect_timeout_s
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()
        self._idle: list[Shell] = []
        self._shell_set: set[Shell] = set()  # this connection's shells, idle or running a command
        self._opening = 0  # shells being opened now

    # -- the connection ---------------------------------------------------------------------------
    def known_hosts(self) -> Path:
        return self.host.known_hosts or Path("~/.ssh/known_hosts").expanduser()

    def connect(self) -> paramiko.SSHClient:
        with self._lock:
            if self._client is not None and self._alive(self._client):
                return self._client
            self._close_quietly()
            self._client = self._open()
            return self._client

    @staticmethod
    def _alive(client: paramiko.SSHClient) -> bool:
        transport = client.get_transport()
        return transport is not None and transport.is_active()

    def _open(self) -> paramiko.SSHClient:
        h = self.host
        client = paramiko.SSHClient()
        known = self.known_hosts()
        if known.exists():
            client.load_host_keys(str(known))
        client.set_missing_host_key_policy(
            _AcceptAndRemember(known) if h.new_host_keys == "accept" else paramiko.RejectPolicy()
        )
        try:
            self._connect(client, known)
        except BaseException:
            client.close()  # a half-open connection would keep the server's side of it waiting
            raise
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(KEEPALIVE_S)
        return client

    def _connect(self, client: paramiko.SSHClient, known: Path) -> None:
        h = self.host
        try:
            client.connect(
                h.address,
                port=h.port,
                username=h.user,
                key_filename=str(h.key) if h.key else None,
                timeout=self.connect_timeout_s,
                banner_timeout=self.connect_timeout_s,
                auth_timeout=self.connect_timeout_s,
                allow_agent=h.key is None,
                look_for_keys=h.key is None,
            )
        except paramiko.BadHostKeyException as e:
            raise HostUnreachable(
                f"host {h}: its key does not match the one in {known}: if the host was rebuilt, remove "
                f"its line there (ssh-keygen -R {h.address} -f {known})"
            ) from e
        except paramiko.AuthenticationException as e:
            key = f"key {h.key}" if h.key else "the SSH agent's and ~/.ssh's keys"
            raise HostUnreachable(f"host {h}: user {h.user!r} cannot log in with {key} ({e})") from e
        except paramiko.SSHException as e:
            if "not found in known_hosts" in str(e):
                raise HostUnreachable(
                    f"host {h}: its key is not in {known}: add it (ssh-keyscan -p {h.port} {h.address} >> {known}) "
                    'or set new_host_keys = "accept" for it in hosts.toml'
                ) from e
            if "protocol banner" in str(e):
                raise HostUnreachable(
                    f"host {h}: what answered on port {h.port} closed the connection without speaking SSH"
                ) from e
            raise HostUnreachable(f"host {h}: SSH failed: {e}") from e
        except paramiko.ssh_exception.NoValidConnectionsError as e:
            if all(err.errno == errno.ECONNREFUSED for err in e.errors.values()):
                raise HostUnreachable(
                    f"host {h}: connection refused: is sshd running there and listening on port {h.port}?"
                ) from e
            reasons = "; ".join(sorted({err.strerror or str(err) for err in e.errors.values()}))
            raise HostUnreachable(f"host {h}: cannot connect ({reasons})") from e
        except TimeoutError as e:
            raise HostUnreachable(f"host {h}: no SSH answer within {self.connect_timeout_s:g} s") from e
        except socket.gaierror as e:
            raise HostUnreachable(f"host {h}: cannot resolve {h.address!r} ({e.strerror})") from e
        except OSError as e:
            raise HostUnreachable(f"host {h}: cannot connect ({e.strerror or e})") from e

    def close(self) -> None:
        with self._lock:
            self._close_quietly()

    def _close_quietly(self) -> None:
        for shell in self._idle:
            shell.close()
        self._idle.clear()
        self._shell_set.clear()  # a shell still running a command is closed when it is given back or dropped
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- commands ---------------------------------------------------------------------------------
    def open_channel(self, command: str) -> paramiko.Channel:
        """A channel running ``command`` on the host, for a conversation the caller holds (close it when done).

        Commands are POSIX shell, run by ``sh`` whatever the user's login shell is."""
        client = self.connect()
        transport = client.get_transport()
        try:
            if transport is None:
                raise paramiko.SSHException("the connection closed")
            channel = transport.open_session(timeout=self.connect_timeout_s)
            channel.exec_command(f"exec sh -c {shlex.quote(command)}")
        except paramiko.ChannelException as e:
            # The connection is fine; the host refused one more session (sshd's MaxSessions): the others must go on.
            raise RemoteCommandFailed(
                f"host {self.host}: sshd refused one more session ({e}): raise MaxSessions there"
            ) from e
        except (paramiko.SSHException, OSError, EOFError) as e:
            if transport is None or not transport.is_active():
                self.close()
            raise RemoteCommandFailed(f"host {self.host}: cannot open a channel ({e}): the connection was lost") from e
        return channel

    def run(self, command: str, *, timeout_s: float = COMMAND_TIMEOUT_S, stdin: bytes | None = None) -> Remote:
        """Run ``command`` (a shell line) on the host and wait for it; raises only when it could not run or end.

        In one of the host's open shells when one is free (hosts/shell.py); a command with ``stdin`` in a session of its
        own."""
        started = time.monotonic()
        shell = self._take_shell() if stdin is None else None
        if shell is None:
            return self._run_in_session(command, timeout_s, stdin, started)
        try:
            code, out, err = shell.run(command, started + timeout_s)
        except ShellLost as e:
            self._drop_shell(shell)
            raise RemoteCommandFailed(f"host {self.host}: {_short(command)!r}: {e}") from e
        except BaseException:
            self._drop_shell(shell)  # interrupted mid-answer: the shell's stream is no longer in step
            raise
        self._give_back(shell)
        return Remote(code, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - started)

    def _take_shell(self) -> Shell | None:
        """An idle shell, a new one if fewer than SHELLS are open, else None (the caller opens a session of its own)."""
        with self._lock:
            while self._idle:
                shell = self._idle.pop()
                if shell.usable():
                    return shell
                self._shell_set.discard(shell)
                shell.close()
            if len(self._shell_set) + self._opening >= SHELLS:
                return None
            self._opening += 1
        shell = None
        try:
            shell = Shell(self.open_channel(LOOP))
        finally:
            with self._lock:
                self._opening -= 1
                if shell is not None:
                    self._shell_set.add(shell)
        return shell

    def _give_back(self, shell: Shell) -> None:
        with self._lock:
            if shell in self._shell_set and shell.usable():
                self._idle.append(shell)
                return
            self._shell_set.discard(shell)  # a shell of a connection closed since, or one whose session ended
        shell.close()

    def _drop_shell(self, shell: Shell) -> None:
        shell.close()
        with self._lock:
            self._shell_set.discard(shell)

    def _run_in_session(self, command: str, timeout_s: float, stdin: bytes | None, started: float) -> Remote:
        with self.open_channel(command) as channel:
            if stdin is not None:
                channel.sendall(stdin)
            channel.shutdown_write()
            out, err = self._read_to_end(channel, started + timeout_s, command)
            code = channel.recv_exit_status()
        return Remote(code, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - started)

    def _read_to_end(self, channel: paramiko.Channel, deadline: float, command: str) -> tuple[bytes, bytes]:
        out, err = bytearray(), bytearray()
        while True:
            while channel.recv_ready():
                out += channel.recv(_READ_CHUNK)
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(_READ_CHUNK)
            if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                return bytes(out), bytes(err)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                channel.close()
                raise RemoteCommandFailed(f"host {self.host}: {_short(command)!r} did not end within the timeout")
            if channel.eof_received and not channel.recv_ready():
                # Both streams ended: only the exit status is still to come.
                channel.status_event.wait(remaining)
            else:
                select.select([channel], [], [], remaining)

    def check(
        self, command: str, *, what: str, timeout_s: float = COMMAND_TIMEOUT_S, stdin: bytes | None = None
    ) -> str:
        """Run ``command`` and return its stdout; a non-zero exit is a RemoteCommandFailed saying ``what`` failed."""
        result = self.run(command, timeout_s=timeout_s, stdin=stdin)
        if not result.ok():
            raise RemoteCommandFailed(f"host {self.host}: {what} failed: {result.why()}")
        return result.stdout

    # -- files ------------------------------------------------------------------------------------
    def sftp(self) -> paramiko.SFTPClient:
        try:
            return self.connect().open_sftp()
        except (paramiko.SSHException, OSError, EOFError) as e:
            raise RemoteCommandFailed(
                f"host {self.host}: SFTP is not available ({e}): enable sshd's sftp subsystem"
            ) from e

    def write_text(self, path: str, text: str, mode: int = 0o644) -> None:
        """Write a file on the host atomically (a temporary name, then a rename)."""
        tmp = f"{path}.failsafe-tmp"
        with self.sftp() as sftp:
            with sftp.open(tmp, "w") as f:
                f.write(text.encode())
            sftp.chmod(tmp, mode)
            sftp.posix_rename(tmp, path)

    def read_text(self, path: str, offset: int = 0) -> str:
        """A file on the host from byte ``offset`` on ('' when it does not exist)."""
        return self.read_bytes(path, offset).decode(errors="replace")

    def read_bytes(self, path: str, offset: int = 0) -> bytes:
        """A file on the host from byte ``offset`` on (b'' when it does not exist)."""
        with self.sftp() as sftp:
            try:
                with sftp.open(path, "rb") as f:
                    f.seek(offset)
                    return f.read()
            except FileNotFoundError:
                return b""


def quote(*parts: str | Path) -> str:
    return " ".join(shlex.quote(str(p)) for p in parts)


def _short(command: str, limit: int = 80) -> str:
    return command if len(command) <= limit else command[: limit - 3] + "..."
