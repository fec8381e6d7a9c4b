"""Corruption of a node's files at rest (docs/disk-faults.md, "Corruption"): the file a node finds wrong when it starts.

``corrupt`` kills its nodes (kill -9, all first), changes one file of each node's log directory as ``way`` says
(failsafe/disk/corrupt.py: bits flipped, a range zeroed, the file truncated, its tail torn), and keeps them down
until the undo starts them again. ``way = "stale"`` keeps its nodes running at the start and only takes a copy of the
file; the undo kills them, puts that older copy back (a write the disk lost, or one that landed elsewhere) and starts
them. The file: ``file`` names its class (``segment``, ``index``, ``leader-epoch-checkpoint``, ``metadata-log``, ...:
disk.corrupt.FILE_CLASSES), of ``partition`` for a partition's files. The nodes: as for power-loss (one by ``role``,
``node`` or ``partition``; a set at once in ``nodes``: ``{controllers}``, ``{3000}``, ``{replicas}``).

What changed (file, offsets, bytes before and after) is recorded with the start. What Kafka made of it is recorded
with the stop: how long the restart took until the cluster was ready, the node's own log lines from the fault's start
on that name the file, its partition or a corruption (warnings and errors, at most ``LOG_LINES``), and whether the
node refused to start on it; a node that refuses is repaired (the file's original bytes put back, as an operator
restores a file from a replica or a backup) and started again, so the run goes on and its checkers judge what was
lost. The files must be on this machine (a cluster on hosts: not built); a disk layer is not needed.

``when = "on-read"`` leaves the file as it is and makes the nodes' disk layers (cluster.volatile_disks) answer every
read of the class's files with ``bits`` bits flipped (failsafe/disk/injection.py ``corrupt``), then restarts the nodes
(kill -9) so that they open and read their files again through the layer; the undo ends the wrong reads. The kernel's
page cache serves what it holds without asking the layer, so only reads that reach the disk come back wrong: the
stop records how many did.
"""

from __future__ import annotations

import random
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from failsafe.cluster.site import RunSite
from failsafe.cluster.spec import NodeSpec
from failsafe.disk import corrupt
from failsafe.errors import DiskLayerError, FailsafeError, UserError
from failsafe.faults.base import AppliedFault, FaultContext, FaultError, FaultSpec, FaultTargets, FaultType, Need
from failsafe.faults.disk import check_node_set, needs_layers, node_set
from failsafe.faults.draw import Arena, Draw, node_by_role
from failsafe.faults.nodes import SIGNAL_TIMEOUT_S, NodeChoice, target_of
from failsafe.faults.registry import register
from failsafe.faults.sides import node_label
from failsafe.history.ops import Family
from failsafe.supervisor import DOWN

CORRUPT = "corrupt"
AT_REST = "at-rest"
ON_READ = "on-read"
WHENS = (AT_REST, ON_READ)
LOG_LINES = 12
LINE_CHARS = 400
_LEVEL = re.compile(r"\]\s+(WARN|ERROR|FATAL)\s")
_CORRUPTION = re.compile(
    r"corrupt|crc|checksum|invalid|malformed|mismatch|inconsistent|unexpected|checkpoint|segment|index file"
    r"|metadata file|log dir",
    re.IGNORECASE,
)
_ACTION = re.compile(r"recover|truncat|rebuild|delet|invalid|corrupt", re.IGNORECASE)


@dataclass(frozen=True)
class CorruptChoice(NodeChoice):
    """Which file class (of ``partition`` for a partition's), which way, seeded, on which nodes (``nodes``: a set)."""

    file: str = "segment"
    way: str = "flip"
    seed: int = 0
    bits: int = 1
    length: int = 4096
    nodes: str | None = None
    when: str = AT_REST
    which: str = "newest"


def check(params: CorruptChoice, ctx: FaultContext) -> None:
    if params.when not in WHENS:
        raise ctx.fail("when", f"{params.when!r} is not one of {', '.join(WHENS)}")
    if params.when == ON_READ:
        needs_layers(f"{CORRUPT} on read", ctx)
        if params.way != "flip":
            raise ctx.fail("way", f"{params.way!r}: a disk corrupts what it reads back by flipping bits (way 'flip')")
    if params.file not in corrupt.FILE_CLASSES:
        raise ctx.fail("file", f"{params.file!r} is not one of {', '.join(corrupt.FILE_CLASSES)}")
    if params.which not in corrupt.WHICH:
        raise ctx.fail("which", f"{params.which!r} is not one of {', '.join(corrupt.WHICH)}")
    if params.way not in corrupt.WAYS:
        raise ctx.fail("way", f"{params.way!r} is not one of {', '.join(corrupt.WAYS)}")
    for name in ("bits", "length"):
        if getattr(params, name) < 1:
            raise ctx.fail(name, f"{getattr(params, name)} must be at least 1")
    if corrupt.needs_partition(params.file):
        ctx.require_partition("partition", params.partition)
    check_node_set(params, ctx)


