"""A columnar copy of a loaded history, next to history.jsonl, so a re-check does not parse the JSON again.

history.jsonl stays the contract (append-only, what the recorder writes, what users read). The copy
in ``history.frames/`` holds one Parquet file per frame and the size and modification time of the
history.jsonl it was made from: when either differs, the copy is ignored and rebuilt, so an edited
history is always re-read.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import polars as pl

from failsafe.history.model import FRAME_SCHEMAS, History

FRAMES_DIR = "history.frames"
SOURCE_FILE = "source.json"
# 2: the clients frame. 3: the controllers frame. 4: faults' family, label, sides and in_force_ns; events' leaderless.
# 5: events' fault and at_s (fault-not-started). 6: the share_deliveries and share_acks frames. 7: a share-ack invoke
# paired with its answer (an unanswered one is an info). 8: the metrics, metrics_errors and node_events frames. 9: the
# clients frame's host, clock_offset_ns and clock_error_ns. 10: the log_reads, declared, phase_ends and group_configs
# frames, and the log's cluster. 11: the log's timestamp_ms, timestamp_type and headers.
FORMAT = 11


def source_of(history_path: Path) -> dict:
    """What a copy records of the history.jsonl it was made from, and is checked against."""
    st = history_path.stat()
    return {"format": FORMAT, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def read_frames(history_path: Path) -> History | None:
    """The columnar copy of history_path when it was made from the file as it is now, else None."""
    frames = history_path.parent / FRAMES_DIR
    try:
        saved = json.loads((frames / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if {k: saved.get(k) for k in ("format", "size", "mtime_ns")} != source_of(history_path):
        return None
    try:
        loaded = {name: pl.read_parquet(frames / f"{name}.parquet") for name in FRAME_SCHEMAS}
    except (OSError, pl.exceptions.PolarsError):
        return None
    if any(dict(loaded[name].schema) != dict(schema) for name, schema in FRAME_SCHEMAS.items()):
        return None
    return History(**loaded, op_count=int(saved["op_count"]))


def write_frames(history_path: Path, history: History, source: dict) -> bool:
    """Write the copy of ``history``, made from history_path when it was as ``source`` (source_of) says; False when it
    was not written: the file has changed since (then the copy would describe another file), or a read-only run dir.

    Written atomically: a temporary directory renamed into place.
    """
    frames = history_path.parent / FRAMES_DIR
    tmp = history_path.parent / f".{FRAMES_DIR}.{os.getpid()}.{threading.get_ident()}"
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name in FRAME_SCHEMAS:
            getattr(history, name).write_parquet(tmp / f"{name}.parquet")
        (tmp / SOURCE_FILE).write_text(json.dumps({**source, "op_count": history.op_count}))
        if source_of(history_path) != source:
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        shutil.rmtree(frames, ignore_errors=True)
        tmp.rename(frames)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    return True
