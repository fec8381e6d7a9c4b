"""report.html's Transactions section on hand-written histories: outcomes per writer, the timeline, the anomaly table,
cycles.

The story: writer p0 commits txn 1, aborts txn 2 and gets no answer to the commit of txn 3 (info); writer p1 commits txn
1 and never completes txn 2 (killed); a broker is killed from 15 to 45 ms. Times are milliseconds
(test_checker_builders.at)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from failsafe.checkers.txn.transactions import check
from failsafe.history.model import History
from failsafe.reports import series, write_report
from failsafe.reports.plots import left_margin
from failsafe.reports.txn_report import anomaly_rows, cycle_caption, cycles, outcome_rows, timeline_plot, txn_spans
from tests.unit.test_checker_builders import at, fault, history, log_read, poll, rec, send
from tests.unit.test_checker_transactions import into, txn, w

HEADERS = [
    "writer",
    "transactional id",
    "transactions",
    "committed",
    "aborted",
    "unknown",
    "never completed",
    "named by an anomaly",
]


def writers() -> History:
    return history(
        *txn("p0", 1, [w("a", 0)], ms=0),
        *txn("p0", 2, [w("b", 1)], ms=20, end="abort", outcome="fail"),
        *txn("p0", 3, [w("c", 2)], ms=40, outcome="info"),
        *txn("p1", 1, [w("d", 0, 1)], ms=5),
        *txn("p1", 2, [w("e", 1, 1)], ms=30, outcome=None),
        *fault(1, start_ms=15, stop_ms=45, nodes=[2]),
        poll("c0", [rec(0, "a"), rec(0, "d", 1)], ms=60),
    )


def results(txn_anomalies: object = (), examples: object = None) -> dict:
    return {
        "scenario": "txn",
        "valid": False,
        "checkers": {
            "transactions": {
                "valid": False,
                "counts": {"txns": 5},
                "examples": examples or {},
                "violations": ["aborted-read"],
                "txn_anomalies": list(txn_anomalies) if isinstance(txn_anomalies, tuple) else txn_anomalies,
            }
        },
    }


NAMED = (
    {"process": "p0", "txn": 2, "anomalies": ["aborted-read", "torn-transaction"]},
    {"process": "p1", "txn": 2, "anomalies": ["precommitted-read"]},
)


def _section(page: str) -> str:
    return page.split('<section id="section-transactions">', 1)[1].split("</section>", 1)[0]


def _table(html: str, table_id: str) -> tuple[list[str], list[list[str]]]:
    table = html.split(f'<table id="{table_id}">', 1)[1].split("</table>", 1)[0]
    headers = re.findall(r"<th>(.*?)</th>", table)
    rows = [
        re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1])
    ]
    return headers, rows


def _figures(html: str) -> dict[str, bytes]:
    found = re.findall(r'<figure id="([a-z0-9-]+)"><img [^>]*src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)
    return {name: base64.b64decode(data) for name, data in found}


def test_the_section_counts_each_writers_transactions_by_status(tmp_path: Path) -> None:
    page = write_report(tmp_path, results(NAMED), writers()).read_text(encoding="utf-8")
    section = _section(page)
    headers, rows = _table(section, "txn-outcomes")
    assert headers == HEADERS
    assert rows == [
        ["p0", "tx-p0", "3", "1", "1", "1", "0", "1"],
        ["p1", "tx-p1", "2", "1", "0", "1", "1", "1"],
        ["all", "—", "5", "2", "1", "2", "1", "2"],
    ]
    figures = _figures(section)
    assert list(figures) == ["plot-txns"] and b"<svg" in figures["plot-txns"]
    # The section comes before the plots over time, whose list is unchanged.
    assert page.index("section-transactions") < page.index("section-plots")
    assert [name for name in _figures(page) if name not in figures] == [
        "plot-sends",
        "plot-latency",
        "plot-leaders",
        "plot-isr",
    ]


def test_the_transactions_an_anomaly_names_are_listed_with_their_anomalies(tmp_path: Path) -> None:
    section = _section(write_report(tmp_path, results(NAMED), writers()).read_text(encoding="utf-8"))
    headers, rows = _table(section, "txn-anomalies")
    assert headers == ["writer", "txn", "transactional id", "status", "began s", "took ms", "anomalies"]
    # began s is on the plots' axis: seconds since the history's first event (p0's begin at 0 ms).
    assert rows == [
        ["p0", "2", "tx-p0", "aborted", "0.020", "11.0", "aborted-read, torn-transaction"],
        ["p1", "2", "tx-p1", "unknown", "0.030", "never completed", "precommitted-read"],
    ]


def test_a_clean_run_says_no_transaction_is_named(tmp_path: Path) -> None:
    section = _section(write_report(tmp_path, results(), writers()).read_text(encoding="utf-8"))
    assert 'id="txn-anomalies"' not in section and "Transactions named by an anomaly" in section and "None." in section
    assert "Dependency cycles" not in section


def test_a_history_without_transactions_has_no_section(tmp_path: Path) -> None:
    plain = history(*send("producer-0", 1, "v1", 0, ms=0), poll("c0", [rec(0, "v1")], ms=5))
    for res in ({}, {"checkers": {"delivery": {"valid": True, "counts": {}}}}, results()):
        page = write_report(tmp_path, res, plain).read_text(encoding="utf-8")
        assert "section-transactions" not in page and "plot-txns" not in page
        assert list(_figures(page)) == ["plot-sends", "plot-latency", "plot-leaders", "plot-isr"]


def _crossed() -> History:
    """Workers w1 and w2 each read the other's output into their own transaction: a G1c cycle of wr edges."""
    return history(
        *txn("w1", 1, [w("a", 0, topic="u")], ms=50),
        *txn("w2", 1, [w("b", 0, 1, topic="u")], ms=50),
        into("w1", 1, [rec(0, "b", 1, topic="u")], ms=55),
        into("w2", 1, [rec(0, "a", topic="u")], ms=55),
        log_read([rec(0, "a", topic="u"), rec(0, "b", 1, topic="u")]),
    )


