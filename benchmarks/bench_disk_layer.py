"""Sequential appends through a disk layer against the same appends to a plain directory (docs/disk-faults.md).

    .venv/bin/python benchmarks/bench_disk_layer.py --rounds 3 --mib 64 [--out FILE]

Like a Kafka log segment: one file opened O_APPEND, written in 1 MiB and in 16 KiB chunks, never
fsynced (Kafka's default flush policy), so the layer keeps all of it unsynced until the end of the
measurement. Rounds alternate plain and layer so the machine's noise falls on both. Reported per
chunk size: MiB/s, the writer's CPU (user + system, the kernel's FUSE round trips included) and the
layer daemon's CPU per MiB, and the ratio layer / plain of the medians. Needs root, /dev/fuse and
libfuse 3. Plain and layered files live on the same filesystem (under --dir).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from failsafe.disk import mount  # noqa: E402

CHUNKS = (1 << 20, 16 << 10)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def append(directory: Path, chunk: int, total: int) -> tuple[float, float]:
    """Append ``total`` bytes in ``chunk``-byte writes to a new file; returns (seconds, writer CPU seconds)."""
    data = os.urandom(chunk)
    path = directory / f"segment-{chunk}.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    try:
        for _ in range(total // chunk):
            os.write(fd, data)
    finally:
        os.close(fd)
    elapsed, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    path.unlink()
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one_round(root: Path, total: int) -> list[dict]:
    rows = []
    plain = root / "plain"
    for chunk in CHUNKS:
        seconds, cpu = append(plain, chunk, total)
        rows.append(
            {
                "where": "plain",
                "chunk": chunk,
                "mib_per_s": total / seconds / 2**20,
                "writer_cpu_ms_per_mib": cpu * 1000 / (total / 2**20),
            }
        )
    layer = mount(root / "backing", root / "mnt", state_dir=root / "state", dies_with_parent=True)
    try:
        for chunk in CHUNKS:
            daemon_before = _cpu_s(layer.state.pid)
            seconds, cpu = append(layer.mountpoint, chunk, total)
            daemon_cpu = _cpu_s(layer.state.pid) - daemon_before
            rows.append(
                {
                    "where": "layer",
                    "chunk": chunk,
                    "mib_per_s": total / seconds / 2**20,
                    "writer_cpu_ms_per_mib": cpu * 1000 / (total / 2**20),
                    "daemon_cpu_ms_per_mib": daemon_cpu * 1000 / (total / 2**20),
                }
            )
    finally:
        layer.unmount()
    return rows


def summarize(rows: list[dict]) -> dict:
    out = {}
    for chunk in CHUNKS:
        cell = {}
        for where in ("plain", "layer"):
            mine = [r for r in rows if r["chunk"] == chunk and r["where"] == where]
            cell[where] = {
                k: round(statistics.median(r[k] for r in mine), 2)
                for k in mine[0]
                if k not in ("where", "chunk", "round")
            }
        cell["ratio_mib_per_s"] = round(cell["layer"]["mib_per_s"] / cell["plain"]["mib_per_s"], 3)
        out[f"{chunk // 1024}KiB"] = cell
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mib", type=int, default=64, help="bytes appended per measurement, in MiB")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the files go (default: a temporary directory under /tmp)"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-disk-layer-", dir=args.dir) as tmp:
        root = Path(tmp)
        for d in ("plain", "backing", "mnt", "state"):
            (root / d).mkdir()
        rows = [r | {"round": i} for i in range(args.rounds) for r in one_round(root, args.mib << 20)]
    summary = {
        "what": "O_APPEND writes of 1 MiB and 16 KiB, never fsynced: through a disk layer vs a plain directory on the "
        "same filesystem",
        "mib_per_measurement": args.mib,
        "rounds": rows,
        "median": summarize(rows),
        "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "kernel": os.uname().release},
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
