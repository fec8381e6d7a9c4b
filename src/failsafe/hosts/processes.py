"""Processes failsafe starts on a host: known by pid, start time and boot, stopped by pid, never by name.

A node is started in a session of its own (``setsid``), its output appended to its log; the start
writes ``pid start_ticks boot_id`` to its pid file on the host (start_ticks: field 22 of
/proc/PID/stat, the clock ticks after boot it started at). Every later signal checks all three on the
host in the same command that sends it, so a recycled pid, or a pid file left from before a reboot
(power loss), is never signalled: the process is then down.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from failsafe.hosts.loops import HostLoops
from failsafe.hosts.ssh import RemoteCommandFailed, SshHost, quote
from failsafe.supervisor import DOWN, PAUSED, UP, ProcessState

POLL_S = 0.05

# Field 22 of /proc/PID/stat, read after the command name (which may hold spaces and parentheses).
_START = "sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f20"
_STATE = "sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f1"
_BOOT = "cat /proc/sys/kernel/random/boot_id"
# Is $pid the process of the pid file ($start, $boot)? The test every command below makes first.
_SAME = f'[ -n "$pid" ] && [ "$({_START})" = "$start" ] && [ "$({_BOOT})" = "$boot" ]'


@dataclass(frozen=True)
class RemoteProcess:
    pid: int
    start_ticks: int
    boot_id: str

    def line(self) -> str:
        return f"{self.pid} {self.start_ticks} {self.boot_id}\n"

    @classmethod
    def parse(cls, text: str) -> RemoteProcess | None:
        try:
            pid, start, boot = text.split()
            return cls(int(pid), int(start), boot)
        except ValueError:
            return None

    def _vars(self) -> str:
        return f"pid={self.pid}; start={self.start_ticks}; boot={quote(self.boot_id)}"


def start(
    ssh: SshHost,
    argv: list[str],
    *,
    cwd: PurePosixPath,
    log: PurePosixPath,
    pidfile: PurePosixPath,
    env: dict[str, str] | None = None,
) -> RemoteProcess:
    """Start ``argv`` on the host in a session of its own; returns once its pid file is written (not once it is
    ready)."""
    exports = "".join(f"export {k}={quote(v)}; " for k, v in (env or {}).items())
    script = (
        f"mkdir -p {quote(log.parent)} {quote(pidfile.parent)} && cd {quote(cwd)} || exit 1; {exports}"
        f"setsid {quote(*argv)} >> {quote(log)} 2>&1 < /dev/null & pid=$!; "
        f'start=$({_START}); boot=$({_BOOT}); [ -n "$start" ] || {{ echo "exited at once: $(tail -n 3 '
        f'{quote(log)})" >&2; exit 1; }}; '
        f'echo "$pid $start $boot" > {quote(pidfile)}.tmp && mv {quote(pidfile)}.tmp {quote(pidfile)} && cat '
        f"{quote(pidfile)}"
    )
    out = ssh.check(script, what=f"starting {argv[0]}")
    process = RemoteProcess.parse(out)
    if process is None:
        raise RemoteCommandFailed(f"host {ssh.host}: starting {argv[0]} wrote {out.strip()!r}, not 'pid start boot'")
    return process


def read(ssh: SshHost, pidfile: PurePosixPath) -> RemoteProcess | None:
    """The process a pid file on the host names (None: no pid file); a command that failed is an error, never 'none'."""
    return RemoteProcess.parse(
        _checked(ssh, f"[ -e {quote(pidfile)} ] || exit 0; cat {quote(pidfile)}", "reading a pid file")
    )


def _checked(ssh: SshHost, command: str, what: str) -> str:
    result = ssh.run(command)
    if not result.ok():
        raise RemoteCommandFailed(f"host {ssh.host}: {what} failed: {result.why()}")
    return result.stdout


def state(ssh: SshHost, process: RemoteProcess | None) -> ProcessState:
    """UP, PAUSED (stopped by a signal) or DOWN (gone, a zombie, another process under its pid, or a boot ago)."""
    if process is None:
        return DOWN
    return _state(
        _checked(ssh, f"{process._vars()}; if {_SAME}; then {_STATE}; fi", "reading a process's state").strip()
    )


def state_of(ssh: SshHost, pidfile: PurePosixPath) -> ProcessState:
    """The state of the process a pid file on the host names, in one command (DOWN when there is no pid file)."""
    script = (
        f"[ -e {quote(pidfile)} ] || exit 0; read -r pid start boot < {quote(pidfile)}; "
        f"if {_SAME}; then {_STATE}; fi; true"
    )
    return _state(_checked(ssh, script, "reading a node's state").strip())


def states(ssh: SshHost, processes: dict[str, RemoteProcess | None]) -> dict[str, ProcessState]:
    """The state of several processes of one host in one command."""
    known = {name: p for name, p in processes.items() if p is not None}
    result = {name: DOWN for name in processes}
    if not known:
        return result
    script = "; ".join(f"{p._vars()}; if {_SAME}; then echo {quote(name)} $({_STATE}); fi" for name, p in known.items())
    for line in _checked(ssh, script + "; true", "reading processes' states").splitlines():
        name, _, letter = line.rpartition(" ")
        if name in result:
            result[name] = _state(letter)
    return result


def _state(letter: str) -> ProcessState:
    if not letter or letter in ("Z", "X", "x"):
        return DOWN
    return PAUSED if letter in ("T", "t") else UP


def signal_group(ssh: SshHost, process: RemoteProcess, sig: signal.Signals) -> bool:
    """Send ``sig`` to the process's group; False when it was already gone (nothing was signalled)."""
    kill = f"kill -{sig.name.removeprefix('SIG')} -$pid"  # dash's kill takes no '--'
    out = _checked(
        ssh,
        f'{process._vars()}; if {_SAME} && [ "$({_STATE})" != Z ]; then {kill} && echo sent; fi; true',
        f"sending {sig.name}",
    )
    return "sent" in out


