"""Where a stuck worker is: faulthandler's dump read back, and a real worker dumping its stacks when the pool asks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from failsafe.waiting import wait_until
from failsafe.workloads.specs import ConsumerSpec
from failsafe.workloads.stacks import crash_reason, runs_python, stuck_at
from failsafe.workloads.txn.specs import CtpSpec, TxnProducerSpec

DUMP = """\
Thread 0x00007f6b9d7fa640 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 324 in wait
  File "/work/src/failsafe/workloads/worker.py", line 88 in _watch_stdin

Current thread 0x00007f6ba0b6e740 (most recent call first):
  File "/work/src/failsafe/workloads/txn_session.py", line 174 in commit
  File "/work/src/failsafe/workloads/ctp.py", line 93 in run_ctp
  File "/work/src/failsafe/workloads/worker.py", line 135 in main
  File "/work/src/failsafe/workloads/worker.py", line 150 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""


def test_the_main_threads_innermost_frames_are_read_from_a_dump() -> None:
    assert stuck_at(DUMP) == "txn_session.py:174 commit < ctp.py:93 run_ctp < worker.py:135 main"
    assert stuck_at(DUMP, frames=1) == "txn_session.py:174 commit"


def test_a_dump_cut_before_the_main_thread_says_nothing() -> None:
    assert stuck_at(DUMP.split("Current thread")[0]) is None and stuck_at("") is None


def test_a_thread_importing_a_module_is_not_taken_for_the_main_thread() -> None:
    importing = """Thread 0x00007f6b9d7fa640 (most recent call first):
  File "/usr/lib/python3.11/json/__init__.py", line 1 in <module>
  File "/work/src/failsafe/workloads/consumer.py", line 40 in decode

"""
    assert stuck_at(importing + DUMP) == "txn_session.py:174 commit < ctp.py:93 run_ctp < worker.py:135 main"


def test_a_crash_faulthandler_caught_is_quoted_by_what_came_before_it_and_where() -> None:
    log = "%4|1795|FAIL|rdkafka#producer-2| broker down\nFatal Python error: Segmentation fault\n\n" + DUMP
    assert crash_reason(log) == (
        "%4|1795|FAIL|rdkafka#producer-2| broker down | Fatal Python error: Segmentation fault, "
        "main thread in txn_session.py:174 commit"
    )
    assert crash_reason("worker-0: init_transactions of w: _TIMED_OUT") is None


def test_only_workers_that_stay_python_are_asked_for_stacks() -> None:
    assert runs_python(ConsumerSpec("c-0", ("t",))) and runs_python(
        TxnProducerSpec(process="w", topics=("a",), transactional_id="w")
    )
    assert not runs_python(CtpSpec("p", "in", "out", "g", "p", driver="kafka-java"))


def test_a_live_worker_dumps_its_stacks_when_the_pool_asks(tmp_path: Path) -> None:
    from failsafe.supervisor import Supervisor
    from failsafe.workloads.pool import WorkerPool

    lines: list[bytes] = []
    supervisor = Supervisor()
    recorder = SimpleNamespace(write_line=lines.append, record=lambda op: None)
    pool = WorkerPool(recorder=recorder, supervisor=supervisor, logs_dir=tmp_path)  # type: ignore[arg-type]
    # No broker at port 1: the consumer waits on, which is all this needs.
    worker = pool.start(ConsumerSpec("c-0", ("t",), bootstrap_servers="127.0.0.1:1"))
    try:
        wait_until(lambda: any(b'"client-config"' in line for line in lines), 60, "the worker did not start")
        where = pool._stuck_at(worker)
        assert where is not None and "main" in where and worker.alive(), (tmp_path / "c-0.log").read_text()[-2000:]
    finally:
        pool.kill("c-0")
        supervisor.stop_all()
        for pipe in (worker.child.popen.stdin, worker.child.popen.stdout):
            if pipe is not None:
                pipe.close()
