from __future__ import annotations

import orjson
import pytest

from failsafe.checkers import ALWAYS, CHECKERS, combine_validity, run_checkers, with_always
from failsafe.scenarios.kinds import kind_named
from failsafe.scenarios.kinds.lab import CHECKERS as LAB_CHECKERS
from tests.unit.test_checker_builders import (
    assign,
    client_event,
    declared,
    fault,
    finished,
    history,
    log_read,
    poll,
    rec,
    send,
    topology,
)


def _busy_history():
    return history(
        topology(0, [(0, 1, [1, 2, 3], [1, 2, 3]), (1, 2, [2, 3, 1], [2, 3, 1])]),
        assign("c0", [0], ms=0),
        assign("c1", [1], ms=0),
        *send("p0", 1, "a", 0, ms=1),
        *send("p0", 2, "b", 0, ms=2, partition=1),
        *send("p0", 3, "c", None, ms=3, outcome="info"),
        poll("c0", [rec(0, "a", key="k")], ms=10),
        poll("c1", [rec(0, "b", partition=1)], ms=10),
        *fault(1, start_ms=20, stop_ms=30, nodes=[1]),
        *fault(2, start_ms=40, stop_ms=None, nodes=["c1"], fault_name="kill-consumer", target="consumer"),
        client_event("crash", "c1", ms=41),
        assign("c0", [0, 1], ms=50),
        topology(60, [(0, 2, [1, 2, 3], [2, 3]), (1, 2, [2, 3, 1], [2, 3])]),
        *send("p0", 4, "d", 1, ms=70),
        poll("c0", [rec(1, "d")], ms=80),
        log_read([rec(0, "a", key="k"), rec(1, "d")]),
        log_read([rec(0, "b", partition=1)]),
        finished(declared("p0"), declared("c0", "consumer", group="g"), declared("c1", "consumer", group="g")),
    )


def test_the_checkers_are_named() -> None:
    assert list(LAB_CHECKERS) == ["delivery", "order", "semantics", "availability", "rebalance"]
    assert set(LAB_CHECKERS) < set(CHECKERS)


def test_every_kind_is_judged_by_the_checkers_every_run_gets_first() -> None:
    assert ALWAYS == ("completeness", "durability", "clients")
    for name in ("lab", "txn", "share", "dr", "pipeline"):
        assert kind_named(name).checkers[:3] == ALWAYS, name
    assert with_always(["delivery", "durability"]) == (*ALWAYS, "delivery")


def test_every_checker_runs_and_its_result_is_json() -> None:
    results = run_checkers(_busy_history(), None, LAB_CHECKERS)
    assert set(results) == set(LAB_CHECKERS) | set(ALWAYS)
    for name, result in results.items():
        assert result["valid"] is True, (name, result)
        assert set(result) >= {"valid", "counts", "examples"}
        assert all(isinstance(count, int) for count in result["counts"].values())
    assert orjson.loads(orjson.dumps(results)) == results


def test_a_checker_that_raises_is_unknown_and_the_others_still_run() -> None:
    results = run_checkers(
        _busy_history(), {"delivery": {"allow_duplicates": "yes"}, "order": {"no_such_option": 1}}, LAB_CHECKERS
    )
    assert results["delivery"]["valid"] == "unknown"
    assert results["delivery"]["error"].startswith(
        "CheckerOptionError: delivery: unknown option(s) ['allow_duplicates']"
    )
    assert results["order"]["valid"] == "unknown" and "no_such_option" in results["order"]["error"]
    assert results["semantics"]["valid"] is True


def test_only_the_named_checkers_run() -> None:
    assert list(run_checkers(history(), None, ["order", "delivery"])) == [*ALWAYS, "order", "delivery"]
    with pytest.raises(ValueError, match="no checker of the history named"):
        run_checkers(history(), None, ["nope"])


def test_every_checker_works_on_an_empty_history_which_is_unknown() -> None:
    results = {name: result["valid"] for name, result in run_checkers(history(), None, LAB_CHECKERS).items()}
    assert results == {
        **dict.fromkeys(LAB_CHECKERS, True),
        "completeness": "unknown",
        "durability": True,
        "clients": True,
    }


@pytest.mark.parametrize(
    ("values", "combined"),
    [
        ([], True),
        ([True, True], True),
        ([True, "unknown"], "unknown"),
        ([True, "unknown", False], False),
        ([False], False),
    ],
)
def test_combine_validity(values: list, combined: object) -> None:
    assert combine_validity(values) == combined


def test_each_kinds_checkers_declare_themselves_and_their_losses_name_their_violations() -> None:
    """The registry finds checkers/KIND/ packages; a loss one declares must be a violation its checker reports, so a
    known-anomaly entry can never cover it by a misspelling."""
    from failsafe.checkers import LOSS_VIOLATIONS, violation_side
    from failsafe.checkers.run import kinds_checkers

    found = {module.__name__.rsplit(".", 1)[1] for module in kinds_checkers()}
    assert found >= {"app", "dr", "pipeline", "share", "txn"}
    for module in kinds_checkers():
        assert module.CHECKERS and all(info.name in CHECKERS for info in module.CHECKERS), module.__name__
    assert all(violation_side(loss) is not None for loss in LOSS_VIOLATIONS)
