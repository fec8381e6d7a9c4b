"""Durability against retention: an acknowledged write below the log start offset of the final read is "deleted-early"
(lost) only when its topic keeps by time alone (cleanup.policy delete, retention.bytes -1) and the write was sent less
than retention.ms before the read; otherwise retention may have deleted it in time and it stays unverified."""

from __future__ import annotations

from typing import Any

import pytest

from failsafe.checkers import durability
from failsafe.history import ops
from failsafe.scenarios.store.check import check_history
from tests.unit.test_checker_builders import at, client_config, declared, finished, history, rec, send

READ_MS = 100_000.0  # the final read; the write below log start is sent 10 s before it
SENT_MS = READ_MS - 10_000
TIME_ONLY = {"retention_ms": 600_000, "retention_bytes": -1, "cleanup_policy": "delete"}


def _read(retention: dict[str, Any] | None, *, ms: float = READ_MS, start: int = 1) -> dict:
    """The final read of t-0: the log starts at ``start`` and holds "b" at offset 1."""
    return ops.log_read(
        "t",
        0,
        [rec(1, "b")],
        log_start_offset=start,
        high_watermark=2,
        time_ns=at(ms),
        retention=retention,
    )


def _history(*reads: dict, may_lose: bool = False, acks: str = "all"):
    """p's write "a" at offset 0 (sent 10 s before the read) and "b" at offset 1, then ``reads``."""
    return history(
        client_config("p", acks=acks),
        *send("p", 1, "a", 0, ms=SENT_MS),
        *send("p", 2, "b", 1, ms=SENT_MS + 1),
        *reads,
        finished(declared("p", may_lose=may_lose)),
    )


def _judged(h) -> tuple[dict, str]:
    return durability.check(h), check_history(h, None, [])["verdict"]


@pytest.mark.parametrize(
    "retention",
    [
        pytest.param(TIME_ONLY, id="kept-10-minutes"),
        pytest.param({**TIME_ONLY, "retention_ms": -1}, id="kept-forever"),
        pytest.param({**TIME_ONLY, "retention_ms": 10_001}, id="kept-a-moment-longer-than-its-age"),
    ],
)
def test_a_write_deleted_before_its_retention_elapsed_is_lost(retention: dict) -> None:
    result, verdict = _judged(_history(_read(retention)))
    assert result["valid"] is False and verdict == "INVALID"
    assert result["violations"] == ["lost"]
    counts = result["counts"]
    assert (counts["lost"], counts["lost-deleted-early"], counts["unverified"]) == (1, 1, 0)
    assert counts["unverified-below-log-start"] == 0 and counts["present"] == 1
    assert [(e["value"], e["fate"]) for e in result["examples"]["lost"]] == [("a", "deleted-early")]


@pytest.mark.parametrize(
    "retention",
    [
        pytest.param({**TIME_ONLY, "retention_ms": 5_000}, id="retention-elapsed"),
        pytest.param({**TIME_ONLY, "retention_ms": 10_000}, id="retention-elapsed-at-the-read"),
        pytest.param({**TIME_ONLY, "retention_bytes": 1000}, id="kept-by-size-too"),
        pytest.param({**TIME_ONLY, "cleanup_policy": "compact"}, id="compacted"),
        pytest.param({**TIME_ONLY, "cleanup_policy": "compact,delete"}, id="compacted-and-deleted"),
        pytest.param(None, id="retention-not-recorded"),
        pytest.param({"retention_bytes": -1, "cleanup_policy": "delete"}, id="retention-ms-not-recorded"),
        pytest.param({"retention_ms": 600_000, "cleanup_policy": "delete"}, id="retention-bytes-not-recorded"),
        pytest.param({"retention_ms": 600_000, "retention_bytes": -1}, id="cleanup-policy-not-recorded"),
    ],
)
def test_a_write_retention_may_have_deleted_is_unverified(retention: dict | None) -> None:
    result, verdict = _judged(_history(_read(retention)))
    assert result["valid"] == "unknown" and verdict == "UNKNOWN"
    assert result["violations"] == []
    counts = result["counts"]
    assert (counts["lost"], counts["lost-deleted-early"]) == (0, 0)
    assert (counts["unverified"], counts["unverified-below-log-start"]) == (1, 1)
    assert [(e["value"], e["fate"]) for e in result["examples"]["unverified"]] == [("a", "below-log-start")]


