"""A campaign's summary (campaigns/stats.py), campaign.json and index.html (campaigns/index.py), on hand-written run
records."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from failsafe.campaigns.index import render_index, timeline, write_index
from failsafe.campaigns.stats import combination, read_campaign, summarise, write_campaign

DUP = "delivery.duplicate-acknowledged"
EVIL = "<script>alert(1)</script>"
CAMPAIGN = {
    "seed": 7,
    "workload": "acks-all",
    "faults": ["kill", "pause"],
    "envelope": "safe",
    "duration_s": 20.0,
    "runs": 8,
    "command": f"failsafe campaign --workload {EVIL}",
    "started_at": "2026-11-25T14:00:00Z",
    "cluster": {"brokers": 3},
}


def planned(fault: str, at_s: float, duration_s: float | None = 4.0, **aim: object) -> dict:
    return {"fault": fault, "at_s": at_s, "duration_s": duration_s, **aim}


def started(fault: str, start_s: float, stop_s: float) -> dict:
    return {
        "fault": fault,
        "started": True,
        "start_s": start_s,
        "stop_s": stop_s,
        "nodes": [1],
        "role": "leader of events-0",
    }


def not_started(fault: str, at_s: float, error: str) -> dict:
    return {"fault": fault, "started": False, "start_s": at_s, "stop_s": None, "error": error}


def record(
    run: int,
    verdict: str,
    plan: list[dict],
    faults: list[dict],
    *,
    anomalies: dict | None = None,
    violations: tuple = (),
    unavailability: tuple = (),
    lost: int = 0,
    wall_s: float = 40.0,
    name: str = "",
    run_dir: str = "",
    **extra: object,
) -> dict:
    return {
        "run": run,
        "seed": 7,
        "name": name or f"acks-all-s7-r{run:03d}",
        "dir": run_dir or f"/nowhere/acks-all-s7-r{run:03d}/t",
        "schedule": {"chaos_s": 20.0, "faults": plan},
        "verdict": verdict,
        "error": None,
        "anomalies": anomalies or {},
        "violations": list(violations),
        "known": [],
        "explanations": [],
        "lost_acknowledged": lost,
        "faults": faults,
        "unavailability": [{"fault": f, "max_unavailable_ms": m, "new_leader_ms": n} for f, m, n in unavailability],
        "wall_s": wall_s,
        "chaos_s": 20.0,
        "overhead_s": wall_s - 20.0,
        "phase_seconds": {"setup": 0.3, "chaos": 20.0, "heal": wall_s - 20.3},
    } | extra


def records() -> list[dict]:
    """kill alone twice (one with a pause that could not start), kill+pause twice (duplicates in both), pause once, one
    ERROR."""
    return [
        record(
            0, "VALID", [planned("kill", 2.6)], [started("kill", 2.7, 6.7)], unavailability=[("kill", 9120.5, 9050.0)]
        ),
        record(
            1,
            "INVALID",
            [planned("kill", 1.0), planned("pause", 3.0)],
            [started("kill", 1.1, 5.1), started("pause", 3.1, 7.1)],
            anomalies={DUP: 3},
            violations=[DUP],
            lost=2,
            unavailability=[("kill", 5000, 4000), ("pause", 1200, None)],
            wall_s=50.0,
        ),
        record(
            2,
            "KNOWN",
            [planned("pause", 0.5), planned("kill", 9.0)],
            [started("pause", 0.6, 4.6), started("kill", 9.1, 13.1)],
            anomalies={DUP: 1},
            violations=[DUP],
            unavailability=[("kill", 7000, 6000), ("pause", 800, None)],
        ),
        record(
            3,
            "VALID",
            [planned("kill", 1.0), planned("pause", 2.0)],
            [started("kill", 1.1, 5.1), not_started("pause", 2.1, "events-1 has no in-sync follower")],
            unavailability=[("kill", 3000, 2500)],
            wall_s=30.0,
        ),
        record(4, "ERROR", [planned("kill", 1.0)], [], wall_s=5.0, error="WaitTimeout: no leader for events-0 in 30s"),
        record(
            5,
            "UNKNOWN",
            [planned("pause", 4.0)],
            [started("pause", 4.1, 8.1)],
            anomalies={"order.<img src=x>": 1},
            name=EVIL,
            explanations=[{"checker": "order", "anomaly": "x", "text": f"offset 4 {EVIL} before 3"}],
            known=[{"anomaly": "order.x", "count": 1, "reference": "javascript:alert(1)"}],
        ),
    ]


def test_combination_is_the_sorted_fault_types_that_started() -> None:
    assert combination(records()[2]) == "kill+pause"
    assert combination(records()[3]) == "kill"
    assert combination(records()[4]) == "none"


def test_summary_counts_verdicts_and_lost_writes() -> None:
    summary = summarise(CAMPAIGN, records())
    assert summary["verdicts"] == {"VALID": 2, "KNOWN": 1, "INVALID": 1, "UNKNOWN": 1, "ERROR": 1}
    assert summary["verdict"] == "INVALID"
    assert summary["runs_by_verdict"]["VALID"] == [0, 3]
    assert summary["runs_by_verdict"]["ERROR"] == [4]
    assert (summary["runs_asked"], summary["runs_done"]) == (8, 6)
    assert (summary["lost_acknowledged"], summary["lost_acknowledged_runs"]) == (2, [1])


def test_campaign_verdict_puts_error_above_unknown_and_none_without_runs() -> None:
    rs = records()
    assert summarise(CAMPAIGN, [rs[4], rs[5], rs[0]])["verdict"] == "ERROR"
    assert summarise(CAMPAIGN, [])["verdict"] is None


def test_an_anomaly_is_counted_in_k_of_n_runs_per_combination_and_error_runs_count_for_none() -> None:
    summary = summarise(CAMPAIGN, records())
    assert summary["combinations"] == {"kill": 2, "kill+pause": 2, "pause": 1}
    dup = summary["anomalies"][DUP]
    assert (dup["runs"], dup["total"], dup["run_indices"], dup["decided_runs"]) == (2, 4, [1, 2], 2)
    assert dup["combinations"] == {
        "kill": {"runs": 0, "of": 2},
        "kill+pause": {"runs": 2, "of": 2},
        "pause": {"runs": 0, "of": 1},
    }
    assert summary["anomalies"]["order.<img src=x>"]["decided_runs"] == 0


def test_unstarted_faults_are_counted_per_type_and_leave_the_combination() -> None:
    summary = summarise(CAMPAIGN, records())
    assert summary["not_started"] == {
        "pause": {"count": 1, "of": 4, "run_indices": [3], "example": "events-1 has no in-sync follower"}
    }


def test_unavailability_is_spread_per_fault_type() -> None:
    per_type = summarise(CAMPAIGN, records())["unavailability"]
    assert set(per_type) == {"kill", "pause"}
    assert per_type["kill"]["started"] == 4
    assert per_type["kill"]["max_unavailable_ms"] == {
        "n": 4,
        "median": 6000.0,
        "p95": 9120.5,
        "min": 3000.0,
        "max": 9120.5,
    }
    assert per_type["kill"]["new_leader_ms"] == {"n": 4, "median": 5000.0, "p95": 9050.0, "min": 2500.0, "max": 9050.0}
    assert per_type["pause"]["max_unavailable_ms"] == {
        "n": 2,
        "median": 1000.0,
        "p95": 1200.0,
        "min": 800.0,
        "max": 1200.0,
    }
    assert per_type["pause"]["new_leader_ms"] is None


def test_wall_and_overhead_are_spread_over_every_run() -> None:
    summary = summarise(CAMPAIGN, records())
    assert summary["wall_s"] == {"n": 6, "median": 40.0, "p95": 50.0, "min": 5.0, "max": 50.0}
    assert summary["overhead_s"]["max"] == 30.0
    assert summary["phase_seconds"]["chaos"]["n"] == 6


def test_campaign_json_round_trips_and_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "c" / "campaign.json"
    write_campaign(path, CAMPAIGN, records()[:2])
    write_campaign(path, CAMPAIGN, records())
    data = read_campaign(path)
    assert data == json.loads(
        json.dumps({"campaign": CAMPAIGN, "summary": summarise(CAMPAIGN, records()), "runs": records()})
    )
    assert read_campaign(path.parent) == data
    assert sorted(p.name for p in path.parent.iterdir()) == ["campaign.json"]


def test_a_failed_rewrite_keeps_the_last_campaign_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_campaign(tmp_path / "campaign.json", CAMPAIGN, records()[:1])

    def broken(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_campaign(path, CAMPAIGN, records())
    assert read_campaign(path)["summary"]["runs_done"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaign.json"]


def _campaign_dir(tmp_path: Path) -> tuple[Path, list[dict]]:
    """A campaign directory whose runs live in it (one with a space in its name), each with its files but the ERROR
    run's report."""
    directory = tmp_path / "acks-all-s7"
    rs = records()
    for r in rs:
        run_dir = directory / f"{r['name'] if r['run'] != 5 else 'odd'} dir" / "20261125T140000Z"
        run_dir.mkdir(parents=True)
        (run_dir / "schedule.toml").write_text("")
        if r["verdict"] != "ERROR":
            (run_dir / "report.html").write_text("")
        r["dir"] = str(run_dir)
    return directory, rs


