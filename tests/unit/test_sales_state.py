"""The sales state kept by the pipeline's sink: Spark's watermark rules, replays, the files.

tests/pipeline/test_streaming_watermark.py runs the same rules against Spark's own stateful
aggregation; these tests pin each rule with hand-written batches.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from failsafe.pipeline.sales_state import (
    KEEP_FILES,
    BatchTotals,
    SalesState,
    SalesStateStore,
    WindowTotals,
    apply_batch,
    interval_us,
    state_from_json,
    state_to_json,
)

MINUTE = 60_000_000


def sums(window: int, product: str = "SF05", purchases: int = 1, revenue: str = "5.99", members: int = 0,
         last_event_s: float | None = None) -> BatchTotals:
    """Batch sums for the window starting at minute ``window``; the newest event defaults to 30 s into it."""
    start = window * MINUTE
    totals = WindowTotals(start, start + MINUTE, product, "Mango Magic", "Smoothies", purchases, purchases * 2,
                          Decimal(revenue), members)
    return BatchTotals(totals, start + int((30 if last_event_s is None else last_event_s) * 1_000_000))


def test_a_batch_adds_to_the_running_totals_and_emits_only_the_keys_it_touched():
    first = apply_batch(SalesState(), [sums(0, "A"), sums(0, "B", revenue="1.10")], 2 * MINUTE)
    second = apply_batch(first.state, [sums(0, "B", purchases=2, revenue="0.20", members=1)], 2 * MINUTE)

    assert [(t.product_id, t.purchases) for t in first.updated] == [("A", 1), ("B", 1)]
    (b,) = second.updated
    assert (b.product_id, b.purchases, b.quantity, b.revenue, b.member_purchases) == ("B", 3, 6, Decimal("1.30"), 1)
    assert b.member_share == pytest.approx(1 / 3)
    assert len(second.state.totals) == 2 and second.late_purchases == 0


def test_the_watermark_comes_from_the_batches_before_and_a_window_closed_by_the_last_ones_is_late():
    # Spark's test batches (12:00:30; 12:05:10; 12:00:45 and 12:04:30; 12:00:50), delay 1 minute, no no-data batches.
    noon = 12 * 60
    one = apply_batch(SalesState(), [sums(noon, last_event_s=30)], MINUTE)
    assert one.state.watermark_us == noon * MINUTE + 30 * 1_000_000 - MINUTE  # max event 12:00:30 minus 1 minute
    two = apply_batch(one.state, [sums(noon + 5, last_event_s=10)], MINUTE)
    assert two.state.watermark_us == (noon + 4) * MINUTE + 10 * 1_000_000  # 12:04:10
    assert two.state.late_watermark_us == one.state.watermark_us  # batch two's own watermark, 11:59:30

    three = apply_batch(two.state, [sums(noon, last_event_s=45), sums(noon + 4, last_event_s=30)], MINUTE)
    # 12:00:45 is counted: its window ended after 11:59:30, the watermark of the batch before (Spark: the same).
    assert three.late_purchases == 0
    assert [(t.window_start_us, t.purchases) for t in three.updated] == [(noon * MINUTE, 2), ((noon + 4) * MINUTE, 1)]
    # ... and its window leaves the state after the batch, which ran with the watermark 12:04:10.
    assert sorted(key[0] for key in three.state.totals) == [(noon + 4) * MINUTE, (noon + 5) * MINUTE]

    four = apply_batch(three.state, [sums(noon, last_event_s=50)], MINUTE)
    assert four.late_purchases == 1 and four.updated == []  # window 12:00-12:01 ended before 12:04:10
    assert four.state.watermark_us == three.state.watermark_us  # 12:00:50 - 1 minute is older than the watermark


def test_a_window_ending_exactly_at_the_last_batchs_watermark_is_late():
    state = SalesState(watermark_us=MINUTE, late_watermark_us=MINUTE)
    result = apply_batch(state, [sums(0, last_event_s=59)], MINUTE)
    assert result.late_purchases == 1 and result.updated == []


def test_an_empty_batch_keeps_the_watermark_and_closes_the_windows_it_passed():
    state = apply_batch(SalesState(), [sums(10)], MINUTE).state
    again = apply_batch(state, [], MINUTE)
    assert again.state.watermark_us == state.watermark_us and again.state.late_watermark_us == state.watermark_us
    assert again.updated == [] and again.late_purchases == 0


batches = st.lists(st.lists(st.tuples(st.integers(0, 5), st.sampled_from("ABC"), st.integers(1, 5)), max_size=6), max_size=6)


@given(batches)
def test_without_late_data_the_running_totals_equal_one_sum_over_all_batches(plan):
    state, latest = SalesState(), {}
    for batch in plan:
        result = apply_batch(state, [sums(w, p, purchases=n) for w, p, n in batch], 365 * 24 * 60 * MINUTE)
        state = result.state
        latest |= {t.key: t.purchases for t in result.updated}
    expected: dict[tuple[int, str], int] = {}
    for batch in plan:
        for w, p, n in batch:
            expected[(w * MINUTE, p)] = expected.get((w * MINUTE, p), 0) + n
    assert latest == expected


@given(batches)
def test_a_replay_from_the_same_state_gives_the_same_rows_and_state(plan):
    state = SalesState()
    for batch in plan:
        rows = [sums(w, p, purchases=n, last_event_s=n * 7) for w, p, n in batch]
        once, replayed = apply_batch(state, rows, MINUTE), apply_batch(state, rows, MINUTE)
        assert once == replayed
        state = once.state


def test_the_state_survives_its_file_to_the_cent():
    state = apply_batch(SalesState(), [sums(3, "A", revenue="0.10"), sums(3, "B", revenue="1234567.89")], MINUTE).state
    state = apply_batch(state, [sums(4, "A")], MINUTE).state
    assert state.late_watermark_us > 0
    assert state_from_json(state_to_json(state, 7), "7.json") == state


def test_a_state_file_of_another_version_is_refused():
    with pytest.raises(ValueError, match="sales state version 99"):
        state_from_json('{"version": 99, "watermark_us": 0, "totals": []}', "3.json")


def test_the_store_gives_the_state_before_a_batch_and_ignores_a_failed_attempt_of_it(tmp_path):
    store = SalesStateStore(tmp_path / "state")
    assert store.before(0) == SalesState()
    first = apply_batch(SalesState(), [sums(1)], MINUTE).state
    store.write(0, first)
    store.write(1, apply_batch(first, [sums(2)], MINUTE).state)  # batch 1 wrote its state, then failed before Spark committed it
    assert store.before(1) == first  # the replay of batch 1 starts from batch 0's state again


def test_the_store_keeps_only_the_newest_files(tmp_path):
    store = SalesStateStore(tmp_path)
    for batch_id in range(KEEP_FILES + 5):
        store.write(batch_id, SalesState(watermark_us=batch_id))
    assert sorted(int(p.stem) for p in tmp_path.glob("*.json")) == list(range(5, KEEP_FILES + 5))
    assert store.before(KEEP_FILES + 5).watermark_us == KEEP_FILES + 4


def test_a_checkpoint_without_the_state_before_a_batch_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="no sales state before batch 4 .* delete the checkpoint"):
        SalesStateStore(tmp_path).before(4)


@pytest.mark.parametrize(("text", "expected"), [("2 minutes", 2 * MINUTE), ("1 minute", MINUTE), ("1 hour 30 minutes", 90 * MINUTE),
                                                ("10 seconds", 10_000_000), ("1 day", 24 * 60 * MINUTE), ("1.5 seconds", 1_500_000)])
def test_watermark_delays_as_spark_writes_them(text, expected):
    assert interval_us(text) == expected


@pytest.mark.parametrize("text", ["", "5", "two minutes", "2 fortnights", "2 minutes ago"])
def test_a_delay_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError, match="delay"):
        interval_us(text)
