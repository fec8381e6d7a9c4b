"""Nodes' data directories on disk layers that forget, on a power cut, what was not synced (failsafe up
--volatile-disks).

A cluster made with ``volatile_disks`` keeps each node's data in ``DIR/kafka-N.disk`` (its backing
directory) and shows it at ``DIR/kafka-N``, the directory ``log.dirs`` names, through a disk layer
(failsafe.disk) mounted just before the node starts. A layer outlives the command that mounted it,
as the node does, and stays mounted while its node is down: a kill -9 keeps the page cache, as on a
real machine. ``power_off`` takes what was not synced (the node must be dead already); ``inject``
fills the disk or makes it fail until ``clear``; ``unmount`` after ``down`` or ``clean`` clears
every layer of the directory, also the ones a crash of failsafe left. Layers are tracked by their
state files under ``DIR/disk-layers/``, never found by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from failsafe import disk
from failsafe.cluster.spec import NodeSpec
from failsafe.cluster.state import ClusterDir
from failsafe.errors import UserError

BACKING_SUFFIX = ".disk"


def backing_dir(cdir: ClusterDir, node: NodeSpec) -> Path:
    return _backing(cdir.data_dir(node))


def _backing(data: Path) -> Path:
    return data.with_name(data.name + BACKING_SUFFIX)


def layer_of(cdir: ClusterDir, node: NodeSpec) -> disk.DiskLayer | None:
    """The layer tracked for ``node``, or None when none is."""
    return layer_named(cdir.root, node.name)


def layer_named(root: Path, name: str) -> disk.DiskLayer | None:
    """The layer tracked under ``name`` in the cluster directory ``root`` (a node's, or the remote store's), or None."""
    state = next((s for s in disk.find_layers(root) if s.name == name), None)
    return disk.DiskLayer(root, state) if state is not None else None


def ensure_mounted(cdir: ClusterDir, node: NodeSpec) -> None:
    """Mount ``node``'s layer unless it is mounted: the first time, its data (formatted by ``create``) moves to the
    backing directory."""
    ensure_layer(cdir, node.name, cdir.data_dir(node))


def ensure_layer(cdir: ClusterDir, name: str, data: Path) -> None:
    """Mount the layer ``name`` shown at ``data`` unless it is mounted: the first time, what ``data`` holds moves to
    its backing directory (``data`` + ``.disk``, made empty when there was nothing)."""
    backing = _backing(data)
    layer = layer_named(cdir.root, name)
    if layer is not None and disk.is_mounted(data):
        return
    if layer is not None:  # tracked, not mounted: its daemon died, or a power cut came and the layer was not cleared
        layer.unmount()
    if not backing.exists():
        data.mkdir(parents=True, exist_ok=True)
        data.rename(backing)
    data.mkdir(exist_ok=True)
    if any(data.iterdir()):
        raise UserError(
            f"{data} holds files and {backing} is its disk layer's backing directory: one of them is not failsafe's; "
            f"move them away or 'failsafe clean --dir {cdir.root}'"
        )
    disk.mount(backing, data, state_dir=cdir.root, name=name)


def mounted_layer(cdir: ClusterDir, node: NodeSpec) -> disk.DiskLayer | None:
    """``node``'s layer when it is tracked and mounted; None otherwise (a plain cluster, or a power cut not yet
    undone)."""
    layer = layer_of(cdir, node)
    return layer if layer is not None and disk.is_mounted(cdir.data_dir(node)) else None


# What the cluster asks of a mounted layer, on this machine (disk.DiskLayer) or on a host (cluster/nodes/host_disks.py
# HostLayer): status, lose_unsynced, inject, clear_injection. ``layer`` below is NodeControl.disk_layer's answer for
# ``node``.
def _mounted(layer: Any, node: NodeSpec, what: str) -> Any:
    if layer is None:
        raise UserError(
            f"{node.name} has no disk layer mounted: {what} needs a cluster made with 'failsafe up --volatile-disks'"
        )
    return layer


def power_off(layer: Any, node: NodeSpec, *, torn: bool = False, seed: int = 0) -> dict[str, Any]:
    """The power cut of ``node`` (already dead): what was not synced is gone, the layer unmounted; returns what was
    lost."""
    return _mounted(layer, node, "a power loss").lose_unsynced(torn=torn, seed=seed)


def inject(
    layer: Any, node: NodeSpec, kind: str, *, ops: str = "both", glob: str | None = None, **fields: Any
) -> dict[str, Any]:
    """From now on ``node``'s disk is full (``kind`` "full": ENOSPC), failing (``"error"``: EIO for ``ops`` of
    ``glob``), slow (``"slow"``) or reading back wrong bytes (``"corrupt"``), with ``fields`` of its own."""
    return _mounted(layer, node, f"a {kind} disk").inject(kind, ops=ops, glob=glob, **fields)


def clear(layer: Any, kind: str) -> dict[str, Any] | None:
    """End ``kind`` on a node's disk; None when its layer is gone (a power cut since: a new mount starts without
    any)."""
    return None if layer is None else layer.clear_injection(kind)


def unsynced(layer: Any) -> dict[str, Any] | None:
    """What a node's layer holds that a power cut would take now (bytes, files, directory changes), or None without a
    layer."""
    return None if layer is None else layer.status()


def unmount_nodes(cdir: ClusterDir, nodes: list[NodeSpec]) -> list[str]:
    """Unmount these nodes' layers (stopped first), as a failed start leaves nothing behind: a clean unmount keeps their
    data."""
    return disk.unmount_named(cdir.root, [n.name for n in nodes])


def unmount(cdir: ClusterDir) -> list[str]:
    """Unmount every layer tracked in the directory (its nodes stopped first): after ``down``, ``clean`` or a crash."""
    return disk.unmount_all(cdir.root)
