"""Explanations of anomalies, from hand-written histories: what, where, when, near which fault and leader change."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from failsafe.checkers import run_checkers
from failsafe.checkers.explain.sentences import explain
from failsafe.scenarios.kinds.lab import CHECKERS as LAB_CHECKERS
from tests.unit.test_checker_builders import (
    assign,
    at,
    client_config,
    declare,
    declared,
    fault,
    history,
    log_read,
    poll,
    rec,
    revoke,
    send,
    topology,
)


def phase(name: str, ms: float) -> dict:
    return {"time_ns": at(ms), "process": "runner", "type": "info", "f": "phase", "phase": name}


def results_of(h, **options) -> dict:
    return {"checkers": run_checkers(h, options, LAB_CHECKERS)}


def duplicate_history():
    return history(*duplicate_ops())


def duplicate_ops() -> list:
    """p0's value v7 lands at offsets 3 (its first, unacknowledged attempt) and 4 (acknowledged), after a preferred
    election moved the leader 2 -> 0."""
    return [
        phase("setup", 0),
        phase("chaos", 1_000),
        client_config("p0", acks="all", enable_idempotence="true", message_timeout_ms="10000"),
        topology(0, [(0, 2, [0, 2, 1], [0, 2, 1])]),
        topology(40_000, [(0, 2, [0, 2, 1], [0, 2, 1])]),
        {
            "time_ns": at(40_900),
            "process": "admin",
            "type": "info",
            "f": "elect-leaders",
            "elected": ["t-0"],
            "already": 0,
            "failed": {},
        },
        topology(41_000, [(0, 0, [0, 2, 1], [0, 2, 1])]),
        *fault(2, start_ms=39_000, stop_ms=39_500, nodes=[0], fault_name="restart"),
        *send("p0", 1, "v1", 0, ms=30_000),
        *send("p0", 2, "v2", 1, ms=30_100),
        *send("p0", 3, "v3", 2, ms=30_200),
        *send("p0", 7, "v7", 4, ms=39_300, latency_ms=2_100),
        assign("c0", [0], ms=0),
        poll("c0", [rec(0, "v1"), rec(1, "v2"), rec(2, "v3"), rec(3, "v7"), rec(4, "v7")], ms=42_000),
        log_read([rec(0, "v1"), rec(1, "v2"), rec(2, "v3"), rec(3, "v7"), rec(4, "v7")]),
    ]


def test_a_duplicate_names_both_offsets_the_leader_change_and_the_in_flight_setting() -> None:
    h = duplicate_history()
    explanations = explain(h, results_of(h))
    [dup] = [e for e in explanations if e["anomaly"] == "duplicate"]
    assert dup["checker"] == "delivery" and dup["value"] == "v7" and dup["offsets"] == [3, 4] and "error" not in dup
    sentence = dup["sentence"]
    assert (
        "value v7 was written twice to t-0, at offsets 3 (never acknowledged) and 4 (acknowledged 2.1 s after "
        "it was sent)" in sentence
    )
    assert "the leader moved from broker 2 to broker 0 (preferred leader election at 40.9 s)" in sentence
    assert (
        "max.in.flight=5 (default)" in sentence
        and "librdkafka 2.12.0" in sentence
        and "message.timeout.ms=10000" in sentence
    )
    # The restarted broker was no leader of t-0 but a follower in its ISR: said, since acks=all waits for it.
    assert "fault 2 (restart of broker 0; a follower of t-0, in its ISR) ended" in sentence
    assert dup["phase"] == "chaos" and [f["id"] for f in dup["faults"]] == [2]
    assert [(c["previous_leader"], c["leader"]) for c in dup["leadership"] if c["previous_leader"] is not None] == [
        (2, 0)
    ]
    assert {"f": "send", "type": "ok"}.items() <= dup["ops"][1].items() and dup["ops"][1]["offset"] == 4
    assert [op["offset"] for op in dup["ops"] if op["f"] == "poll"] == [3, 4]


def lost_history(v2_read: bool = False, may_lose: bool = False):
    """v2 acknowledged at offset 1 of t-1 while broker 1 led; broker 1 killed; broker 2, not in the ISR, took over; v2
    is gone.

    ``v2_read``: a consumer read v2 before broker 1 died (then the new leader's v3 took its offset). ``may_lose``: the
    scenario declared p0 (acks=1) may lose.
    """
    return history(
        declare(declared("p0", may_lose=may_lose)),
        phase("setup", 0),
        phase("chaos", 1_000),
        client_config("p0", acks="1"),
        topology(30_000, [(1, 1, [1, 2, 3], [1, 3])]),
        topology(41_600, [(1, 2, [1, 2, 3], [2])]),
        *fault(1, start_ms=32_500, stop_ms=45_100, nodes=[1]),
        *send("p0", 1, "v1", 0, ms=31_000, partition=1),
        *send("p0", 2, "v2", 1, ms=32_999, partition=1),
        *send("p0", 3, "v3", 1, ms=42_000, partition=1),
        assign("c0", [1], ms=0),
        *([poll("c0", [rec(0, "v1", partition=1), rec(1, "v2", partition=1)], ms=33_100)] if v2_read else []),
        poll("c0", [rec(0, "v1", partition=1), rec(1, "v3", partition=1)], ms=50_000),
        log_read([rec(0, "v1", partition=1), rec(1, "v3", partition=1)]),
    )


def test_a_lost_write_names_the_fault_window_and_the_last_leader() -> None:
    h = lost_history()
    results = results_of(h)
    explanations = [e for e in explain(h, results) if e["anomaly"] == "lost-not-in-log"]
    assert len(explanations) == 1
    sentence = explanations[0]["sentence"]
    assert sentence.startswith(
        "value v2 acknowledged at offset 1 of t-1 at 33.0 s (leader broker 1) was never read and is not in "
        "any broker's log"
    )
    assert "fault 1 (kill of broker 1; the leader of t-1) ran 32.5–45.1 s" in sentence
    assert "new leader broker 2 at 41.6 s, not in the ISR before the fault" in sentence
    assert "acks=1" in sentence


def test_losses_are_explained_even_when_the_scenario_allowed_them() -> None:
    h = lost_history(may_lose=True)
    results = results_of(h)
    assert results["checkers"]["delivery"]["valid"] is True
    assert [e["anomaly"] for e in explain(h, results) if e["checker"] == "delivery"] == ["lost-not-in-log"]


def test_an_example_whose_data_does_not_hold_together_gets_an_error_and_the_others_are_explained() -> None:
    h = duplicate_history()
    results = results_of(h)
    good = results["checkers"]["delivery"]["examples"]["duplicate"][0]
    # A copy list that does not match its offsets, and a lost write whose send is not in the history.
    results["checkers"]["delivery"]["examples"]["duplicate"] = [{**good, "partition": [0]}, good]
    results["checkers"]["delivery"]["examples"]["lost-not-in-log"] = [
        {"id": 99, "process": "p9", "topic": "t", "partition": 0, "offset": 9, "value": "x"}
    ]
    explanations = explain(h, results)
    errors = [e for e in explanations if "error" in e]
    assert len(errors) == 2 and all(e["sentence"] for e in errors)
    assert any(e["anomaly"] == "duplicate" and "error" not in e and "v7" in e["sentence"] for e in explanations)


def test_order_and_semantics_anomalies_are_explained_by_process_and_offsets() -> None:
    h = history(
        phase("chaos", 0),
        topology(0, [(0, 1, [1, 2], [1, 2])]),
        *send("p0", 1, "v1", 0, ms=1),
        *send("p0", 2, "v2", 1, ms=2),
        assign("c0", [0], ms=0),
        assign("c1", [0], ms=0),
        poll("c0", [rec(1, "v2")], ms=10),
        poll("c0", [rec(0, "v1")], ms=11),
        poll("c1", [rec(0, "v1"), rec(1, "v2")], ms=12),
    )
    explanations = explain(h, results_of(h))
    by_anomaly = {e["anomaly"]: e for e in explanations}
    assert (
        "c0 read offset 0 of t-0 after offset 1 in the same assignment" in by_anomaly["nonmonotonic-poll"]["sentence"]
    )
    assert "with no leader change or fault within 15.0 s" in by_anomaly["nonmonotonic-poll"]["sentence"]
    assert "error" not in by_anomaly["nonmonotonic-poll"]


def test_nothing_to_explain_in_a_valid_run() -> None:
    h = history(*send("p0", 1, "v1", 0), assign("c0", [0]), poll("c0", [rec(0, "v1")], ms=5), log_read([rec(0, "v1")]))
    assert explain(h, results_of(h)) == []
    assert explain(h, {}) == [] and explain(h, {"checkers": {"delivery": {"valid": "unknown", "error": "boom"}}}) == []


def _run_dir(tmp_path: Path) -> Path:
    flat = [op for item in duplicate_ops() for op in (item if isinstance(item, list) else [item])]
    (tmp_path / "history.jsonl").write_bytes(b"".join(orjson.dumps(op) + b"\n" for op in flat))
    return tmp_path


def test_failsafe_explain_prints_the_sentence_checking_the_run_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from failsafe.cli.main import main

    run_dir = _run_dir(tmp_path)
    assert main(["explain", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "delivery duplicate: value v7 was written twice to t-0, at offsets 3 (never acknowledged)" in out
    assert (run_dir / "results.json").is_file()
    assert json.loads((run_dir / "results.json").read_text())["explanations"][0]["value"] == "v7"
    assert main(["explain", str(run_dir), "v7", "--json"]) == 0
    assert [e["value"] for e in json.loads(capsys.readouterr().out)] == ["v7"]
    assert main(["explain", str(run_dir), "v1"]) == 0
    assert capsys.readouterr().out.strip() == "no anomaly involves value v1"


def test_failsafe_explain_of_a_value_not_written_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from failsafe.cli.main import main

    assert main(["explain", str(_run_dir(tmp_path)), "nobody:1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "no write of value 'nobody:1'" in err


def test_the_terminal_summary_prints_ten_sentences_then_points_to_failsafe_explain() -> None:
    import io

    from rich.console import Console

    from failsafe.reports.terminal import render_summary

    h = duplicate_history()
    results = results_of(h)
    results["valid"] = False
    results["explanations"] = explain(h, results) * 12
    console = Console(file=io.StringIO(), width=300)
    render_summary(console, results, h, run_dir="runs/x/1")
    text = console.file.getvalue()
    assert "Anomalies" in text and text.count("delivery duplicate: value v7 was written twice") == 10
    assert "... and 2 more: failsafe explain runs/x/1" in text


def test_report_html_has_an_anomalies_table_and_marks() -> None:
    from failsafe.reports.html import render_html

    h = duplicate_history()
    results = results_of(h)
    results["valid"] = False
    results["explanations"] = explain(h, results)
    page = render_html(results, h)
    assert 'id="section-anomalies"' in page and "value v7 was written twice" in page


def test_failover_and_rebalance_anomalies_name_the_fault() -> None:
    h = history(
        phase("chaos", 0),
        topology(0, [(0, 1, [1, 2], [1, 2]), (1, 1, [1, 2], [1, 2])]),
        topology(12_000, [(0, 2, [1, 2], [2]), (1, 2, [1, 2], [2])]),
        *fault(1, start_ms=1_000, stop_ms=14_000, nodes=[1]),
        *send("p0", 1, "v1", 0, ms=500),
        *send("p0", 2, "v2", 1, ms=15_000),
        assign("c0", [0], ms=0),
        assign("c1", [1], ms=0),
        poll("c0", [rec(0, "v1"), rec(1, "v2")], ms=16_000),
        *fault(2, start_ms=17_000, stop_ms=17_001, nodes=["c0"], fault_name="kill-consumer", target="consumer"),
    )
    results = results_of(h, availability={"max_unavailable_ms": 1000}, rebalance={"max_pause_ms": 10})
    by_anomaly = {e["anomaly"]: e for e in explain(h, results)}
    assert not any("error" in e for e in by_anomaly.values())
    assert by_anomaly["slow-failover"]["sentence"].startswith(
        "t-0 took no acknowledged write for 14500 ms around fault 1 (kill of broker 1; the leader of t-0) at 1.0 s"
    )
    assert "the leader moved from broker 1 to broker 2 at 12.0 s" in by_anomaly["slow-failover"]["sentence"]
    assert by_anomaly["never-reassigned"]["sentence"].startswith(
        "t-0, owned by c0 of group g, was never assigned again after c0 stopped at 17.0 s"
    )
    assert "during fault 2 (kill-consumer of c0)" in by_anomaly["slow-rebalance"]["sentence"]


def test_a_write_read_then_truncated_is_explained_with_what_its_offset_holds_now() -> None:
    h = lost_history(v2_read=True, may_lose=True)
    results = results_of(h)
    (explained,) = [e for e in explain(h, results) if e["anomaly"] == "lost-after-read"]
    assert explained["sentence"].startswith(
        "value v2 acknowledged at offset 1 of t-1 at 33.0 s (leader broker 1) was read, and is no longer in "
        "the log: it was truncated after it was read (the offset now holds v3)"
    )
    assert "fault 1 (kill of broker 1; the leader of t-1)" in explained["sentence"]


def test_a_slow_join_of_a_restarted_member_is_explained_as_a_join() -> None:
    h = history(
        phase("chaos", 0),
        assign("c0", [0], ms=0),
        assign("c1", [1], ms=0),
        *fault(1, start_ms=1_000, stop_ms=4_000, nodes=["c0"], fault_name="restart-consumer", target="consumer"),
        revoke("c0", [0], ms=1_050),
        assign("c1", [0], ms=1_500),
        revoke("c1", [0], ms=6_000),
        assign("c0.1", [0], ms=9_000),
    )
    results = results_of(h, rebalance={"max_pause_ms": 2_000})
    slow = [e for e in explain(h, results) if e["anomaly"] == "slow-rebalance"]
    assert [e.get("error") for e in slow] == [None]
    assert "had a partition without an owner for 5000 ms after c0.1 joined at 4.0 s" in slow[0]["sentence"]


def test_a_durable_writers_loss_and_a_silent_client_are_explained() -> None:
    h = history(
        declare(declared("p0"), declared("c9", "consumer", group="g9")),
        phase("setup", 0),
        client_config("p0", acks="all"),
        *send("p0", 1, "v1", 0, ms=10),
        *send("p0", 2, "v2", 1, ms=20),
        assign("c0", [0], ms=0),
        poll("c0", [rec(0, "v1")], ms=30),
        {**log_read([rec(0, "v1")]), "topic": "t", "partition": 0},
    )
    results = results_of(h)
    sentences = {e["checker"]: e["sentence"] for e in explain(h, results) if e["checker"] in ("durability", "clients")}
    assert sentences["durability"].startswith("value v2 acknowledged at offset 1 of t-0")
    assert "not in the final read of its partition" in sentences["durability"]
    assert (
        sentences["clients"]
        == "the scenario declared consumer c9 (c9) on t; it has no op at all in the history: it never started, "
        "or its ops were lost"
    )
