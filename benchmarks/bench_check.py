"""Time `failsafe check` on a large history as a run leaves it, and what that costs the run.

A run's Recorder makes the columnar copy of history.jsonl while it writes it (src/failsafe/history/live_copy.py). So
the synthetic history (benchmarks/synthetic_history.py) is fed through a Recorder line by line at --rate MB/s, as the
runner hands it the lines of its workers, twice: without the copy, then with it. The difference in CPU seconds is what
the copy costs during the run; its close (the last chunk, building the History, writing Parquet) is timed apart. Then:

- ``failsafe check RUN_DIR`` end to end, as a subprocess (start-up, load, checkers, measurements, explanations, the
  summary), on the run as the recorder left it (the first check of a run, and every re-check after it), and on the
  same history.jsonl without a copy (an old, edited or hand-written history: the JSON is parsed, and a copy written);
- in this process, the load and each checker of both, to show where the time goes.

The copy must equal, frame by frame, the History the JSON gives, and the checkers must say the same from both.

    .venv/bin/python benchmarks/bench_check.py --ops 10000000 --runs 3 [--rate MB_S] [--keep DIR] [--out FILE]

Prints one JSON object (docs/benchmarks/check.json).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from failsafe.checkers import run_checkers
from failsafe.history.columnar import FRAMES_DIR, read_frames
from failsafe.history.load import load_history
from failsafe.history.model import FRAME_SCHEMAS, History
from failsafe.history.recorder import Recorder
from failsafe.scenarios.kinds.lab import CHECKERS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.synthetic_history import history_lines  # noqa: E402

FEED_BATCH = 10_000
FAILSAFE = Path(sys.executable).with_name("failsafe")


def record(path: Path, lines: pl.Series, rate_mb_s: float, columnar_copy: bool) -> dict:
    """Feed lines to a Recorder at rate_mb_s, as the runner hands it its workers' lines; CPU seconds (every thread of
    this process) while recording, and wall and CPU seconds of the close.

    Paced by bytes, not ops, so that the log reads at the end (a few lines of millions of records) come as fast as a
    log reader reads records, not all at once.
    """
    recorder = Recorder(path, columnar_copy=columnar_copy)
    rate_bytes_s = rate_mb_s * 2**20
    fed_bytes = 0
    started, started_cpu = time.perf_counter(), time.process_time()
    for start in range(0, lines.len(), FEED_BATCH):
        for n, line in enumerate(lines.slice(start, FEED_BATCH).to_list()):
            data = line.encode() + b"\n"
            recorder.write_line(data)
            fed_bytes += len(data)
            if n % 1000 == 999 or len(data) > 2**20:
                ahead_s = fed_bytes / rate_bytes_s - (time.perf_counter() - started)
                if ahead_s > 0:
                    time.sleep(ahead_s)  # pacing the feed, not synchronising: the recorder is never waited for here
    fed_s, fed_cpu_s = time.perf_counter() - started, time.process_time() - started_cpu
    closing, closing_cpu = time.perf_counter(), time.process_time()
    recorder.close()
    out = {
        "ops_per_s": round(lines.len() / fed_s),
        "mb_per_s": round(fed_bytes / 2**20 / fed_s, 1),
        "recording_cpu_s": round(fed_cpu_s, 2),
        "close_wall_s": round(time.perf_counter() - closing, 2),
        "close_cpu_s": round(time.process_time() - closing_cpu, 2),
    }
    if columnar_copy:
        if not recorder.copy_written:
            raise SystemExit(
                "bench_check: the recorder wrote no columnar copy (see history/live_copy.py for when it gives up)"
            )
        out["chunks"] = recorder.copy.chunks_decoded if recorder.copy else 0
    return out


def time_check(path: Path, columnar_copy: bool) -> tuple[dict, dict, History]:
    """Wall and CPU seconds (all threads of this process) of loading as `failsafe check` does, then of each checker."""
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    started, started_cpu = time.perf_counter(), time.process_time()
    history = load_history(path, columnar_copy=columnar_copy)
    wall["load"], cpu["load"] = time.perf_counter() - started, time.process_time() - started_cpu
    results = {}
    for name in CHECKERS:
        begun, begun_cpu = time.perf_counter(), time.process_time()
        results.update(run_checkers(history, None, [name]))
        wall[name], cpu[name] = time.perf_counter() - begun, time.process_time() - begun_cpu
    wall["total"], cpu["total"] = time.perf_counter() - started, time.process_time() - started_cpu
    invalid = {name: result for name, result in results.items() if result["valid"] is not True}
    if invalid:
        # A clean synthetic history must check valid, or the timing measured the wrong work.
        raise SystemExit(f"bench_check: unexpected verdicts: {json.dumps(invalid)[:2000]}")
    return (
        {"wall_s": {k: round(v, 2) for k, v in wall.items()}, "cpu_s": {k: round(v, 2) for k, v in cpu.items()}},
        results,
        history,
    )


def cli_check_s(run_dir: Path) -> float:
    """Wall seconds of `failsafe check RUN_DIR`, from its start to its exit."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(FAILSAFE), "check", str(run_dir)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_check: failsafe check exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return round(wall_s, 2)


