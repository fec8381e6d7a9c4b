"""Mounting, powering off and unmounting disk layers, and finding the ones a crashed owner left.

A layer is known by a state file, ``STATE_DIR/disk-layers/NAME.json`` (backing directory, mountpoint,
control socket name, daemon pid and creation time), written before the daemon starts and updated
with its pid once it runs, so that ``unmount_all(STATE_DIR)`` finds every layer an owner started even
after a SIGKILL of that owner. Layers are never found by process name, and a daemon is only signalled
when its pid still names the process that was started (pid and creation time).
"""

from __future__ import annotations

import ctypes.util
import json
import os
import re
import shutil
import signal
import sys
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from failsafe.disk.injection import Injection, Kind, Ops, check_kind
from failsafe.disk.names import STASH
from failsafe.errors import DiskLayerError, ProvisionError
from failsafe.supervisor import Child, TrackedProcess, control, run_to_end, spawn
from failsafe.waiting import WaitTimeout, wait_until

STATE_SUBDIR = "disk-layers"
FSTYPE = "fuse.failsafe-disk"
DEFAULT_MOUNT_TIMEOUT_S = 15.0
DEFAULT_UNMOUNT_TIMEOUT_S = 15.0
FUSE_HINT = "install libfuse 3 (Debian: apt-get install fuse3) and run as root with /dev/fuse present"


@dataclass(frozen=True)
class LayerState:
    name: str
    backing: str
    mountpoint: str
    control: str
    pid: int = 0
    create_time: float = 0.0

    def daemon(self) -> TrackedProcess | None:
        return TrackedProcess(self.pid, self.create_time) if self.pid else None


def state_path(state_dir: Path, name: str) -> Path:
    return state_dir / STATE_SUBDIR / f"{name}.json"


def _write_state(state_dir: Path, state: LayerState) -> None:
    path = state_path(state_dir, state.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state)) + "\n")
    tmp.replace(path)


def find_layers(state_dir: Path) -> list[LayerState]:
    """Every layer with a state file under ``state_dir``, mounted or not."""
    found = []
    for path in sorted((state_dir / STATE_SUBDIR).glob("*.json")):
        try:
            found.append(LayerState(**json.loads(path.read_text())))
        except (ValueError, TypeError) as e:
            raise DiskLayerError(
                f"{path} is not a disk layer's state file ({e}): remove it once nothing is mounted there"
            ) from e
    return found


def mounted_fstype(mountpoint: Path | str) -> str | None:
    """The filesystem type mounted at ``mountpoint`` (the topmost mount), or None; read from /proc/self/mountinfo."""
    target = os.path.realpath(mountpoint)
    fstype = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            # the mount point is field 5, with octal escapes (\040 for a space); the type follows the " - " separator
            if re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]) == target:
                fstype = fields[fields.index("-") + 1]
    return fstype


def is_mounted(mountpoint: Path | str) -> bool:
    return mounted_fstype(mountpoint) == FSTYPE


def check_fuse() -> None:
    """Raise ProvisionError, naming what is missing, when this machine cannot mount a layer."""
    if not os.path.exists("/dev/fuse"):
        raise ProvisionError(f"/dev/fuse is missing, so no disk layer can be mounted: {FUSE_HINT}")
    if ctypes.util.find_library("fuse3") is None:
        raise ProvisionError(f"libfuse 3 (libfuse3.so.3) is not installed: {FUSE_HINT}")


def unavailable_reason() -> str | None:
    """Why no disk layer can be mounted on this machine, or None when one can."""
    try:
        check_fuse()
    except ProvisionError as e:
        return str(e)
    return None


