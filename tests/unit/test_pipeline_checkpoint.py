"""A checkpoint of an earlier pipeline is refused in one line before Spark starts; this pipeline's is resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failsafe.errors import UserError
from failsafe.pipeline.checkpoint import LAYOUT, LAYOUT_FILE, check_layout, write_layout
from failsafe.pipeline.intervals import interval_us

MINUTE = 60_000_000


def test_a_missing_or_empty_checkpoint_is_fresh_and_gets_the_marker(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    check_layout(checkpoint)
    checkpoint.mkdir()
    check_layout(checkpoint)
    write_layout(checkpoint)
    write_layout(checkpoint)
    assert json.loads((checkpoint / LAYOUT_FILE).read_text())["layout"] == LAYOUT
    (checkpoint / "sales-by-product").mkdir()
    check_layout(checkpoint)


@pytest.mark.parametrize(
    ("made", "says"),
    [
        ("sales-state", "kept its running totals on the driver"),
        ("dead-letters", "two-query pipeline"),
    ],
)
def test_a_checkpoint_of_an_earlier_pipeline_is_one_line_saying_to_start_fresh(
    tmp_path: Path, made: str, says: str
) -> None:
    checkpoint = tmp_path / "checkpoint"
    (checkpoint / "sales-by-product").mkdir(parents=True)
    (checkpoint / made).mkdir()
    with pytest.raises(UserError, match=says) as raised:
        check_layout(checkpoint)
    assert "\n" not in str(raised.value) and "start fresh" in str(raised.value)


def test_a_marker_of_another_layout_or_unreadable_is_refused(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / LAYOUT_FILE).write_text('{"layout": 2}')
    with pytest.raises(UserError, match="layout 2, this failsafe writes 3"):
        check_layout(checkpoint)
    (checkpoint / LAYOUT_FILE).write_text("not json")
    with pytest.raises(UserError, match="unreadable"):
        check_layout(checkpoint)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2 minutes", 2 * MINUTE),
        ("1 minute", MINUTE),
        ("1 hour 30 minutes", 90 * MINUTE),
        ("10 seconds", 10_000_000),
        ("1 day", 24 * 60 * MINUTE),
        ("1.5 seconds", 1_500_000),
    ],
)
def test_watermark_delays_as_spark_writes_them(text: str, expected: int) -> None:
    assert interval_us(text) == expected


@pytest.mark.parametrize("text", ["", "5", "two minutes", "2 fortnights", "2 minutes ago"])
def test_a_delay_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="delay"):
        interval_us(text)


def test_the_command_refuses_a_driver_state_checkpoint_in_one_line_before_it_starts_spark(tmp_path: Path) -> None:
    from tests.helpers import run_cli

    checkpoint = tmp_path / "checkpoint"
    (checkpoint / "sales-state").mkdir(parents=True)
    (checkpoint / "sales-state" / "7.json").write_text("{}")
    result = run_cli(
        "pipeline",
        "run",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--checkpoint",
        str(checkpoint),
        "--output",
        str(tmp_path / "out"),
    )
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "start fresh" in result.stderr and "Traceback" not in result.stderr
    assert (checkpoint / "sales-state" / "7.json").read_text() == "{}" and not (
        checkpoint / LAYOUT_FILE
    ).exists()  # nothing touched
