"""What the frozen member's runs of share-java.json show, read from their run directories (docs/share-groups.md).

    .venv/bin/python benchmarks/examine_share_paused.py docs/benchmarks/share-java.json \
        --out docs/benchmarks/share-java-paused-examined.json

For each share-consumer-paused row: the freeze (start, length), and for every redelivered-after-ack example, when the
other member got the record after the freeze began and when the frozen member printed it after it was let go; and the
frozen member's last share-poll before the freeze and first share-ack after it (ms from each). """

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402


def examine(run_dir: Path) -> dict:
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").open("rb")]
    start = next(o for o in ops if o["f"] == "fault-start")
    stop = next(o for o in ops if o["f"] == "fault-stop")
    frozen = start["nodes"][0]
    results = json.loads((run_dir / "results.json").read_text())
    examples = results["checkers"]["share"]["examples"].get("redelivered-after-ack", [])
    own = [o for o in ops if o.get("process") == frozen and o["f"] in ("share-poll", "share-ack")]
    last_poll = max(
        (o["time_ns"] for o in own if o["f"] == "share-poll" and o["time_ns"] < start["time_ns"]), default=None
    )
    first_ack = min(
        (o["time_ns"] for o in own if o["f"] == "share-ack" and o["time_ns"] >= stop["time_ns"]), default=None
    )
    return {
        "run_dir": str(run_dir),
        "verdict": results["verdict"],
        "frozen": frozen,
        "freeze_s": round((stop["time_ns"] - start["time_ns"]) / 1e9, 2),
        "redelivered_after_ack": [
            {
                "partition": e["partition"],
                "offset": e["offset"],
                "other_member": e["process"],
                "other_got_it_after_freeze_s": round((e["held_ns"] - start["time_ns"]) / 1e9, 2),
                "frozen_printed_it_after_thaw_ms": round((e["time_ns"] - stop["time_ns"]) / 1e6, 1),
            }
            for e in examples
        ],
        "last_poll_before_freeze_ms": None if last_poll is None else round((start["time_ns"] - last_poll) / 1e6, 1),
        "first_ack_after_thaw_ms": None if first_ack is None else round((first_ack - stop["time_ns"]) / 1e6, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stored", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = [r for r in json.loads(args.stored.read_text())["redelivery"] if r["scenario"] == "share-consumer-paused"]
    write_summary(
        {
            "benchmark": "share-paused-examined",
            "command": " ".join(sys.argv),
            "runs": [examine(Path(r["run_dir"])) for r in rows],
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