class DiskLayer:
    """One mounted layer: ``mountpoint`` shows ``backing`` and forgets on ``lose_unsynced`` what was not made
    durable."""

    def __init__(self, state_dir: Path, state: LayerState, child: Child | None = None) -> None:
        self.state_dir = state_dir
        self.state = state
        self._child = child

    @property
    def mountpoint(self) -> Path:
        return Path(self.state.mountpoint)

    def status(self) -> dict[str, Any]:
        """What is unsynced now, which durability calls the layer has seen, the injection in force and the operations it
        refused since the mount, by kind and operation (docs/disk-faults.md)."""
        return self._ask({"op": "status"})

    def lose_unsynced(
        self, *, torn: bool = False, seed: int = 0, timeout_s: float = DEFAULT_UNMOUNT_TIMEOUT_S
    ) -> dict[str, Any]:
        """The power cut: every unsynced write and directory change is discarded (with ``torn``, a seeded random prefix
        of each file's last unsynced write survives), then the layer is unmounted. Processes still using files under the
        mountpoint see EIO from the cut on. Returns what was lost: files rolled back, bytes, directory changes undone,
        tears."""
        lost = self._answer({"op": "lose", "torn": torn, "seed": seed})
        self.unmount(timeout_s)
        return lost

    def inject(self, kind: Kind, *, ops: Ops = "both", glob: str | None = None, **fields: Any) -> dict[str, Any]:
        """From now on until ``clear_injection``: ``"full"``, writes that need new space and new names fail with ENOSPC
        and statfs shows no free block; ``"error"``, reads, writes and fsyncs (``ops``: ``"read"``, ``"write"`` or
        ``"both"``) of the files matching ``glob`` (every file when None) fail with EIO (docs/disk-faults.md, "Error
        injection"). ``"slow"`` and ``"corrupt"`` take their own ``fields`` (injection.py Injection: delay_ms,
        rate_mb_s; bits, seed). Every kind may be in force with the others; a second of a kind replaces the first.
        Raises ValueError, before asking the daemon, for a kind, ops, glob or field it does not take. Returns what is
        in force:
        ``{"injection": {"full": bool, "error": {"ops": ..., "glob": ...} | None, "slow": ..., "corrupt": ...}}``."""
        injection = Injection(kind, ops, glob, **fields)
        return self._answer({"op": "inject", **injection.to_message()})

    def clear_injection(self, kind: Kind | None = None) -> dict[str, Any]:
        """End the injection of ``kind`` (``"full"``, ``"error"``, ``"slow"`` or ``"corrupt"``; every one when None):
        the disk is back, has space again, is fast again or reads right. Returns ``{"cleared": [kinds that were in
        force], "injection": ...}``."""
        if kind is not None:
            check_kind(kind)
        return self._answer({"op": "clear", "kind": kind})

    def unmount(self, timeout_s: float = DEFAULT_UNMOUNT_TIMEOUT_S) -> None:
        """A clean shutdown (everything written is kept, unless a power cut came first): unmount, wait for the daemon to
        exit, remove the state file."""
        _teardown(self.state_dir, self.state, timeout_s)

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in self._ask(message).items() if k != "ok"}

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = control.request(self.state.control, message)
        except OSError as e:
            raise DiskLayerError(
                f"the disk layer at {self.mountpoint} does not answer ({e}): {self._daemon_tail()}"
            ) from e
        if not answer.get("ok"):
            raise DiskLayerError(f"the disk layer at {self.mountpoint} refused {message['op']}: {answer.get('error')}")
        return answer

    def _daemon_tail(self) -> str:
        if self._child is not None and not self._child.running():
            return f"its daemon exited with {self._child.exit_code()} ({self._child.tail() or 'no output'})"
        return "its daemon may have crashed; unmount_all() clears it"


