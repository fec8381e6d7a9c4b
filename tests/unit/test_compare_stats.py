"""failsafe compare's statistics (atlas/compare.py): a real difference is found, equal distributions are flagged no
more often than ALPHA says, and the pairing of stored cells by mode."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from rich.console import Console

from failsafe.atlas.compare import (
    ALPHA,
    INVALID,
    LOST,
    NOT_VALID,
    TIME_MEASURES,
    compare,
    fisher,
    mann_whitney,
    rich_tables,
    write_html,
    write_json,
)
from failsafe.scenarios.store.repeat import spread

A, B = "kraft-4.3.1", "kraft-4.4.0"
FAST = [1000, 1100, 1050, 990, 1020]
SLOW = [3000, 3100, 2950, 3050, 3020]
# Exact two-sided Mann-Whitney at 5 against 5, every value of one side below every value of the other: 2 / C(10, 5).
EXTREME_5_5 = 2 / 252


def flagged_rate(rng: np.random.Generator, n: int, trials: int, median_b_ms: float = 2000.0) -> float:
    """The share of ``trials`` pairs of n lognormal draws (sigma 0.5, medians 2 s and ``median_b_ms``) flagged."""
    flagged = 0
    for _ in range(trials):
        a = rng.lognormal(math.log(2000.0), 0.5, n)
        b = rng.lognormal(math.log(median_b_ms), 0.5, n)
        flagged += bool(mann_whitney(a.tolist(), b.tolist())["significant"])
    return flagged / trials


# Mann-Whitney


def test_a_known_difference_is_significant():
    t = mann_whitney(FAST, SLOW)
    assert t["p"] == pytest.approx(EXTREME_5_5)
    assert t["significant"] is True
    assert (t["n_a"], t["n_b"]) == (5, 5)
    assert t["u"] == 0.0
    assert t["ratio"] == pytest.approx(3020 / 1020)
    assert "why" not in t


def test_medians_and_p95_are_the_atlas_ones():
    t = mann_whitney(FAST, SLOW)
    assert (t["p50_a"], t["p95_a"]) == (spread(FAST)["median"], spread(FAST)["p95"])
    assert (t["p50_b"], t["p95_b"]) == (spread(SLOW)["median"], spread(SLOW)["p95"])


@pytest.mark.parametrize("n", [5, 10])
def test_two_draws_of_one_distribution_are_flagged_at_most_at_alpha(n):
    # 400 trials: a rate of ALPHA has a binomial standard error of sqrt(0.05 * 0.95 / 400) = 0.011, so an honest test
    # stays under ALPHA + 3 standard errors (0.083) but for about 1 seed in 500. Exact Mann-Whitney at small n is
    # conservative (at 5 against 5 the largest p below 0.05 is 0.032, so the rate is about 0.032), and the normal
    # approximation at 10 (with its continuity correction) is a little under 0.05 too.
    trials = 400
    rate = flagged_rate(np.random.default_rng(20240605 + n), n, trials)
    assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / trials)
    # ... and the test is not vacuous: it does flag some (about 13 of 400 expected at n=5, 20 at n=10).
    assert rate >= 0.01


def test_a_large_real_difference_is_found_at_n_10():
    # Medians 2 s against 6 s with sigma 0.5 (the spread of the atlas's kill -9 unavailability): found almost always.
    assert flagged_rate(np.random.default_rng(7), 10, 200, median_b_ms=6000.0) >= 0.95


def test_fewer_than_two_values_on_a_side_is_no_test():
    for a, b in (([1000.0], [2000.0, 3000.0]), ([], [2000.0, 3000.0]), ([1000.0, 1200.0], [])):
        t = mann_whitney(a, b)
        assert t["p"] is None and t["significant"] is None and t["u"] is None
        assert "fewer than 2" in t["why"]
    assert mann_whitney([], [])["p50_a"] is None


@pytest.mark.parametrize("n", [5, 12])
def test_identical_values_give_p_1(n):
    # n=12 takes the normal approximation, whose variance would be zero.
    t = mann_whitney([500.0] * n, [500] * n)
    assert t["p"] == 1.0 and t["significant"] is False
    assert t["ratio"] == 1.0


def test_three_runs_a_side_can_never_be_significant_and_says_so():
    t = mann_whitney([1.0, 2.0, 3.0], [10.0, 11.0, 12.0])
    assert t["p"] == pytest.approx(0.1) and t["min_p"] == pytest.approx(0.1)
    assert t["significant"] is False
    assert "no difference can reach p < 0.05" in t["why"]
    assert mann_whitney(FAST, SLOW)["min_p"] == pytest.approx(EXTREME_5_5)


def test_ratio_is_none_without_a_median_on_side_a():
    assert mann_whitney([0.0, 0.0, 0.0], [10.0, 20.0, 30.0])["ratio"] is None
    assert mann_whitney([], [10.0, 20.0])["ratio"] is None


# Fisher


def test_fisher_none_against_all_of_five_is_significant():
    f = fisher(0, 5, 5, 5)
    assert f["p"] == pytest.approx(EXTREME_5_5)
    assert f["significant"] is True


def test_fisher_one_against_two_of_five_is_not():
    f = fisher(1, 5, 2, 5)
    assert f["p"] == pytest.approx(1.0)
    assert f["significant"] is False
    assert "why" not in f  # 5 runs a side could show a difference; this one is not one


def test_fisher_without_runs_on_a_side_is_no_test():
    f = fisher(0, 0, 2, 5)
    assert f["p"] is None and f["significant"] is None and "no judged run" in f["why"]


def test_fisher_two_runs_a_side_can_never_be_significant():
    f = fisher(0, 2, 2, 2)
    assert f["significant"] is False and f["min_p"] == pytest.approx(1 / 3)
    assert "smallest p possible" in f["why"]


def test_fisher_refuses_more_showing_than_runs():
    with pytest.raises(ValueError, match="between 0 and the runs"):
        fisher(6, 5, 0, 5)


# compare()


def run(verdict: str = "VALID", unavailable_ms: float | None = 1000.0, **fields) -> dict:
    return {
        "run_dir": "runs/x",
        "verdict": verdict,
        "unavailable_ms": unavailable_ms,
        "followed_stall_ms": None,
        "new_leader_ms": None,
        "new_controller_ms": None,
        "rebalance_pause_ms": None,
        "lost_acknowledged": 0,
        "anomalies": {},
        **fields,
    }


def cell(mode: str, runs: list[dict], fault: str = "kill", profile: str = "defaults", client: str = "librdkafka"):
    key = {"fault": fault, "profile": profile, "client": client, "mode": mode}
    return {"format": 1, "id": "--".join(key.values()), "key": key, "kafka_version": mode.split("-")[-1], "runs": runs}


def test_cells_are_paired_by_fault_profile_and_client():
    cells = [
        cell(A, [run()] * 3),
        cell(B, [run()] * 3),
        cell(A, [run()] * 3, fault="pause"),
        cell(B, [run()] * 3, client="kafka-java"),
        cell("zookeeper-3.9.2", [run()] * 3),  # neither mode: left out, not unpaired
    ]
    result = compare(cells, A, B)
    assert result["modes"] == [A, B] and result["alpha"] == ALPHA and result["format"] == 1
    assert [p["cell"] for p in result["cells"]] == [{"fault": "kill", "profile": "defaults", "client": "librdkafka"}]
    pair = result["cells"][0]
    assert pair["label"] == "kill · defaults · librdkafka"
    assert pair["ids"] == {"a": [f"kill--defaults--librdkafka--{A}"], "b": [f"kill--defaults--librdkafka--{B}"]}
    assert [(u["label"], u["mode"], u["missing"]) for u in result["unpaired"]] == [
        ("pause · defaults · librdkafka", A, B),
        ("kill · defaults · kafka-java", B, A),
    ]
    assert set(pair["times"]) == {field for field, _ in TIME_MEASURES}


def test_none_and_missing_values_are_skipped_and_unjudged_runs_left_out():
    runs_a = [run(new_leader_ms=500.0), run(new_leader_ms=None), run(new_leader_ms=700.0), run()]
    runs_a[3].pop("new_leader_ms")
    runs_b = [run(new_leader_ms=400.0), run(new_leader_ms=450.0), run(verdict="ERROR", new_leader_ms=1.0)]
    pair = compare([cell(A, runs_a), cell(B, runs_b)], A, B)["cells"][0]
    assert pair["runs"] == {"a": 4, "b": 2}
    leader = pair["times"]["new_leader_ms"]
    assert (leader["n_a"], leader["n_b"]) == (2, 2)
    assert (leader["p50_a"], leader["p50_b"]) == (600.0, 425.0)
    assert pair["times"]["unavailable_ms"]["n_a"] == 4


def test_fewer_than_two_values_in_a_pair_gives_no_p_and_says_why():
    pair = compare([cell(A, [run(new_controller_ms=900.0), run()]), cell(B, [run()] * 2)], A, B)["cells"][0]
    controller = pair["times"]["new_controller_ms"]
    assert (controller["n_a"], controller["n_b"]) == (1, 0)
    assert controller["p"] is None and controller["significant"] is None
    assert "fewer than 2" in controller["why"]


def test_anomaly_loss_and_verdict_rows():
    runs_a = [run(), run(verdict="KNOWN", anomalies={"order.reordered": 3}), run()]
    runs_b = [
        run(verdict="INVALID", lost_acknowledged=4, anomalies={"delivery.lost": 4}),
        run(verdict="INVALID", lost_acknowledged=1, anomalies={"delivery.lost": 1, "order.reordered": 0}),
        run(verdict="UNKNOWN"),
    ]
    pair = compare([cell(A, runs_a), cell(B, runs_b)], A, B)["cells"][0]
    rows = pair["anomalies"]
    assert list(rows) == [LOST, INVALID, NOT_VALID, "delivery.lost", "order.reordered"]
    counts = {name: (r["k_a"], r["n_a"], r["k_b"], r["n_b"]) for name, r in rows.items()}
    assert counts == {
        LOST: (0, 3, 2, 3),
        INVALID: (0, 3, 2, 3),
        NOT_VALID: (1, 3, 3, 3),
        "delivery.lost": (0, 3, 2, 3),
        "order.reordered": (1, 3, 0, 3),  # a count of 0 is not showing it
    }
    assert pair["verdicts"] == {"a": {"KNOWN": 1, "VALID": 2}, "b": {"INVALID": 2, "UNKNOWN": 1}}
    assert all(r["significant"] is False for r in rows.values())  # 3 runs a side: Fisher's smallest p is 0.1


def test_compare_flags_a_known_difference():
    runs_a = [run(unavailable_ms=v) for v in FAST]
    runs_b = [run(unavailable_ms=v, verdict="INVALID", lost_acknowledged=2) for v in SLOW]
    result = compare([cell(A, runs_a), cell(B, runs_b)], A, B)
    label = "kill · defaults · librdkafka"
    assert result["significant"] == [
        f"{label} · unavailable_ms",
        f"{label} · {LOST}",
        f"{label} · {INVALID}",
        f"{label} · {NOT_VALID}",
    ]
    assert result["cells"][0]["times"]["unavailable_ms"]["p"] == pytest.approx(EXTREME_5_5)


def test_compare_flags_nothing_between_overlapping_samples():
    runs_a = [run(unavailable_ms=v, lost_acknowledged=k) for v, k in zip(FAST, (0, 1, 0, 0, 0), strict=True)]
    runs_b = [
        run(unavailable_ms=v, lost_acknowledged=k)
        for v, k in zip((1010, 1080, 995, 1060, 1000), (0, 0, 1, 1, 0), strict=True)
    ]
    result = compare([cell(A, runs_a), cell(B, runs_b)], A, B)
    assert result["significant"] == []
    assert result["cells"][0]["times"]["unavailable_ms"]["p"] > 0.5


def test_compare_needs_two_modes():
    with pytest.raises(ValueError, match="two modes"):
        compare([], A, A)


# Output


def hostile_result() -> dict:
    name = "<script>alert(1)</script>"
    runs_a = [run(unavailable_ms=v, anomalies={name: 1}) for v in FAST]
    runs_b = [run(unavailable_ms=v) for v in SLOW]
    return compare([cell(A, runs_a), cell(B, runs_b), cell(A, [run()], fault="<b>x</b>")], A, B)


def test_write_html_escapes_and_is_self_contained(tmp_path):
    path = write_html(hostile_result(), tmp_path / "compare.html")
    page = path.read_text()
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>" not in page
    assert "http" not in page and "src=" not in page
    for _, title in TIME_MEASURES:
        assert title in page
    assert 'class="sig"' in page and "SIGNIFICANT" in page
    assert "3.02 s" in page  # p50 of SLOW, shown as the atlas shows times


def test_write_json_round_trips(tmp_path):
    result = hostile_result()
    path = write_json(result, tmp_path / "out" / "compare.json")
    assert json.loads(path.read_text()) == result


def test_rich_tables_one_per_measure_then_counts_with_names_kept_literal():
    tables = rich_tables(hostile_result())
    assert len(tables) == len(TIME_MEASURES) + 1
    console = Console(record=True, width=250)
    for table in tables:
        console.print(table)
    text = console.export_text()
    assert "<script>alert(1)</script>" in text
    assert "SIGNIFICANT" in text and "kill · defaults · librdkafka" in text
