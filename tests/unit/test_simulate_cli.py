"""failsafe simulate sales on bad input: one line on stderr naming the problem, exit code 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import free_port_block, run_cli


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--count", "5", "--duration", "3"], ["--duration and --count cannot be used together"]),
        (["--rate", "-5"], ["--rate -5", "cannot be negative"]),
        (["--count", "0"], ["--count 0"]),
        (["--duration", "0"], ["--duration 0"]),
        (["--instances", "0"], ["--instances 0", "1 to 99"]),
        (["--instances", "100"], ["--instances 100"]),
        (["--malformed-every", "1"], ["--malformed-every 1"]),
        (["--seed", "-1"], ["--seed -1"]),
        (["--start-time", "yesterday"], ["--start-time 'yesterday'", "YYYY-MM-DD HH:MM:SS"]),
        (["--acks", "2"], ["--acks"]),
        (
            ["--rate", "10", "--start-time", "2024-08-25 13:00:00"],
            ["--start-time sets the accelerated clock's start", "--clock accelerated"],
        ),
        (
            ["--clock", "wall", "--start-time", "2024-08-25 13:00:00"],
            ["--start-time sets the accelerated clock's start"],
        ),
    ],
)
def test_bad_options(tmp_path: Path, args: list[str], fragments: list[str]) -> None:
    port = free_port_block(1)
    result = run_cli(
        "simulate", "sales", "--bootstrap-server", f"127.0.0.1:{port}", "--ledger", str(tmp_path / "ledger"), *args
    )
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "ledger").exists()


def test_bootstrap_that_is_not_host_and_port(tmp_path: Path) -> None:
    assert_one_line_error(
        run_cli("simulate", "sales", "--bootstrap-server", "localhost", "--count", "1"), "'localhost' is not HOST:PORT"
    )


def test_unreachable_cluster_is_a_bounded_wait(tmp_path: Path) -> None:
    port = free_port_block(1)
    result = run_cli(
        "simulate",
        "sales",
        "--bootstrap-server",
        f"127.0.0.1:{port}",
        "--timeout-s",
        "1",
        "--count",
        "1",
        "--ledger",
        str(tmp_path / "ledger"),
    )
    assert_one_line_error(result, "no Kafka broker answered", f"127.0.0.1:{port}", "within 1s")
    assert not (tmp_path / "ledger").exists()


def test_no_cluster_at_dir(tmp_path: Path) -> None:
    assert_one_line_error(
        run_cli("simulate", "sales", "--dir", str(tmp_path / "none"), "--count", "1"),
        "no failsafe cluster at",
        "failsafe up",
    )


def test_ledger_directory_with_other_files_is_refused_before_sending(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    port = free_port_block(1)
    result = run_cli("simulate", "sales", "--bootstrap-server", f"127.0.0.1:{port}", "--ledger", str(tmp_path))
    assert_one_line_error(result, "not a ledger", str(tmp_path))
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_an_old_ledger_survives_an_unreachable_cluster(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"format": 1, "complete": true}')
    port = free_port_block(1)
    result = run_cli(
        "simulate", "sales", "--bootstrap-server", f"127.0.0.1:{port}", "--timeout-s", "1", "--ledger", str(tmp_path)
    )
    assert_one_line_error(result, "no Kafka broker answered")
    assert (tmp_path / "manifest.json").read_text() == '{"format": 1, "complete": true}'


def test_auto_is_the_wall_clock_for_a_live_run_and_the_accelerated_one_as_fast_as_possible(tmp_path: Path) -> None:
    from failsafe.workloads.sales.run import SalesOptions

    options = SalesOptions(bootstrap_servers="127.0.0.1:9092", ledger=tmp_path / "ledger")
    assert [SalesOptions(**{**options.__dict__, "rate_per_s": r}).event_clock for r in (0.0, 5.0)] == [
        "accelerated",
        "wall",
    ]
    assert SalesOptions(**{**options.__dict__, "rate_per_s": 5.0, "clock": "accelerated"}).event_clock == "accelerated"
