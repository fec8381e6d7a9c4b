"""Explanations of the transactions checker's examples: each names its transaction and its moment, none goes
unexplained."""

from __future__ import annotations

from failsafe.checkers.explain.sentences import explain
from failsafe.checkers.txn.transactions import check
from tests.unit.test_checker_transactions import _crossed, _worker, log_read, rec, story


def _sentences(history) -> list[dict]:
    results = {"checkers": {"transactions": check(history)}}
    return [e for e in explain(history, results) if e["checker"] == "transactions"]


def test_a_lost_committed_write_is_explained_by_its_transaction() -> None:
    [lost, torn] = _sentences(story(log=log_read([rec(0, "v1"), rec(3, "v3"), rec(1, "x", 1)])))
    assert (lost["anomaly"], torn["anomaly"]) == ("lost-write", "torn-transaction")
    assert "error" not in lost and "error" not in torn
    assert lost["sentence"].startswith("transactions lost-write: transaction 1 of p0 (transactional.id ")
    assert "asked to commit, ok" in lost["sentence"]


def test_an_input_processed_twice_is_explained_not_left_unexplained() -> None:
    [duplicate] = _sentences(_worker("ok"))
    assert "error" not in duplicate, duplicate
    assert (
        duplicate["sentence"].startswith("transactions duplicate, kind processed") and " s, " in duplicate["sentence"]
    )


def test_a_cycle_is_explained_by_its_transactions() -> None:
    explained = _sentences(_crossed(read_ms=10))
    assert explained and all("error" not in e for e in explained), explained