def test_a_cycle_example_of_the_checker_is_drawn_as_a_graph(tmp_path: Path) -> None:
    h = _crossed()
    checked = check(h)
    assert checked["counts"]["G1c"] == 1
    page = write_report(tmp_path, {"valid": False, "checkers": {"transactions": checked}}, h).read_text(
        encoding="utf-8"
    )
    section = _section(page)
    figures = _figures(section)
    assert list(figures) == ["plot-txns", "plot-cycle-g1c-1"] and b"<svg" in figures["plot-cycle-g1c-1"]
    assert "G1c cycle 1: w1#1 →wr w2#1 (u: a); w2#1 →wr w1#1 (u: b)" in section
    _, rows = _table(section, "txn-anomalies")
    assert [(r[0], r[1], r[6]) for r in rows] == [
        ("w1", "1", "G1c, precommitted-read"),
        ("w2", "1", "G1c, precommitted-read"),
    ]


def test_one_graph_per_cycle_of_either_kind() -> None:
    def cycle(*names: str, kind: str) -> dict:
        txns = [{"process": n, "txn": 1} for n in names]
        return {
            "txns": txns,
            "edges": [
                {"from": t, "to": txns[(i + 1) % len(txns)], "type": kind, "topic": "t", "value": f"x{i}"}
                for i, t in enumerate(txns)
            ],
        }

    res = results(
        examples={
            "G0": [cycle("a", "b", "c", kind="ww")],
            "G1c": [cycle("a", "b", kind="wr"), cycle("c", "d", "e", "f", kind="wr")],
            "aborted-read": [{"process": "a", "txn": 1}],
        }
    )
    found = cycles(res)
    assert [(anomaly, number) for anomaly, number, _ in found] == [("G0", 1), ("G1c", 1), ("G1c", 2)]
    assert cycle_caption(*found[0]) == "G0 cycle 1: a#1 →ww b#1 (t: x0); b#1 →ww c#1 (t: x1); c#1 →ww a#1 (t: x2)"


def test_spans_run_from_begin_to_completion_or_to_the_end_of_the_run() -> None:
    h = writers()
    tl = series.timeline(h)
    assert tl is not None and tl.t0_ns == at(0)
    spans = {
        (p, t): row
        for p, t, *row in txn_spans(h, tl).select("process", "txn", "status", "open", "start_s", "end_s").iter_rows()
    }
    assert spans[("p0", 1)] == ["committed", False, 0.0, pytest.approx(0.011)]
    assert spans[("p0", 2)] == ["aborted", False, pytest.approx(0.02), pytest.approx(0.031)]
    assert spans[("p0", 3)][:2] == ["unknown", False]
    assert spans[("p1", 2)] == ["unknown", True, pytest.approx(0.03), pytest.approx(tl.end_s)]


def test_a_history_of_transactions_alone_has_a_timeline_and_a_margin_for_its_writers() -> None:
    h = history(*txn("a-rather-long-writer-name-0", 1, [], ms=0), *txn("a-rather-long-writer-name-0", 2, [], ms=20))
    tl = series.timeline(h)
    assert tl is not None and (tl.t0_ns, tl.end_ns) == (at(0), at(31))
    assert left_margin(h) > left_margin(writers())


def test_the_timeline_marks_each_named_transaction() -> None:
    h = writers()
    fig = timeline_plot(h, series.timeline(h), results(NAMED))
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert labels == ["committed", "aborted", "unknown", "never completed", "fault window", "anomaly (2)"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["p0", "p1"]


@pytest.mark.parametrize(
    "junk",
    [
        {"txn_anomalies": "many", "examples": {"G1c": "x", "G0": [{"txns": []}, 3]}},
        {"txn_anomalies": [None, {"process": "p0"}, {"process": "p0", "txn": 1, "anomalies": None}], "examples": []},
        {"error": "KeyError: 'txn'", "valid": "unknown"},
    ],
)
def test_a_malformed_or_failed_checker_result_still_renders(tmp_path: Path, junk: dict) -> None:
    page = write_report(tmp_path, {"checkers": {"transactions": junk}}, writers()).read_text(encoding="utf-8")
    section = _section(page)
    assert "plot-cycle" not in section and 'id="txn-outcomes"' in section
    if "error" in junk:
        assert "The transactions checker has no result." in section


def test_rows_of_a_transaction_the_history_does_not_hold_are_dashes() -> None:
    h = writers()
    named = results([{"process": "ghost", "txn": 9, "anomalies": ["lost-write"]}])
    assert anomaly_rows(h, named, series.timeline(h)) == [("ghost", "9", "—", "—", "—", "—", "lost-write")]
    assert outcome_rows(h, named)[-1] == ("all", "—", "5", "2", "1", "2", "1", "0")