def drop_copy(run_dir: Path) -> None:
    shutil.rmtree(run_dir / FRAMES_DIR, ignore_errors=True)


def same_history(a: History, b: History) -> None:
    for name in FRAME_SCHEMAS:
        assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    if a.op_count != b.op_count:
        raise AssertionError(f"op_count {a.op_count} != {b.op_count}")


def median_of(runs: list[dict]) -> dict:
    return {
        kind: {name: round(statistics.median(run[kind][name] for run in runs), 2) for name in runs[0][kind]}
        for kind in ("wall_s", "cpu_s")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    # 25 MB/s of this history is about 100,000 ops/s: twice what the fastest producer measured (docs/benchmarks.md)
    # writes.
    parser.add_argument("--rate", type=float, default=25, help="MB/s fed to the recorder")
    parser.add_argument(
        "--keep",
        type=Path,
        help="make the run directories under this directory and keep them (default: a temporary one)",
    )
    parser.add_argument("--out", type=Path, help="also write the report (JSON) here")
    args = parser.parse_args(argv)
    load_average_at_start = round(os.getloadavg()[0], 1)
    with tempfile.TemporaryDirectory(prefix="failsafe-bench-") as tmp:
        root = args.keep or Path(tmp)
        plain, copied = root / "without-copy", root / "with-copy"
        for run_dir in (plain, copied):
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.mkdir(parents=True)
        begun = time.perf_counter()
        lines, sizes = history_lines(args.ops)
        generate_s = round(time.perf_counter() - begun, 1)
        without = record(plain / "history.jsonl", lines, args.rate, columnar_copy=False)
        with_copy = record(copied / "history.jsonl", lines, args.rate, columnar_copy=True)
        del lines
        if not filecmp.cmp(plain / "history.jsonl", copied / "history.jsonl", shallow=False):
            raise SystemExit("bench_check: the two recordings differ")
        load_average = round(os.getloadavg()[0], 1)

        # The run as the recorder left it: every check reads the copy it made.
        first = [cli_check_s(copied) for _ in range(args.runs)]
        from_copy = []
        for _ in range(args.runs):
            timing, copy_results, _ = time_check(copied / "history.jsonl", columnar_copy=True)
            from_copy.append(timing)
        # The same history without a copy: `failsafe check` parses the JSON (and writes a copy, dropped before each
        # run).
        json_first = []
        for _ in range(args.runs):
            drop_copy(plain)
            json_first.append(cli_check_s(plain))
        from_json = []
        for _ in range(args.runs):
            drop_copy(plain)
            timing, json_results, json_history = time_check(plain / "history.jsonl", columnar_copy=False)
            from_json.append(timing)
        same_history(read_frames(copied / "history.jsonl") or History.empty(), json_history)
        del json_history
        if json.dumps(copy_results, sort_keys=True, default=str) != json.dumps(
            json_results, sort_keys=True, default=str
        ):
            raise SystemExit("bench_check: the checkers say different things from the copy and from the JSON")

    million_ops = sizes["ops"] / 1e6
    report = {
        "history": sizes,
        "generate_s": generate_s,
        "polars": pl.__version__,
        "threads": pl.thread_pool_size(),
        # Of the machine's 2 cores, shared with whatever else runs: at the start, and when the checks began.
        "load_average_1m": {"start": load_average_at_start, "checks": load_average},
        "recording": {
            "rate_mb_s": args.rate,
            "without_copy": without,
            "with_copy": with_copy,
            # What making the copy costs the run, per million ops: CPU seconds in all (while recording and at the
            # close), of which while recording, and the wall seconds it adds to the close.
            "copy_cpu_s_per_million_ops": round(
                (
                    with_copy["recording_cpu_s"]
                    + with_copy["close_cpu_s"]
                    - without["recording_cpu_s"]
                    - without["close_cpu_s"]
                )
                / million_ops,
                2,
            ),
            "copy_cpu_s_per_million_ops_while_recording": round(
                (with_copy["recording_cpu_s"] - without["recording_cpu_s"]) / million_ops, 2
            ),
            "close_wall_s_per_million_ops": round(
                (with_copy["close_wall_s"] - without["close_wall_s"]) / million_ops, 2
            ),
            "copy_equals_json": True,
        },
        "check_s": {
            "first": first,
            "first_median": statistics.median(first),
            "without_copy": json_first,
            "without_copy_median": statistics.median(json_first),
        },
        "from_copy": from_copy,
        "from_copy_median": median_of(from_copy),
        "from_json": from_json,
        "from_json_median": median_of(from_json),
    }
    json.dump(report, sys.stdout, indent=2)
    print()
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