def test_retention_is_recorded_with_the_read_and_left_out_when_not_known() -> None:
    h = _history(_read(TIME_ONLY))
    row = h.log_reads.row(0, named=True)
    assert (row["retention_ms"], row["retention_bytes"], row["cleanup_policy"]) == (600_000, -1, "delete")
    older = _history(_read(None)).log_reads.row(0, named=True)
    assert (older["retention_ms"], older["retention_bytes"], older["cleanup_policy"]) == (None, None, None)
    assert "retention_ms" not in _read({"retention_ms": None, "cleanup_policy": "delete"})


def test_a_write_at_or_above_log_start_is_lost_whatever_the_retention() -> None:
    result, verdict = _judged(_history(_read({**TIME_ONLY, "retention_ms": 5_000}, start=0)))
    assert result["valid"] is False and verdict == "INVALID"
    assert (result["counts"]["lost"], result["counts"]["lost-deleted-early"]) == (1, 0)
    assert result["examples"]["lost"][0]["fate"] == "lost"


def test_a_write_of_a_partition_not_read_is_unverified_even_within_retention() -> None:
    failed = ops.log_read("t", 0, error="timeout", time_ns=at(READ_MS), retention=TIME_ONLY)
    result, _ = _judged(_history(failed))
    assert result["valid"] == "unknown"
    assert (result["counts"]["lost-deleted-early"], result["counts"]["unverified-not-read"]) == (0, 2)


def test_the_strictest_retention_any_read_saw_decides() -> None:
    """Two reads of the partition: a write is deleted early only against the shortest retention either described."""
    both = _history(_read(TIME_ONLY), _read({**TIME_ONLY, "retention_ms": 5_000}, ms=READ_MS - 1))
    assert durability.check(both)["valid"] == "unknown"
    forever_then_short = _history(_read({**TIME_ONLY, "retention_ms": -1}), _read({**TIME_ONLY, "retention_ms": 5_000}))
    assert durability.check(forever_then_short)["valid"] == "unknown"
    by_size_once = _history(_read(TIME_ONLY), _read({**TIME_ONLY, "retention_bytes": 1000}))
    assert durability.check(by_size_once)["valid"] == "unknown"
    forever_twice = _history(_read({**TIME_ONLY, "retention_ms": -1}), _read({**TIME_ONLY, "retention_ms": -1}))
    assert durability.check(forever_twice)["counts"]["lost-deleted-early"] == 1


def test_a_compacting_or_undescribed_read_leaves_the_write_unverified() -> None:
    """A write is deleted early only when every ok read described a time-only retention: one read that saw compaction,
    or one that could not describe the topic, leaves it unverified, in either order."""
    for other in ({**TIME_ONLY, "cleanup_policy": "compact"}, {**TIME_ONLY, "cleanup_policy": "compact,delete"}, None):
        for reads in (
            (_read(TIME_ONLY), _read(other, ms=READ_MS - 1)),
            (_read(other, ms=READ_MS - 1), _read(TIME_ONLY)),
        ):
            result = durability.check(_history(*reads))
            assert result["valid"] == "unknown", (other, result["counts"])
            assert result["counts"]["lost-deleted-early"] == 0


def test_the_age_is_taken_at_the_last_ok_read() -> None:
    """Read at 100 s and again at 200 s with retention 60 s: the write (sent at 90 s) was 110 s old at the last read."""
    later = _history(_read({**TIME_ONLY, "retention_ms": 60_000}), _read(None, ms=READ_MS + 100_000))
    result = durability.check(later)
    assert result["valid"] == "unknown" and result["counts"]["unverified-below-log-start"] == 1


def test_a_writer_that_may_lose_is_counted_and_decides_nothing() -> None:
    result = durability.check(_history(_read(TIME_ONLY), may_lose=True, acks="1"))
    assert result["valid"] is True and result["violations"] == []
    assert (result["counts"]["lost-allowed"], result["counts"]["lost-deleted-early"]) == (1, 1)
