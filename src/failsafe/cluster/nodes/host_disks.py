"""Disk layers on hosts (failsafe up --volatile-disks with an inventory): the layer of failsafe.disk, run on the node's
host.

    on each host H:  H.dir/dist/failsafe-disk-HASH/          the daemon's modules and mfusepy, copied from here
                     H.dir/clusters/TAG/kafka-N.disk/         node N's backing directory
                     H.dir/clusters/TAG/kafka-N/              its log.dirs: the layer's mountpoint
                     H.dir/clusters/TAG/disk-layers/NAME.*    the daemon's pid file (pid, start time, boot), its
                                                              control socket's name, its log

The daemon is the same program as on this machine (``python3 -m failsafe.disk.daemon``), with the host's python3 and
libfuse 3. Its control socket is in the abstract namespace of the host's network stack, so each request is sent
there, over SSH, by a one-line Python client (``control.request`` of the copied modules). A layer is found by its pid
file on the host, never by name; ``down`` and ``clean`` unmount each node's layer (HostNodes.disk_unmount), also one
whose daemon a crash left dead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from failsafe.cluster.state import ClusterDir
from failsafe.disk.injection import Injection, check_kind
from failsafe.disk.layer import DEFAULT_MOUNT_TIMEOUT_S, DEFAULT_UNMOUNT_TIMEOUT_S, FSTYPE
from failsafe.disk.names import STASH
from failsafe.errors import DiskLayerError, UserError
from failsafe.hosts import processes as remote
from failsafe.hosts.ssh import RemoteCommandFailed, SshHost, quote
from failsafe.supervisor import DOWN
from failsafe.waiting import WaitTimeout, wait_until

# What the daemon imports: failsafe.disk's modules that run in it (disk/__init__.py says which), with empty packages.
DAEMON_MODULES = ("daemon", "control", "fusefs", "data", "names", "injection")
LAYERS = "disk-layers"
BACKING_SUFFIX = ".disk"
# A request from the host itself (the daemon's socket is in its network stack's abstract namespace): control.py's
# protocol, one JSON line each way, in the standard library only.
_ASK = (
    "import socket, sys; s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect('\\0' + sys.argv[1]); "
    "s.sendall(sys.argv[2].encode() + b'\\n'); print(s.makefile('rb').readline().decode(), end='')"
)


def _mfusepy() -> Path:
    """mfusepy's one file, found without importing it (its import needs libfuse, which this machine may lack)."""
    spec = importlib.util.find_spec("mfusepy")
    if spec is None or spec.origin is None:
        raise UserError(
            "mfusepy is not installed here: disk layers on hosts copy it from failsafe's environment (make setup)"
        )
    return Path(spec.origin)


