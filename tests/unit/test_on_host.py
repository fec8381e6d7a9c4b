"""A verifiable client on a host: its tool's times moved onto failsafe's clock by the host's offset (no SSH here)."""

from __future__ import annotations

from failsafe.workloads.verifiable.events import event_time_ns
from failsafe.workloads.verifiable.on_host import OnHost, tool_time_error_ns


def _on(offset_ns: int) -> OnHost:
    host = type("Host", (), {"name": "h2"})()
    return OnHost(
        ssh=type("Ssh", (), {"host": host})(),
        command=[],
        dir=None,
        offset_ns=offset_ns,
        error_ns=tool_time_error_ns(0.0005),
    )  # type: ignore[arg-type]


def test_a_host_clock_ahead_of_failsafes_moves_the_tools_times_back() -> None:
    event = {"name": "producer_send_success", "timestamp": 1_800_000_005_000}
    assert event_time_ns(event) == 1_800_000_005_000_000_000, "a tool here: its own time"
    event["timestamp_ns"] = _on(5_000_000_000).local_time_ns(event["timestamp"])
    assert event_time_ns(event) == 1_800_000_000_000_000_000


def test_the_client_config_op_records_the_offset_and_a_bound_that_covers_the_tools_milliseconds() -> None:
    assert _on(-300_000).config_fields() == {"host": "h2", "clock_offset_ns": -300_000, "clock_error_ns": 1_500_000}