def mount(
    backing: Path,
    mountpoint: Path,
    *,
    state_dir: Path,
    name: str | None = None,
    dies_with_parent: bool = False,
    metadata: str = "journal",
    timeout_s: float = DEFAULT_MOUNT_TIMEOUT_S,
) -> DiskLayer:
    """Mount a layer showing ``backing`` at ``mountpoint`` (both existing directories, the mountpoint empty), tracked
    under ``state_dir``. ``metadata``: when directory changes become durable, ``journal`` (at any fsync, as on ext4) or
    ``posix`` (only at an fsync of their directory; disk/fusefs.py). ``dies_with_parent``: the daemon gets SIGKILL when
    this process dies (its mount is then left stale until ``unmount_all``); without it the layer outlives this command,
    as cluster nodes do. Returns once the mount serves."""
    check_fuse()
    backing, mountpoint = backing.resolve(), mountpoint.resolve()
    for d in (backing, mountpoint):
        if not d.is_dir():
            raise DiskLayerError(f"{d} is not a directory: create it before mounting a disk layer")
    if is_mounted(mountpoint):
        raise DiskLayerError(f"a disk layer is already mounted at {mountpoint}: unmount it first (unmount_all)")
    name = name or mountpoint.name
    if state_path(state_dir, name).exists():
        raise DiskLayerError(
            f"{state_path(state_dir, name)} exists: a layer named {name} is tracked already; "
            f"unmount_all({state_dir}) clears it"
        )
    state = LayerState(name, str(backing), str(mountpoint), f"failsafe-disk-{uuid.uuid4().hex}")
    _write_state(state_dir, state)  # before the daemon starts: a crash from here on leaves a layer unmount_all can find
    log = state_path(state_dir, name).with_suffix(".log")
    cmd = [
        sys.executable,
        "-m",
        "failsafe.disk.daemon",
        state.backing,
        state.mountpoint,
        state.control,
        "--metadata",
        metadata,
    ]
    try:
        child = spawn(cmd, name=f"disk layer {name}", log_path=log, dies_with_parent=dies_with_parent)
    except BaseException:
        state_path(state_dir, name).unlink(missing_ok=True)
        raise
    state = LayerState(**{**asdict(state), "pid": child.tracked.pid, "create_time": child.tracked.create_time})
    _write_state(state_dir, state)
    layer = DiskLayer(state_dir, state, child)

    def serving() -> bool:
        if not child.running():
            raise DiskLayerError(
                f"the disk layer's daemon for {mountpoint} exited with {child.exit_code()}: "
                f"{child.tail() or 'see ' + str(log)}"
            )
        return is_mounted(mountpoint) and bool(
            control.request(state.control, {"op": "status"}, timeout_s=1.0).get("ok")
        )

    try:
        wait_until(
            serving,
            timeout_s,
            f"the disk layer at {mountpoint} was not serving after {timeout_s:g}s (log: {log})",
            retry_on=(OSError,),
        )
    except BaseException:
        _teardown(state_dir, state, DEFAULT_UNMOUNT_TIMEOUT_S)
        raise
    return layer


def _unmount_once(mountpoint: str) -> None:
    """fusermount3 -u, lazily (-z) when the mount is busy: a killed node's files are closed, a shell's cwd may not
    be."""
    tool = shutil.which("fusermount3")
    for lazy in (False, True):
        cmd = (
            [tool, "-u", *(["-z"] if lazy else []), mountpoint]
            if tool
            else ["umount", *(["-l"] if lazy else []), mountpoint]
        )
        done = run_to_end(cmd, name="unmount disk layer", timeout_s=DEFAULT_UNMOUNT_TIMEOUT_S)
        if done.returncode == 0 or not is_mounted(mountpoint):
            return
    raise DiskLayerError(f"could not unmount the disk layer at {mountpoint}: {done.output.strip()}")


def _teardown(state_dir: Path, state: LayerState, timeout_s: float) -> None:
    if is_mounted(state.mountpoint):
        _unmount_once(state.mountpoint)
    daemon = state.daemon()
    if daemon is not None:
        try:
            daemon.wait_gone(timeout_s)  # unmounted, it returns from its loop by itself
        except WaitTimeout:
            daemon.stop(timeout_s, signal.SIGTERM)
    wait_until(
        lambda: not is_mounted(state.mountpoint), timeout_s, f"{state.mountpoint} is still mounted after {timeout_s:g}s"
    )
    # A daemon that ended by SIGKILL leaves its stash (entries removed while it served; no power cut happened to bring
    # them back).
    shutil.rmtree(Path(state.backing) / STASH, ignore_errors=True)
    state_path(state_dir, state.name).unlink(missing_ok=True)


def unmount_named(state_dir: Path, names: list[str], timeout_s: float = DEFAULT_UNMOUNT_TIMEOUT_S) -> list[str]:
    """Unmount the layers tracked under ``state_dir`` by these names (the nodes a failed start killed); returns their
    mountpoints."""
    return _unmount(state_dir, lambda state: state.name in names, timeout_s)


def unmount_all(state_dir: Path, timeout_s: float = DEFAULT_UNMOUNT_TIMEOUT_S) -> list[str]:
    """Unmount every layer tracked under ``state_dir`` (after ``down``, ``clean`` or a crash of their owner): stale
    mounts of dead daemons too. Returns the mountpoints it cleared."""
    return _unmount(state_dir, lambda state: True, timeout_s)


def _unmount(state_dir: Path, chosen: Callable[[LayerState], bool], timeout_s: float) -> list[str]:
    cleared = []
    for state in find_layers(state_dir):
        if chosen(state):
            _teardown(state_dir, state, timeout_s)
            cleared.append(state.mountpoint)
    return cleared