def wait_state(ssh: SshHost, process: RemoteProcess, wanted: ProcessState, timeout_s: float) -> bool:
    """Wait on the host (one command) until the process is ``wanted``; False if it was not within ``timeout_s``."""
    test = {
        DOWN: f'! {{ {_SAME}; }} || [ "$({_STATE})" = Z ]',
        PAUSED: f'{_SAME} && [ "$({_STATE})" = T ]',
        UP: f'{_SAME} && [ "$({_STATE})" != T ]',
    }[wanted]
    # A poll on the host of an observable condition, bounded by timeout_s: no sleep to synchronise.
    script = (
        f"{process._vars()}; end=$(( $(date +%s) + {max(1, round(timeout_s + 0.5))} )); "
        f"while ! {{ {test}; }}; do [ $(date +%s) -ge $end ] && exit 1; sleep {POLL_S}; done"
    )
    return ssh.run(script, timeout_s=timeout_s + 10).ok()


def stop(ssh: SshHost, process: RemoteProcess, sig: signal.Signals, timeout_s: float) -> None:
    """``sig`` to the group (a paused process is continued first so it can act on SIGTERM), then SIGKILL if it has
    not exited within ``timeout_s``; raises only if even SIGKILL did not end it."""
    if sig != signal.SIGKILL and state(ssh, process) == PAUSED:
        signal_group(ssh, process, signal.SIGCONT)
    if not signal_group(ssh, process, sig):
        return
    if wait_state(ssh, process, DOWN, timeout_s):
        return
    signal_group(ssh, process, signal.SIGKILL)
    if not wait_state(ssh, process, DOWN, timeout_s):
        raise RemoteCommandFailed(f"host {ssh.host}: process {process.pid} still runs {timeout_s:g} s after SIGKILL")


# On a host, until told "done" (the nodes are ready) or "abort" (the start failed, and failsafe stopped them itself):
# when its channel ends first (failsafe died while starting), each process of the pid files that is still the one its
# file names is killed with its group. A start command failsafe sent just before it died may still be writing its pid
# file, so the loop watches them for START_LEASH_WATCH_S: a poll of the files, bounded.
START_LEASH_WATCH_S = 10
_START_LEASH = (
    'scan() { for f in {pidfiles}; do [ -e "$f" ] || continue; read -r pid start boot < "$f"; '
    f'if {_SAME} && [ "$start" -le "${{latest:-$start}}" ]; then kill -KILL -$pid 2>/dev/null && '
    'echo "start leash: failsafe ended while $f was starting; killed its group ($pid)"; fi; '
    "done; }; "
    'while IFS= read -r line; do [ "$line" = done ] && exit 0; [ "$line" = abort ] && { scan; exit 0; }; done; '
    # From the end of the channel on, only a process started by then (and 2 s for a start command in flight) is
    # failsafe's dead start's: a new 'up' within the watch starts nodes under the same pid files, and those are not
    # touched.
    f"hz=$(getconf CLK_TCK); latest=$(( ($(cut -d. -f1 /proc/uptime) + 2) * hz )); "
    f'end=$(( $(date +%s) + {START_LEASH_WATCH_S} )); while [ "$(date +%s)" -lt "$end" ]; do scan; sleep '
    f"{POLL_S * 4}; done; scan"
)


class StartLeash(HostLoops):
    """Around a start on hosts: a loop on each host that kills the processes of its pid files if failsafe dies before
    ``release`` (its SSH connection then closes, and the loop reads end of file)."""

    def __init__(self, pidfiles: dict[SshHost, list[PurePosixPath]], log_file: Path) -> None:
        self._released = False
        super().__init__(
            [(ssh, _START_LEASH.replace("{pidfiles}", quote(*files))) for ssh, files in pidfiles.items()],
            log_file,
            "start leash",
        )

    def __enter__(self) -> StartLeash:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def release(self) -> None:
        """The nodes are ready: the loops end without killing anything."""
        self.tell("done")
        self._released = True

    def close(self) -> None:
        """Ends each loop (killing what it holds unless released) and keeps what it said in the log file."""
        if not self._released:
            try:
                self.tell("abort")  # the start failed and stopped its nodes: one look, not the watch of a crash
            except RemoteCommandFailed:
                pass  # that loop reads the end of its channel and watches its pid files
        super().close()