def _fits(spec: Any) -> str | None:
    on_hosts = getattr(spec, "on_hosts", False)
    return "its nodes run on hosts, and corrupt changes files on this machine only" if on_hosts else None


def _files(cluster: RunSite, nodes: list[NodeSpec], params: CorruptChoice) -> dict[str, tuple[Path, Path]]:
    """Each node's (log directory, file to corrupt), by node label."""
    out = {}
    for node in nodes:
        data = cluster.data_dir(node)
        if data is None:
            raise _fail(f"{node.name}'s files are not on this machine")
        try:
            out[node_label(node)] = (data, corrupt.find(data, params.file, params.partition, params.which))
        except (corrupt.CorruptionError, OSError) as e:
            raise _fail(str(e)) from e
    return out


def _fail(message: str) -> FaultError:
    return FaultError(f"corrupt: {message}")


def _log_marks(cluster: RunSite) -> dict[int, tuple[Path, int]]:
    logs = cluster.node_logs()
    if logs is None:
        return {}
    return {node_id: (path, path.stat().st_size if path.exists() else 0) for node_id, path in logs[0].items()}


def kafka_lines(text: str, names: list[str]) -> list[str]:
    """The lines of a node's log that say what it made of a corrupted file: warnings and errors that name it (any of
    ``names``: the file, its directory) or a corruption first, then other lines that name it with a recovery,
    truncation, rebuild or deletion; each group in the log's order. At most LOG_LINES, each cut at LINE_CHARS."""
    severe, other = [], []
    for line in text.splitlines():
        named = any(n in line for n in names)
        if _LEVEL.search(line) is not None:
            if named or _CORRUPTION.search(line):
                severe.append(line[:LINE_CHARS])
        elif named and _ACTION.search(line):
            other.append(line[:LINE_CHARS])
    return (severe + other)[:LOG_LINES]


def detected(lines: list[str]) -> bool:
    """Whether the node said it found something wrong: a warning or an error among its lines."""
    return any(_LEVEL.search(line) for line in lines)


def _names(data: Path, file: Path) -> list[str]:
    """What a node's log line names a file by: its name, and its directory when that is not the log directory itself
    (a partition's, __cluster_metadata-0)."""
    return [file.name] if file.parent == data else [file.name, file.parent.name]


def _observe(cluster: RunSite, nodes: list[NodeSpec], names: dict[str, list[str]], marks: dict) -> dict[str, Any]:
    """Each node's lines about the file (kafka_lines) since its mark."""
    logs = cluster.node_logs()
    said = {}
    for node in nodes:
        label = node_label(node)
        path, start = marks.get(node.node_id, (None, 0))
        if logs is not None:
            path = logs[0].get(node.node_id, path)
        if path is None or not path.exists():
            continue
        with path.open("rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", "replace")
        said[label] = kafka_lines(text, names[label])
    return said


def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    params: CorruptChoice = spec.params
    if params.when == ON_READ:
        return _on_read(params, targets)
    cluster, nodes, role = node_set(params, targets)
    files = _files(cluster, nodes, params)
    marks = _log_marks(cluster)
    older = {label: corrupt.snapshot(file) for label, (_, file) in files.items()} if params.way == "stale" else {}
    originals: dict[str, bytes] = {}
    changed: dict[str, Any] = {}

    def here(label: str) -> tuple[Path, Path]:
        """Where a file taken before is now (a layer's mountpoint, or its backing directory after a failed start)."""
        data, file = files[label]
        now = cluster.data_dir(_node(nodes, label)) or data
        return now, now / file.relative_to(data)

    def cut() -> None:
        """The nodes down, and each one's file changed: found again (a segment may have rolled since), or for ``stale``
        the file its older copy was taken of."""
        cluster.stop_nodes([n for n in nodes if cluster.node_state(n) != DOWN], signal.SIGKILL, SIGNAL_TIMEOUT_S)
        try:
            found = {label: here(label) for label in files} if older else _files(cluster, nodes, params)
            for label, (data, file) in found.items():
                files[label] = (data, file)
                originals[label] = corrupt.snapshot(file)
                change = corrupt.corrupt(
                    file,
                    params.way,
                    params.seed,
                    bits=params.bits,
                    length=params.length,
                    older=older.get(label),
                    base=data,
                )
                changed[label] = change.to_dict()
        except (corrupt.CorruptionError, OSError) as e:
            cluster.restart(nodes)
            raise _fail(str(e)) from e

    applied = AppliedFault(CORRUPT, target_of(nodes), [n.node_id for n in nodes], role)

    def undo() -> None:
        if params.way == "stale" and not changed:
            cut()

        def repair() -> None:
            """The operator's: the original file back, on a node stopped for it."""
            cluster.stop_nodes([n for n in nodes if cluster.node_state(n) != DOWN], signal.SIGKILL, SIGNAL_TIMEOUT_S)
            for label, data in originals.items():
                corrupt.restore(here(label)[1], data)

        began = time.monotonic()
        refused = _start_or_repair(cluster, nodes, repair)
        lines = _observe(cluster, nodes, {label: _names(d, f) for label, (d, f) in files.items()}, marks)
        applied.stop_details = {
            "changed": changed if params.way == "stale" else None,
            "restart_s": round(time.monotonic() - began, 3),
            "refused_to_start": refused,
            "repaired": refused is not None,
            "detected": {label: detected(said) for label, said in lines.items()},
            "log_lines": lines,
        }

    applied.undo_action = undo
    if params.way == "stale":
        taken = {label: {"file": str(f.relative_to(d)), "size": len(older[label])} for label, (d, f) in files.items()}
        applied.details = {"file": params.file, "way": params.way, "taken": taken}
    else:
        applied.acted_ns = time.time_ns()
        cut()
        applied.details = {"file": params.file, "way": params.way, "changed": changed}
    return applied