def _row(page: str, run: int) -> str:
    match = re.search(rf'<tr id="run-{run}".*?</tr>', page, re.S)
    assert match, f"no row for run {run}"
    return match.group(0)


def test_index_has_a_row_per_run_with_its_verdict_and_relative_links(tmp_path: Path) -> None:
    directory, rs = _campaign_dir(tmp_path)
    data = read_campaign(write_campaign(directory / "campaign.json", CAMPAIGN, rs))
    page = write_index(directory, data).read_text()
    for r in rs:
        assert f'<span class="verdict {r["verdict"]}">' in _row(page, r["run"])
    assert 'class="run invalid"' in _row(page, 1)
    assert "invalid" not in _row(page, 0).split(">")[0]
    assert 'href="acks-all-s7-r000%20dir/20261125T140000Z/report.html"' in _row(page, 0)
    assert 'href="acks-all-s7-r004%20dir/20261125T140000Z/schedule.toml"' in _row(page, 4)
    assert "no report" in _row(page, 4) and "report.html" not in _row(page, 4)
    assert str(tmp_path) not in page


def test_index_shows_each_anomaly_as_k_of_n_runs_per_combination(tmp_path: Path) -> None:
    page = render_index(tmp_path, {"campaign": CAMPAIGN, "runs": records()})
    section = page[page.index(f">{DUP}</h3>") : page.index('id="section-unavailability"')]
    assert "2 of 2 runs" in section and "0 of 2 runs" in section and "0 of 1 runs" in section
    assert '<a href="#run-1">1</a>, <a href="#run-2">2</a>' in section


