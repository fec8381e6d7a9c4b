"""The terminal summary, report.html and the plotted series, on small hand-written histories."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from failsafe.history.load import history_from_ops
from failsafe.reports import render_summary, series, write_report
from failsafe.reports.summary import fault_rows, producer_rows, stall_rows

S = 1_000_000_000
MS = 1_000_000
T0 = 1_700_000_000 * S


def send(i: int, t_ms: int, outcome: str, done_ms: int, **extra: object) -> list[dict]:
    value = f"v{i}"
    invoke = {
        "time_ns": T0 + t_ms * MS,
        "process": "producer-0",
        "type": "invoke",
        "f": "send",
        "id": i,
        "topic": "orders",
        "key": None,
        "value": value,
    }
    complete = {
        "time_ns": T0 + done_ms * MS,
        "process": "producer-0",
        "type": outcome,
        "f": "send",
        "id": i,
        "topic": "orders",
        "key": None,
        "value": value,
        "partition": 0,
        **extra,
    }
    return [invoke, complete]


def poll(t_ms: int, *values_offsets: tuple[str, int]) -> dict:
    return {
        "time_ns": T0 + t_ms * MS,
        "process": "consumer-0",
        "type": "ok",
        "f": "poll",
        "group": "g",
        "records": [
            {"topic": "orders", "partition": 0, "offset": o, "key": None, "value": v} for v, o in values_offsets
        ],
    }


def topology(t_ms: int, leader: int, isr: list[int]) -> dict:
    return {
        "time_ns": T0 + t_ms * MS,
        "process": "topology",
        "type": "info",
        "f": "topology",
        "brokers": [0, 1, 2],
        "controller": 1000,
        "partitions": [
            {"topic": "orders", "partition": 0, "leader": leader, "replicas": [1, 2, 0], "isr": isr},
            {"topic": "orders", "partition": 1, "leader": 2, "replicas": [2, 0, 1], "isr": [2, 0, 1]},
        ],
    }


def ops() -> list[dict]:
    return [
        {"time_ns": T0, "process": "runner", "type": "info", "f": "phase", "phase": "warm-up"},
        *send(1, 0, "ok", 10, offset=0),
        *send(2, 100, "ok", 130, offset=1),
        poll(150, ("v1", 0), ("v2", 1)),
        {"time_ns": T0 + 1000 * MS, "process": "runner", "type": "info", "f": "phase", "phase": "chaos"},
        {
            "time_ns": T0 + 1000 * MS,
            "process": "nemesis",
            "type": "info",
            "f": "fault-start",
            "fault_id": 7,
            "fault": "kill",
            "target": "broker",
            "nodes": [1],
            "role": "leader of orders-0",
        },
        *send(3, 1100, "fail", 1200, error="NOT_ENOUGH_REPLICAS"),
        *send(4, 1200, "info", 2300, error="REQUEST_TIMED_OUT"),
        *send(5, 2400, "ok", 2450, offset=2),
        poll(2600, ("v5", 2), ("v4", 3)),
        {
            "time_ns": T0 + 3000 * MS,
            "process": "nemesis",
            "type": "info",
            "f": "fault-stop",
            "fault_id": 7,
            "fault": "kill",
            "target": "broker",
            "nodes": [1],
            "ok": True,
        },
        topology(0, 1, [1, 2, 0]),
        topology(1250, -1, [2, 0]),
        topology(1500, 2, [2, 0]),
        topology(3500, 2, [2, 0, 1]),
    ]


def results(valid: object = True) -> dict:
    return {
        "format": 1,
        "scenario": 'failover <kill> & "leader"',
        "valid": valid,
        "checkers": {
            "delivery": {
                "valid": valid,
                "counts": {"acknowledged": 3, "lost": 0 if valid is True else 1},
                "by_process": {"producer-0": {"acknowledged": 3, "lost": 0, "failed": 1, "unknown": 1, "recovered": 1}},
            },
            "availability": {
                "valid": True,
                "counts": {},
                "max_unavailable_ms": 1234.0,
                "median_new_leader_ms": 517.0,
                "faults": [
                    {
                        "fault_id": 7,
                        "fault": "kill",
                        "target": "broker",
                        "nodes": ["1"],
                        "rebalances_during": 0,
                        "max_unavailable_ms": 1234.0,
                        "affected_partitions": [
                            {
                                "topic": "orders",
                                "partition": 0,
                                "leader_before": 1,
                                "unavailable_ms": 1234.0,
                                "new_leader": 2,
                                "new_leader_ms": 517.0,
                            }
                        ],
                    }
                ],
            },
            "rebalance": {
                "valid": True,
                "counts": {},
                "max_pause_ms": 4321.0,
                "events": [
                    {"source": "fault", "fault_id": 7, "processes": ["consumer-1"], "group": "g", "pause_ms": 4321.0},
                    {"source": "crash", "fault_id": None, "processes": ["consumer-2"], "group": "g", "pause_ms": None},
                ],
            },
        },
        "expectations": [
            {
                "name": "nothing-acknowledged-lost",
                "valid": valid,
                "expected": "lost == 0",
                "observed": 0 if valid is True else 1,
            },
            {"name": "new-leader-within-5s", "valid": True, "expected": "new_leader_ms <= 5000", "observed": 517},
        ],
    }


def summary_text(results: dict, history=None) -> str:
    out = io.StringIO()
    render_summary(Console(file=out, width=100, no_color=True, color_system=None), results, history)
    return out.getvalue()


@pytest.fixture
def history():
    return history_from_ops(ops())


def test_terminal_summary_shows_verdict_expectations_and_measured_times(history) -> None:
    text = summary_text(results(), history)
    assert text.splitlines()[0].startswith("VALID")
    for needle in (
        "nothing-acknowledged-lost",
        "new-leader-within-5s",
        "lost == 0",
        "delivery",
        "availability",
        "rebalance",
        "kill broker",
        "orders-0",
        "1,234",
        "517",
        "4,321",
        "producer-0",
        "consumer crash",
        "never",
    ):
        assert needle in text, needle
    assert "orders-1" not in text  # the fault did not touch it
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "\x1b[" not in text


def test_terminal_summary_says_invalid_and_unknown() -> None:
    invalid = summary_text(results(valid=False))
    assert invalid.splitlines()[0].startswith("INVALID")
    assert re.search(r"nothing-acknowledged-lost .*INVALID", invalid)
    unknown = summary_text({"valid": "unknown", "checkers": {"order": {"valid": "unknown", "error": "KeyError: 'x'"}}})
    assert unknown.splitlines()[0].startswith("UNKNOWN")
    assert "error: KeyError" in unknown


def test_acks_matrix_table_has_one_row_per_producer(history) -> None:
    assert producer_rows(results()) == [("producer-0", "3", "0", "1", "1", "1")]
    text = summary_text(results(), history)
    row = next(line for line in text.splitlines() if line.strip().startswith("producer-0"))
    assert row.split() == ["producer-0", "3", "0", "1", "1", "1"]


def test_measured_times_row_per_fault(history) -> None:
    rows = fault_rows(results(), history)
    assert [r.cells() for r in rows] == [
        ("7", "kill broker", "1", "orders-0", "1,234", "517", "0", "4,321"),
        ("—", "consumer crash", "consumer-2", "—", "—", "—", "—", "never"),
    ]


def test_missing_checker_fields_show_a_dash_not_a_crash(history) -> None:
    bare = {
        "valid": True,
        "checkers": {"availability": {"valid": True, "faults": "?"}, "rebalance": "nonsense", "delivery": None},
        "expectations": [{"name": "x"}, "junk"],
    }
    rows = fault_rows(bare, history)
    assert [r.cells() for r in rows] == [("7", "kill broker", "1", "—", "—", "—", "—", "—")]
    assert "VALID" in summary_text(bare, history)


def test_send_rates_count_every_outcome_in_its_completion_bin(history) -> None:
    tl = series.timeline(history)
    assert tl is not None and tl.t0_ns == T0 and tl.bin_ns == 100 * MS
    rates = series.send_rates(history, tl)
    per_bin = {round(t * 10): (a, f, u) for t, a, f, u in rates.iter_rows()}
    assert len(per_bin) == 36  # 0 .. 3.5 s in 100 ms bins, empty bins included
    assert per_bin[0] == (10.0, 0, 0)  # one ok in a 0.1 s bin is 10 sends/s
    assert per_bin[12] == (0, 10.0, 0)
    assert per_bin[23] == (0, 0, 10.0)
    assert rates["acknowledged"].sum() * tl.bin_s == pytest.approx(3)


def test_latency_is_poll_time_minus_invoke_time(history) -> None:
    tl = series.timeline(history)
    lat = series.latency(history, tl).drop_nulls("p50_ms")
    # v1 150-0 and v2 150-100 in the 100 ms bin at 0.1 s; v5 2600-2400 and v4 2600-1200 at 2.6 s.
    assert lat["reads"].to_list() == [2, 2]
    assert lat["max_ms"].to_list() == [150.0, 1400.0]
    assert lat["p50_ms"].to_list() == [150.0, 1400.0]  # nearest rank: an observed latency, never an average


def test_leader_and_isr_runs_follow_the_topology_samples(history) -> None:
    tl = series.timeline(history)
    leaders = series.leader_runs(history, tl).filter(label="orders-0")
    assert leaders.select("value", "start_s", "end_s").rows() == [(1, 0.0, 1.25), (-1, 1.25, 1.5), (2, 1.5, 3.5)]
    isr = series.isr_runs(history, tl).filter(label="orders-0")
    assert isr.select("value", "start_s", "end_s").rows() == [(3, 0.0, 1.25), (2, 1.25, 3.5), (3, 3.5, 3.5)]
    assert [(w.start_s, w.end_s, w.open) for w in series.fault_windows(history, tl)] == [(1.0, 3.0, False)]


def _plots(page: str) -> list[str]:
    return re.findall(r'<figure id="(plot-[a-z]+)"><img [^>]*src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)


def test_html_report_is_self_contained_with_tables_and_plots(tmp_path: Path, history) -> None:
    scenario = {"name": "failover", "note": "<script>alert(1)</script>"}
    manifest = {"kafka_version": "4.3.1", "nodes": [0, 1, 2, 1000], "broker_configs": {"min.insync.replicas": "2"}}
    path = write_report(tmp_path, results(), history, scenario, manifest)
    assert path == tmp_path / "report.html"
    page = path.read_text(encoding="utf-8")
    for section in (
        "section-expectations",
        "section-checkers",
        "section-times",
        "section-producers",
        "section-plots",
        'id="manifest"',
        "Kafka 4.3.1",
        "nothing-acknowledged-lost",
        "1,234",
        "4,321",
    ):
        assert section in page, section
    assert "failover &lt;kill&gt; &amp; &quot;leader&quot;" in page
    assert "<kill>" not in page and "<script" not in page and "&lt;script&gt;" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page
    plots = _plots(page)
    assert [name for name, _ in plots] == ["plot-sends", "plot-latency", "plot-leaders", "plot-isr"]
    for _, data in plots:
        assert b"<svg" in base64.b64decode(data)
    assert "<details" in page and "min.insync.replicas" in page
    assert re.search(r"<title>[^<]*VALID</title>", page)


def test_html_report_of_an_invalid_run_says_invalid(tmp_path: Path, history) -> None:
    page = write_report(tmp_path, results(valid=False), history).read_text(encoding="utf-8")
    assert re.search(r"<title>[^<]*INVALID</title>", page)
    assert '<h1 id="title">' in page and 'class="verdict INVALID">INVALID<' in page.split("</h1>")[0]


@pytest.mark.parametrize("kept", [[], ["phase"], ["fault-start"], ["topology"], ["send", "phase"]])
def test_a_history_missing_reads_faults_or_topology_still_renders(tmp_path: Path, kept: list[str]) -> None:
    history = history_from_ops([op for op in ops() if op["f"] in kept])
    page = write_report(tmp_path, {}, history).read_text(encoding="utf-8")
    assert len(_plots(page)) == 4
    assert "UNKNOWN" in page
    assert summary_text({}, history).startswith("UNKNOWN")


def _with_stalls() -> dict:
    res = results()
    availability = res["checkers"]["availability"]
    availability["faults"][0]["stalls"] = {
        "led": {"partitions": 1, "max_stall_ms": 9200.0, "median_stall_ms": 9200.0, "open": 0, "examples": []},
        "follower": {
            "partitions": 4,
            "max_stall_ms": 9150.0,
            "median_stall_ms": 8800.0,
            "open": 0,
            "in_isr": 4,
            "examples": [],
        },
        "unreplicated": {"partitions": 2, "max_stall_ms": 310.0, "median_stall_ms": 250.0, "open": 1, "examples": []},
    }
    availability["stall_by_group"] = {
        group: {k: v for k, v in stall.items() if k != "examples"}
        for group, stall in availability["faults"][0]["stalls"].items()
    }
    availability["baseline_gap_ms"] = 120.0
    return res


def test_write_stalls_by_replica_role_in_terminal_and_html(tmp_path: Path, history) -> None:
    assert stall_rows(_with_stalls()) == [
        ("7", "led", "1", "9,200", "9,200"),
        ("7", "follower", "4", "9,150", "8,800"),
        ("7", "unreplicated", "2 (1 never acked)", "never", "250"),
    ]
    assert stall_rows(results()) == []
    text = summary_text(_with_stalls(), history)
    assert "Write stalls by replica role (baseline ack gap 120 ms)" in text
    row = next(line for line in text.splitlines() if "follower" in line)
    assert row.split() == ["7", "follower", "4", "9,150", "8,800"]
    assert "Write stalls" not in summary_text(results(), history)
    page = write_report(tmp_path, _with_stalls(), history).read_text(encoding="utf-8")
    section = page.split('<section id="section-stalls">', 1)[1].split("</section>", 1)[0]
    assert "Write stalls by replica role" in section and "<b>120 ms</b>" in section
    assert "<td>follower</td>" in section and '<td class="num">9,150</td>' in section
    assert "section-stalls" not in write_report(tmp_path, results(), history).read_text(encoding="utf-8")


def test_stall_rows_fall_back_to_stall_by_group_and_tolerate_junk() -> None:
    res = {
        "checkers": {
            "availability": {
                "faults": [{"fault_id": 1, "stalls": "?"}],
                "stall_by_group": {"all": {"partitions": 3, "max_stall_ms": 12000.0}, "x": 5},
            }
        }
    }
    assert stall_rows(res) == [("—", "all", "3", "12,000", "—")]
    assert stall_rows({"checkers": {"availability": None}}) == []


def test_a_network_faults_window_is_named_by_its_sides() -> None:
    from failsafe.history.ops import Family, fault_start, fault_stop

    # The sides are data in the history: nothing is parsed back from the role's words (which say something else here).
    start = fault_start(
        3,
        "isolate",
        target="network",
        nodes=[1],
        role="leader of orders-0",
        family=Family.NETWORK,
        label="{1} | {1000,0,2}",
        sides=[["1"], ["1000", "0", "2"]],
        one_way=False,
        time_ns=T0 + 1000 * MS,
    )
    stop = fault_stop(3, "isolate", True, 1, time_ns=T0 + 3000 * MS)
    history = history_from_ops([op for op in ops() if op.get("f") not in ("fault-start", "fault-stop")] + [start, stop])
    windows = series.fault_windows(history, series.timeline(history))
    assert [w.label for w in windows] == ["#3 isolate {1} | {1000,0,2}"]
    assert history.faults.row(0, named=True)["sides"] == [["1"], ["1000", "0", "2"]]


def test_a_network_fault_recorded_before_labels_is_still_named_by_its_sides() -> None:
    start = {
        "time_ns": T0 + 1000 * MS,
        "process": "nemesis",
        "type": "info",
        "f": "fault-start",
        "fault_id": 3,
        "fault": "isolate",
        "target": "network",
        "nodes": [1],
        "role": "leader of orders-0: partition {1} | {1000,0,2}",
    }
    stop = {
        "time_ns": T0 + 3000 * MS,
        "process": "nemesis",
        "type": "info",
        "f": "fault-stop",
        "fault_id": 3,
        "ok": True,
    }
    history = history_from_ops([op for op in ops() if op.get("f") not in ("fault-start", "fault-stop")] + [start, stop])
    assert [w.label for w in series.fault_windows(history, series.timeline(history))] == ["#3 isolate {1} | {1000,0,2}"]
    assert history.faults["family"].to_list() == ["network"]