def _start_or_repair(cluster: RunSite, nodes: list[NodeSpec], repair: Callable[[], None]) -> str | None:
    """Start the nodes; when they refuse (the start fails), ``repair`` and start them again. Returns why they refused,
    or None."""
    try:
        cluster.restart(nodes)
        return None
    except FailsafeError as e:
        repair()
        cluster.restart(nodes)
        return str(e)


def _corrupted_reads(cluster: RunSite, node: NodeSpec) -> int:
    status = cluster.disk_status(node) or {}
    return int((status.get("corrupted") or {}).get("reads", 0))


def _on_read(params: CorruptChoice, targets: FaultTargets) -> AppliedFault:
    """Reads of the file class through the nodes' disk layers answer flipped bits; the nodes are restarted (kill -9) so
    that they open and read their files again, through the layer; the undo ends the wrong reads."""
    cluster, nodes, role = node_set(params, targets)
    bare = [n.name for n in nodes if cluster.disk_status(n) is None]
    if bare:
        raise _fail(f"{', '.join(bare)} has no disk layer mounted: on-read corruption needs --volatile-disks")
    glob = corrupt.glob_of(params.file, params.partition)
    marks = _log_marks(cluster)
    before = {node_label(n): _corrupted_reads(cluster, n) for n in nodes}
    try:
        for node in nodes:
            cluster.disk_inject(node, "corrupt", ops="read", glob=glob, bits=params.bits, seed=params.seed)
    except (UserError, DiskLayerError, ValueError) as e:
        for node in nodes:
            cluster.disk_clear(node, "corrupt")
        raise _fail(str(e)) from e
    acted = time.time_ns()
    cluster.stop_nodes([n for n in nodes if cluster.node_state(n) != DOWN], signal.SIGKILL, SIGNAL_TIMEOUT_S)
    began = time.monotonic()
    # A failed start unmounts the layer, and a new mount reads right: started again, the node reads its intact files.
    refused = _start_or_repair(cluster, nodes, lambda: None)
    started = {"restart_s": round(time.monotonic() - began, 3), "refused_to_start": refused}
    names = [part for part in glob.split("/") if "*" not in part]
    applied = AppliedFault(
        CORRUPT,
        target_of(nodes),
        [n.node_id for n in nodes],
        role,
        details={"file": params.file, "way": params.way, "when": ON_READ, "glob": glob, **started},
        acted_ns=acted,
    )

    def undo() -> None:
        read = {node_label(n): _corrupted_reads(cluster, n) - before[node_label(n)] for n in nodes}
        for node in nodes:
            cluster.disk_clear(node, "corrupt")
        cluster.restart(nodes)
        lines = _observe(cluster, nodes, dict.fromkeys(before, names), marks)
        applied.stop_details = {
            "corrupted_reads": read,
            "detected": {label: detected(said) for label, said in lines.items()},
            "log_lines": lines,
        }

    applied.undo_action = undo
    return applied


# What a campaign draws: one node's file, at rest (the node down while it is changed, as a kill takes it).
DRAWN_FILES = tuple(c for c, (where, _) in corrupt.FILE_CLASSES.items() if where in ("partition", "root"))


def draw(rng: random.Random, arena: Arena) -> Draw:
    fields, brokers, controllers = node_by_role(rng, arena, ("leader", "follower"))
    fields.update(
        file=rng.choice(DRAWN_FILES),
        way=rng.choice(("flip", "zero", "truncate", "torn")),
        bits=rng.choice((1, 8, 64)),
        seed=rng.randrange(2**31),
    )
    return Draw(fields, brokers, controllers)


def _node(nodes: list[NodeSpec], label: str) -> NodeSpec:
    return next(n for n in nodes if node_label(n) == label)


register(
    FaultType(
        CORRUPT,
        Family.DISK,
        "one file of a node's data corrupted at rest (bits flipped, zeroed, truncated, torn, an older copy)",
        frozenset({Need.NODES}),
        start,
        "the nodes started again (a node that refuses the file gets its original back first), the cluster waited on",
        CorruptChoice,
        check,
        fits=_fits,
        draw=draw,
    )
)
