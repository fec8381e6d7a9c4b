"""The disk layer's error injection without FUSE: what each injection refuses, with which errno, and what it counts."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from failsafe.disk.injection import Injection, Injector, allocates


def _errno(call: Callable[[], object]) -> int | None:
    try:
        call()
    except OSError as e:
        return e.errno
    return None


@pytest.fixture
def sparse(tmp_path: Path):
    """A file of 8 KiB of data, then a hole up to 1 MiB (a truncation up)."""
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, b"d" * 8192, 0)
    os.ftruncate(fd, 1 << 20)
    yield fd
    os.close(fd)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "fill"}, "kind 'fill'"),
        ({"kind": "error", "ops": "writes"}, "ops 'writes'"),
        ({"kind": "error", "glob": ""}, "glob ''"),
        ({"kind": "full", "glob": "*.log"}, "kind 'full' takes no ops or glob"),
        ({"kind": "full", "ops": "read"}, "kind 'full' takes no ops or glob"),
    ],
)
def test_an_injection_it_cannot_carry_out_is_refused_naming_the_field(kwargs, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Injection(**kwargs)


def test_an_injection_travels_as_a_message_and_back() -> None:
    injection = Injection("error", "write", "*.log")
    assert Injection.from_message({"op": "inject", **injection.to_message()}) == injection
    with pytest.raises(ValueError, match="kind None"):
        Injection.from_message({"op": "inject"})


def test_allocates_past_the_end_and_into_holes_not_in_place(sparse: int) -> None:
    assert not allocates(sparse, 0, 8192)  # data, rewritten in place
    assert not allocates(sparse, 100, 0)
    assert allocates(sparse, 8192 + 4096, 10)  # inside the hole the truncation left
    assert allocates(sparse, 4096, 8192)  # starts in data, reaches into the hole
    assert allocates(sparse, (1 << 20) - 1, 2)  # past the end


@pytest.mark.parametrize("ops", ["read", "write", "both"])
def test_an_error_injection_fails_the_chosen_side_with_eio_and_counts_it(ops: str) -> None:
    injector = Injector()
    injector.inject(Injection("error", ops))
    reads, writes = ops in ("read", "both"), ops in ("write", "both")
    assert _errno(lambda: injector.check_io("read", "/p-0/00.log")) == (errno.EIO if reads else None)
    for op in ("write", "truncate", "fallocate", "fsync", "fdatasync", "fsyncdir"):
        assert _errno(lambda op=op: injector.check_io(op, "/p-0/00.log")) == (errno.EIO if writes else None)
    failed = injector.status()["failed"]["error"]
    assert failed == {
        "read": int(reads),
        **dict.fromkeys(("write", "truncate", "fallocate", "fsync", "fdatasync", "fsyncdir"), int(writes)),
    }


@pytest.mark.parametrize(
    ("glob", "path", "fails"),
    [
        ("*.log", "/p-0/00000000000000000000.log", True),  # "*" matches "/": any depth
        ("*.log", "/p-0/00000000000000000000.index", False),
        ("*.log", "/p-0", False),  # a directory (fsyncdir) by its own name
        ("p-0/*", "/p-0/00.index", True),  # the path under the mountpoint, without its leading slash
        ("p-0/*", "/p-1/00.index", False),
        ("/p-0/*", "/p-0/00.index", False),
        ("*.LOG", "/00.log", False),  # case counts, as on Linux
    ],
)
def test_a_glob_limits_an_error_injection_to_the_matching_paths(glob: str, path: str, fails: bool) -> None:
    injector = Injector()
    injector.inject(Injection("error", "both", glob))
    assert _errno(lambda: injector.check_io("write", path)) == (errno.EIO if fails else None)


def test_a_full_disk_refuses_allocations_and_new_names_with_enospc(sparse: int, tmp_path: Path) -> None:
    injector = Injector()
    assert _errno(lambda: injector.check_space("write", sparse, 1 << 20, 10)) is None  # not full yet
    assert _errno(lambda: injector.check_new_name("create", str(tmp_path / "new"))) is None
    injector.inject(Injection("full"))
    assert _errno(lambda: injector.check_space("write", sparse, 1 << 20, 10)) == errno.ENOSPC
    assert _errno(lambda: injector.check_space("fallocate", sparse, 8192, 1)) == errno.ENOSPC
    assert _errno(lambda: injector.check_space("write", sparse, 0, 8192)) is None
    assert _errno(lambda: injector.check_new_name("mkdir", str(tmp_path / "new"))) == errno.ENOSPC
    assert _errno(lambda: injector.check_new_name("create", str(tmp_path / "f"))) is None  # exists: create opens it
    assert _errno(lambda: injector.check_io("write", "/f")) is None  # full is not failing
    failed = injector.status()["failed"]
    assert {op: n for op, n in failed["full"].items() if n} == {"write": 1, "fallocate": 1, "mkdir": 1}
    assert not any(failed["error"].values())


def test_statfs_reports_no_free_block_only_while_full() -> None:
    injector = Injector()
    st = {"f_blocks": 100, "f_bfree": 40, "f_bavail": 30, "f_ffree": 7}
    assert injector.statfs(st) == st
    injector.inject(Injection("full"))
    assert injector.statfs(st) == {"f_blocks": 100, "f_bfree": 0, "f_bavail": 0, "f_ffree": 7}
    injector.clear()
    assert injector.statfs(st) == st


def test_both_kinds_can_be_in_force_and_each_is_cleared_on_its_own() -> None:
    injector = Injector()
    injector.inject(Injection("full"))
    injector.inject(Injection("error", "read"))
    injector.inject(Injection("error", "write", "*.log"))  # replaces the read errors
    assert injector.status()["injection"] == {
        "full": True,
        "error": {"ops": "write", "glob": "*.log"},
        "slow": None,
        "corrupt": None,
    }
    assert injector.clear("full") == ["full"]
    assert injector.status()["injection"] == {
        "full": False,
        "error": {"ops": "write", "glob": "*.log"},
        "slow": None,
        "corrupt": None,
    }
    assert injector.clear("full") == []
    assert injector.clear() == ["error"]
    assert _errno(lambda: injector.check_io("write", "/00.log")) is None
    with pytest.raises(ValueError, match="kind 'disk-full'"):
        injector.clear("disk-full")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "slow"}, "needs delay_ms above 0 or a rate_mb_s cap"),
        ({"kind": "slow", "delay_ms": -1.0}, "delay_ms -1.0"),
        ({"kind": "slow", "rate_mb_s": 0.0}, "a cap above 0"),
        ({"kind": "slow", "ops": "fsync", "delay_ms": 1.0}, "ops 'fsync'"),
        ({"kind": "error", "ops": "sync"}, "ops 'sync'"),  # a failing disk fails syncs with its writes
        ({"kind": "corrupt", "ops": "both"}, "corrupts reads"),
        ({"kind": "corrupt", "ops": "read", "bits": 0}, "at least 1 bit"),
    ],
)
def test_slow_and_corrupt_injections_refuse_what_they_cannot_do(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Injection(**kwargs)


def test_a_slow_injection_slows_only_its_ops_and_files() -> None:
    slow = Injection("slow", "sync", "*.log", delay_ms=1.0)
    assert slow.slows("fsync", "/t-0/00.log") and slow.slows("fsyncdir", "t-0/00.log")
    assert not slow.slows("write", "/t-0/00.log") and not slow.slows("fsync", "/t-0/leader-epoch-checkpoint")
    assert Injection("slow", "both", delay_ms=1.0).slows("read", "/x")
    assert Injection.from_message(slow.to_message()) == slow


def test_reads_come_back_with_their_bits_flipped_the_same_way_each_time_and_are_counted() -> None:
    injector = Injector()
    data = bytes(64)
    assert injector.read_back("/t-0/00.log", 0, data) == data  # nothing injected
    injector.inject(Injection("corrupt", "read", "t-0/*.log", bits=2, seed=9))
    wrong = injector.read_back("/t-0/00.log", 4096, data)
    assert sum(bin(b).count("1") for b in wrong) == 2
    assert injector.read_back("/t-0/00.log", 4096, data) == wrong  # the same read, the same wrong bytes
    assert injector.read_back("/t-0/00.log", 8192, data) != wrong  # another offset, other bits
    assert injector.read_back("/t-1/00.log", 4096, data) == data  # not its files
    assert injector.status()["corrupted"] == {"reads": 3, "bytes_read": 192}
    assert injector.clear("corrupt") == ["corrupt"] and injector.read_back("/t-0/00.log", 4096, data) == data
