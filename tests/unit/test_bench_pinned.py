"""benchmarks/bench_pipeline_pinned.py: every thread of a process pinned, a child started pinned stays so."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest
from benchmarks.bench_pipeline import on_cpus
from benchmarks.bench_pipeline_pinned import cpu_seconds, pin

pytestmark = pytest.mark.skipif(psutil.cpu_count() < 2, reason="pinning away needs two CPUs")

# Three threads blocked on stdin besides the main one; "ready" once they all run.
THREADS = (
    "import sys, threading\n"
    "for _ in range(3): threading.Thread(target=sys.stdin.read, daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
)
AFFINITY = "import os; print(sorted(os.sched_getaffinity(0)))"
NESTED = f"import subprocess, sys; {AFFINITY}; subprocess.run([sys.executable, '-c', {AFFINITY!r}])"


def affinities(pid: int) -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(t.id)) for t in psutil.Process(pid).threads()}


def test_pin_moves_every_thread_and_back() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", THREADS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout.readline().strip() == "ready"
            assert len(psutil.Process(child.pid).threads()) >= 4
            pin([child.pid], {1})
            assert affinities(child.pid) == {frozenset({1})}
            every = set(range(psutil.cpu_count()))
            pin([child.pid], every)
            assert affinities(child.pid) == {frozenset(every)}
        finally:
            child.kill()


def test_a_child_started_on_a_cpu_and_what_it_starts_stay_there() -> None:
    out = subprocess.run(
        [sys.executable, "-c", NESTED], capture_output=True, text=True, check=True, preexec_fn=on_cpus({0})
    )
    assert out.stdout.split("\n")[:2] == ["[0]", "[0]"]
    assert on_cpus(None) is None


def test_cpu_seconds_counts_the_process_and_every_cpu() -> None:
    own, busy = cpu_seconds([os.getpid()])
    assert own > 0
    assert len(busy) == psutil.cpu_count() and all(b > 0 for b in busy)