def test_index_escapes_every_string_from_a_record(tmp_path: Path) -> None:
    page = render_index(tmp_path, {"campaign": CAMPAIGN, "runs": records()})
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="javascript' not in page


class _Tags(HTMLParser):
    """Every tag with its attributes, and the text of <style>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data


def test_index_loads_nothing_from_outside(tmp_path: Path) -> None:
    parsed = _Tags()
    parsed.feed(render_index(tmp_path, {"campaign": CAMPAIGN, "runs": records()}))
    assert not {tag for tag, _ in parsed.tags} & {"script", "link", "img", "iframe", "object", "embed", "image", "use"}
    assert not [attrs for _, attrs in parsed.tags if "src" in attrs or "xlink:href" in attrs]
    urls = [v for _, attrs in parsed.tags for k, v in attrs.items() if k in ("style", "fill") and v and "url(" in v]
    assert urls and all(re.fullmatch(r"url\(#\w+\)( #\w+)?", u) for u in urls)
    assert "url(" not in parsed.style and "@import" not in parsed.style
    hrefs = [attrs["href"] for tag, attrs in parsed.tags if "href" in attrs]
    assert hrefs and all(h and (h.startswith("#") or ":" not in h) for h in hrefs), hrefs


def test_each_planned_fault_is_one_span_and_one_that_did_not_start_is_marked(tmp_path: Path) -> None:
    page = render_index(tmp_path, {"campaign": CAMPAIGN, "runs": records()})
    for r in records():
        svg = re.search(r'<svg class="timeline".*?</svg>', _row(page, r["run"]), re.S)
        assert svg, f"run {r['run']} has no timeline"
        assert svg.group(0).count('class="fault-span ') == len(r["schedule"]["faults"])
    assert _row(page, 3).count('class="fault-span not-started"') == 1
    assert "events-1 has no in-sync follower" in _row(page, 3)
    assert _row(page, 4).count('class="fault-span unrecorded"') == 1


def test_overlapping_faults_get_lanes_of_their_own() -> None:
    r = record(
        0,
        "VALID",
        [planned("kill", 1.0, 8.0), planned("pause", 2.0, 3.0), planned("kill", 15.0, 2.0)],
        [started("kill", 1.0, 9.0), started("pause", 2.0, 5.0), started("kill", 15.0, 17.0)],
    )
    ys = [
        float(y)
        for y in re.findall(r'<g class="fault-span started">.*?<rect x="[\d.]+" y="([\d.]+)"', timeline(r, {}), re.S)
    ]
    assert len(ys) == 3 and ys[0] != ys[1] and ys[2] == ys[0]
