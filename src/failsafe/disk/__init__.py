"""Disk layers: a FUSE filesystem over a real directory that forgets, on a power cut, what was not made durable
(docs/disk-faults.md).

    data.py       the unsynced writes of each file, and how a loss rolls them back (optionally tearing the last)
    names.py      the directory changes not yet made durable by an fsync of the directory, and their undo
    injection.py  the errors injected on command: a full disk (ENOSPC), a failing one (EIO)
    fusefs.py     the FUSE operations (mfusepy, libfuse 3) that apply all three and log them
    daemon.py     the process that serves one layer (``python -m failsafe.disk.daemon``)
    control.py    the owner's requests to that process (status, lose, inject, clear)
    layer.py      mount, lose_unsynced, inject, clear_injection, unmount; find_layers and unmount_all after a crash of
    the owner

Only layer.py, control.py and injection.py are imported by an owner: fusefs.py needs libfuse and runs in the daemon.
"""

from __future__ import annotations

from failsafe.disk.injection import Injection
from failsafe.disk.layer import (
    DiskLayer,
    LayerState,
    check_fuse,
    find_layers,
    is_mounted,
    mount,
    unavailable_reason,
    unmount_all,
    unmount_named,
)

__all__ = [
    "DiskLayer",
    "Injection",
    "LayerState",
    "check_fuse",
    "find_layers",
    "is_mounted",
    "mount",
    "unavailable_reason",
    "unmount_all",
    "unmount_named",
]