def stage(cdir: ClusterDir) -> tuple[Path, str]:
    """The daemon's package under DIR/hosts/disk-layer-HASH/ and its hash: written once (its files' times fixed, so the
    quick check copies it to a host once), then found there."""
    source = Path(__file__).resolve().parents[2] / "disk"
    files = {f"failsafe/disk/{m}.py": (source / f"{m}.py").read_bytes() for m in DAEMON_MODULES}
    files |= {"failsafe/__init__.py": b"", "failsafe/disk/__init__.py": b"", "mfusepy.py": _mfusepy().read_bytes()}
    digest = hashlib.sha256(b"".join(name.encode() + body for name, body in sorted(files.items()))).hexdigest()[:12]
    root = cdir.root / "hosts" / f"disk-layer-{digest}"
    if root.is_dir():
        return root, digest
    tmp = root.with_name(f"{root.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for name, body in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(body)
        os.utime(tmp / name, (0, 0))
    tmp.rename(root)
    return root, digest


class HostDisks:
    """The disk layers of one host's nodes under ``root`` (H.dir/clusters/TAG), with the daemon's package at
    ``package``."""

    def __init__(self, ssh: SshHost, root: PurePosixPath, package: Callable[[], PurePosixPath]) -> None:
        self.ssh = ssh
        self.root = root
        self._package = package  # copies the daemon's package to the host (once) and says where: only a mount needs it

    def _file(self, name: str, suffix: str) -> PurePosixPath:
        return self.root / LAYERS / f"{name}.{suffix}"

    def mounted(self, data: PurePosixPath) -> bool:
        """A layer's mount at ``data``, its daemon alive or not (the path resolved through its parent, as fusermount3
        does: a dead FUSE mount cannot be entered)."""
        where = f'"$(cd {quote(data.parent)} 2>/dev/null && pwd -P)/{data.name}"'
        out = self.ssh.run(f"findmnt -rn -o FSTYPE -M {where}").stdout.split()
        return out[-1:] == [FSTYPE]

    def any_mounted(self) -> bool:
        """Whether a layer is mounted anywhere under the cluster's directory on this host (one command)."""
        under = f'"$(cd {quote(self.root)} 2>/dev/null && pwd -P)/"'
        return self.ssh.run(f"findmnt -rn -t {FSTYPE} -o TARGET | grep -q -F {under}").ok()

    def serving(self, name: str, data: PurePosixPath) -> bool:
        """Mounted, and its daemon is the process of its pid file (a dead daemon leaves its mount in the table)."""
        return self.mounted(data) and remote.state_of(self.ssh, self._file(name, "pid")) != DOWN

    def ensure_mounted(self, name: str, data: PurePosixPath, timeout_s: float = DEFAULT_MOUNT_TIMEOUT_S) -> None:
        """Mount ``name``'s layer at ``data`` unless it is: the first time, what is there (formatted) moves to its
        backing."""
        if self.tracked(name) and self.serving(name, data):
            return
        if self.tracked(name) or self.mounted(
            data
        ):  # its daemon died, or a power cut came and the layer was not cleared
            self.unmount(name, data)
        backing = data.with_name(data.name + BACKING_SUFFIX)
        self.ssh.check(
            f"[ -d {quote(backing)} ] || {{ mkdir -p {quote(data)} && mv {quote(data)} {quote(backing)}; }}; "
            f"mkdir -p {quote(data)} {quote(self.root / LAYERS)}",
            what=f"preparing {name}'s disk layer",
        )
        if self.ssh.run(f"ls -A {quote(data)}").stdout.strip():
            raise UserError(
                f"host {self.ssh.host}: {data} holds files and {backing} is its disk layer's backing directory: one of "
                "them is not failsafe's; move them away or 'failsafe clean'"
            )
        control = f"failsafe-disk-{uuid.uuid4().hex}"
        self.ssh.write_text(str(self._file(name, "control")), control + "\n")
        process = remote.start(
            self.ssh,
            ["python3", "-m", "failsafe.disk.daemon", str(backing), str(data), control],
            cwd=self.root,
            log=self._file(name, "log"),
            pidfile=self._file(name, "pid"),
            env={"PYTHONPATH": str(self._package())},
        )

        def serving() -> bool:
            if remote.state(self.ssh, process) == DOWN:
                tail = self.ssh.run(f"tail -n 3 {quote(self._file(name, 'log'))}").stdout.strip().replace("\n", " | ")
                raise DiskLayerError(
                    f"host {self.ssh.host}: the disk layer's daemon for {data} exited: {tail or 'no output'}"
                )
            return self.mounted(data) and bool(self._ask(control, {"op": "status"}).get("ok"))

        try:
            wait_until(
                serving,
                timeout_s,
                f"host {self.ssh.host}: the disk layer at {data} was not serving after {timeout_s:g}s",
            )
        except BaseException:
            self.unmount(name, data)
            raise

    def tracked(self, name: str) -> bool:
        return self.ssh.run(f"[ -e {quote(self._file(name, 'pid'))} ]").ok()

    def _ask(self, control: str, message: dict[str, Any]) -> dict[str, Any]:
        """One request to the daemon, by a client run on the host (in one of its open shells: the message is an
        argument)."""
        result = self.ssh.run(f"python3 -c {quote(_ASK)} {quote(control)} {quote(json.dumps(message))}")
        if not result.ok() or not result.stdout.strip():
            return {"ok": False, "error": result.why()}
        return json.loads(result.stdout)

    def layer(self, name: str, data: PurePosixPath) -> HostLayer | None:
        """``name``'s layer when it is tracked, mounted and served, else None."""
        if not self.tracked(name) or not self.serving(name, data):
            return None
        control = self.ssh.check(
            f"cat {quote(self._file(name, 'control'))}", what="reading a disk layer's control name"
        ).strip()
        return HostLayer(self, name, data, control)

    def unmount(self, name: str, data: PurePosixPath, timeout_s: float = DEFAULT_UNMOUNT_TIMEOUT_S) -> None:
        """A clean shutdown of ``name``'s layer: unmount (lazily when busy), its daemon gone, its files removed."""
        if self.mounted(data):
            self.ssh.check(
                f"fusermount3 -u {quote(data)} 2>/dev/null || fusermount3 -u -z {quote(data)}",
                what=f"unmounting the disk layer at {data}",
            )
        process = remote.read(self.ssh, self._file(name, "pid"))
        if process is not None and not remote.wait_state(self.ssh, process, DOWN, timeout_s):
            remote.stop(self.ssh, process, signal.SIGTERM, timeout_s)
        try:
            wait_until(lambda: not self.mounted(data), timeout_s, "")
        except WaitTimeout:
            raise DiskLayerError(f"host {self.ssh.host}: {data} is still mounted after {timeout_s:g}s") from None
        backing = data.with_name(data.name + BACKING_SUFFIX)
        # A daemon that ended by a signal leaves its stash (entries removed while it served: no power cut brings them
        # back).
        self.ssh.check(
            f"rm -rf {quote(backing / STASH)} && rm -f {quote(self._file(name, 'pid'))} "
            f"{quote(self._file(name, 'control'))}",
            what="removing a disk layer's files",
        )


class HostLayer:
    """One mounted layer on a host, with the methods of failsafe.disk.DiskLayer that the cluster uses."""

    def __init__(self, disks: HostDisks, name: str, data: PurePosixPath, control: str) -> None:
        self.disks = disks
        self.name = name
        self.data = data
        self.control = control

    def status(self) -> dict[str, Any]:
        return self._answer({"op": "status"})

    def lose_unsynced(self, *, torn: bool = False, seed: int = 0) -> dict[str, Any]:
        lost = self._answer({"op": "lose", "torn": torn, "seed": seed})
        try:
            self.disks.unmount(self.name, self.data)
        except RemoteCommandFailed as e:
            raise DiskLayerError(str(e)) from e
        return lost

    def inject(self, kind: str, *, ops: str = "both", glob: str | None = None, **fields: Any) -> dict[str, Any]:
        return self._answer({"op": "inject", **Injection(kind, ops, glob, **fields).to_message()})  # type: ignore[arg-type]

    def clear_injection(self, kind: str | None = None) -> dict[str, Any]:
        if kind is not None:
            check_kind(kind)
        return self._answer({"op": "clear", "kind": kind})

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = self.disks._ask(self.control, message)
        except RemoteCommandFailed as e:
            raise DiskLayerError(str(e)) from e
        if not answer.get("ok"):
            raise DiskLayerError(
                f"host {self.disks.ssh.host}: the disk layer at {self.data} refused {message['op']}: "
                f"{answer.get('error')}"
            )
        return {k: v for k, v in answer.items() if k != "ok"}
