"""Which pipeline wrote a checkpoint: one this failsafe can resume, or one line saying to start fresh.

Two earlier pipelines wrote checkpoints this one cannot resume: the two-query pipeline (a second
query, ``dead-letters``, read the topic again) and the driver-state pipeline (its running totals as
JSON files in ``sales-state``, merged on the driver). The sales query now keeps its totals in
Spark's state store; resuming either checkpoint would start them from nothing while Spark's offsets
say the input was read, and the sink would undercount for good. This is checked from files alone,
before Spark starts.

``failsafe-checkpoint.json`` marks a checkpoint of this pipeline; it is written when a run starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from failsafe.errors import UserError

LAYOUT_FILE = "failsafe-checkpoint.json"
# 3: the running totals in Spark's state store (1: two queries, 2: the totals on the driver; neither wrote this file).
LAYOUT = 3
DRIVER_STATE_DIR = "sales-state"
TWO_QUERY_DIR = "dead-letters"


def check_layout(checkpoint_dir: Path) -> None:
    """Raise UserError (one line, what to do) if ``checkpoint_dir`` was written by a pipeline this one cannot resume."""
    marker = checkpoint_dir / LAYOUT_FILE
    fresh = f"delete {checkpoint_dir} and the output directory and run again to start fresh"
    if marker.is_file():
        try:
            layout = json.loads(marker.read_text(encoding="utf-8")).get("layout")
        except (OSError, ValueError, AttributeError) as e:
            raise UserError(f"checkpoint {checkpoint_dir}: {LAYOUT_FILE} is unreadable ({e}); {fresh}") from e
        if layout != LAYOUT:
            raise UserError(
                f"checkpoint {checkpoint_dir} has layout {layout!r}, this failsafe writes {LAYOUT}; {fresh}"
            )
        return
    if (checkpoint_dir / DRIVER_STATE_DIR).is_dir():
        raise UserError(
            f"checkpoint {checkpoint_dir} was written by the pipeline that kept its running totals on the driver "
            f"({DRIVER_STATE_DIR}/); this failsafe keeps them in Spark's state store: {fresh}"
        )
    if (checkpoint_dir / TWO_QUERY_DIR).is_dir():
        raise UserError(
            f"checkpoint {checkpoint_dir} was written by the two-query pipeline ({TWO_QUERY_DIR}/); "
            f"this failsafe runs one query with its totals in Spark's state store: {fresh}"
        )


def write_layout(checkpoint_dir: Path) -> None:
    """Mark ``checkpoint_dir`` as this pipeline's (idempotent; written whole by rename)."""
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    marker = checkpoint_dir / LAYOUT_FILE
    if marker.is_file():
        return
    tmp = checkpoint_dir / f".{LAYOUT_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps({"layout": LAYOUT, "state": "spark"}) + "\n", encoding="utf-8")
    os.replace(tmp, marker)
