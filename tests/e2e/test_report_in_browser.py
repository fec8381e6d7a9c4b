"""report.html opened by a real browser (headless Debian chromium): plots and tables are there and drawn."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from failsafe.history.load import history_from_ops
from failsafe.reports import write_report

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_S = 90
S = 1_000_000_000
MS = 1_000_000
T0 = 1_700_000_000 * S
# The fault shade (#d62728 at alpha 0.14) over the white axes background.
FAULT_SHADE_RGB = (249, 225, 225)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed (apt-get install chromium)")


def _history_ops() -> list[dict]:
    ops: list[dict] = [
        {"time_ns": T0, "process": "runner", "type": "info", "f": "phase", "phase": "warm-up"},
        {"time_ns": T0 + 4 * S, "process": "runner", "type": "info", "f": "phase", "phase": "chaos"},
    ]
    for i in range(400):
        t = T0 + i * 25 * MS
        down = 4 * S <= t - T0 < 6 * S
        value = f"v{i}"
        ops.append(
            {
                "time_ns": t,
                "process": "producer-0",
                "type": "invoke",
                "f": "send",
                "id": i,
                "topic": "orders",
                "key": None,
                "value": value,
            }
        )
        if down:
            ops.append(
                {
                    "time_ns": t + 800 * MS,
                    "process": "producer-0",
                    "type": "info",
                    "f": "send",
                    "id": i,
                    "topic": "orders",
                    "key": None,
                    "value": value,
                    "partition": 0,
                    "error": "REQUEST_TIMED_OUT",
                }
            )
            continue
        ops.append(
            {
                "time_ns": t + 4 * MS,
                "process": "producer-0",
                "type": "ok",
                "f": "send",
                "id": i,
                "topic": "orders",
                "key": None,
                "value": value,
                "partition": i % 2,
                "offset": i,
            }
        )
        ops.append(
            {
                "time_ns": t + 40 * MS,
                "process": "consumer-0",
                "type": "ok",
                "f": "poll",
                "group": "g",
                "records": [{"topic": "orders", "partition": i % 2, "offset": i, "key": None, "value": value}],
            }
        )
    ops += [
        {
            "time_ns": T0 + 4 * S,
            "process": "nemesis",
            "type": "info",
            "f": "fault-start",
            "fault_id": 1,
            "fault": "kill",
            "target": "broker",
            "nodes": [0],
            "role": "leader of orders-0",
        },
        {
            "time_ns": T0 + 7 * S,
            "process": "nemesis",
            "type": "info",
            "f": "fault-stop",
            "fault_id": 1,
            "fault": "kill",
            "target": "broker",
            "nodes": [0],
            "ok": True,
        },
    ]
    for k in range(41):
        t_ms = k * 250
        leader, isr = (0, [0, 1, 2]) if t_ms < 4000 else ((-1, [1, 2]) if t_ms < 5500 else (1, [1, 2]))
        ops.append(
            {
                "time_ns": T0 + t_ms * MS,
                "process": "topology",
                "type": "info",
                "f": "topology",
                "brokers": [0, 1, 2],
                "controller": 1000,
                "partitions": [
                    {"topic": "orders", "partition": 0, "leader": leader, "replicas": [0, 1, 2], "isr": isr},
                    {"topic": "orders", "partition": 1, "leader": 2, "replicas": [2, 0, 1], "isr": [2, 0, 1]},
                ],
            }
        )
    return ops


RESULTS = {
    "format": 1,
    "scenario": "broker-failover",
    "valid": True,
    "checkers": {
        "delivery": {
            "valid": True,
            "counts": {"acknowledged": 320, "lost": 0},
            "by_process": {"producer-0": {"acknowledged": 320, "lost": 0, "failed": 0, "unknown": 80, "recovered": 0}},
        },
        "availability": {
            "valid": True,
            "counts": {},
            "max_unavailable_ms": 2000.0,
            "median_new_leader_ms": 1500.0,
            "faults": [
                {
                    "fault_id": 1,
                    "fault": "kill",
                    "target": "broker",
                    "nodes": ["0"],
                    "rebalances_during": 0,
                    "affected_partitions": [
                        {
                            "topic": "orders",
                            "partition": 0,
                            "unavailable_ms": 2000.0,
                            "new_leader": 1,
                            "new_leader_ms": 1500.0,
                        }
                    ],
                }
            ],
        },
    },
    "expectations": [{"name": "nothing-acknowledged-lost", "valid": True, "expected": "lost == 0", "observed": 0}],
}


def run_chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Run headless chromium in its own session; on a timeout kill its whole process group, and leave nothing behind."""
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"chromium did not finish within {TIMEOUT_S} s: {' '.join(args)}")
    finally:
        try:  # a helper chromium left in the group (crash handler, zygote)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    report = write_report(
        tmp_path,
        RESULTS,
        history_from_ops(_history_ops()),
        scenario={"name": "broker-failover"},
        manifest={"kafka_version": "4.3.1"},
    )
    url = report.resolve().as_uri()
    screenshot = tmp_path / "report.png"

    shot = run_chromium(f"--screenshot={screenshot}", "--window-size=1280,2400", url, profile=tmp_path / "profile-1")
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = run_chromium("--dump-dom", url, profile=tmp_path / "profile-2")
    assert dom.returncode == 0, dom.stderr[-2000:]

    html = dom.stdout
    assert re.findall(r'<figure id="(plot-[a-z]+)"><img', html) == [
        "plot-sends",
        "plot-latency",
        "plot-leaders",
        "plot-isr",
    ]
    for table in ("expectations", "checkers", "measured-times", "producers"):
        assert f'<table id="{table}">' in html, table
    assert "nothing-acknowledged-lost" in html and 'class="verdict VALID"' in html

    pixels = (imread(screenshot)[:, :, :3] * 255).round().astype(np.int16)
    assert pixels.shape[:2] == (2400, 1280)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, "the screenshot is (nearly) blank"
    shade = np.all(np.abs(pixels - np.array(FAULT_SHADE_RGB)) <= 3, axis=2).sum()
    # 4 plots x a 3 s window of 10 s x ~150 px of height: tens of thousands of pixels.
    assert shade > 20_000, f"only {shade} pixels of fault shading: the fault windows are not drawn"
