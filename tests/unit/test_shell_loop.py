"""The loop an open shell runs on a host (hosts/shell.py), run here by sh through pipes: no SSH needed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from failsafe.hosts.shell import ANSWER, LOOP


@pytest.fixture
def loop() -> Iterator[subprocess.Popen]:
    with subprocess.Popen(
        ["sh", "-c", LOOP], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        yield proc
        proc.kill()


def _ask(proc: subprocess.Popen, command: bytes, *, declared: int | None = None) -> tuple[int, bytes, bytes]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"%d\n" % (len(command) if declared is None else declared) + command)
    proc.stdin.flush()
    tag, status, out_bytes, err_bytes = proc.stdout.readline().split()
    assert tag == ANSWER
    return int(status), proc.stdout.read(int(out_bytes)), proc.stdout.read(int(err_bytes))


def test_each_answer_is_the_status_then_exactly_the_bytes_counted(loop: subprocess.Popen) -> None:
    assert _ask(loop, b"printf 'a\\nb'; printf 'err' >&2; exit 3") == (3, b"a\nb", b"err")
    assert _ask(loop, b"echo 'two\nlines'\necho third") == (0, b"two\nlines\nthird\n", b"")
    assert _ask(loop, b"") == (0, b"", b"")
    # A writer left in the background with the command's output open: the next answers stay whole and in step.
    assert _ask(loop, b"(sleep 0.2; echo late; echo late >&2) & echo now") == (0, b"now\n", b"")
    for _ in range(3):
        assert _ask(loop, b"sleep 0.15; echo next") == (0, b"next\n", b"")


def test_a_command_not_read_whole_is_not_run(loop: subprocess.Popen) -> None:
    assert loop.stdin is not None
    command = b"echo ran"
    loop.stdin.write(b"%d\n" % (len(command) + 5) + command)
    loop.stdin.close()  # the channel ends before the 5 bytes more it announced
    assert loop.stdout is not None
    tag, status, out_bytes, err_bytes = loop.stdout.readline().split()
    assert (tag, int(status), int(out_bytes)) == (ANSWER, 255, 0)
    assert b"not read whole" in loop.stdout.read(int(err_bytes))
