"""How long each fault kept a transactional writer from committing: hand-made histories with known answers."""

from __future__ import annotations

from failsafe.checkers.txn.measure import commit_times
from failsafe.history.ops import Op, OpType, op
from tests.unit.test_checker_builders import at, fault, history


def committed(process: str, n: int, begin_ms: float, end_ms: float) -> list[dict]:
    return [
        op(Op.TXN, OpType.INVOKE, process, at(begin_ms), txn=n, transactional_id=process),
        op(Op.TXN_END, OpType.INVOKE, process, at(end_ms - 1), txn=n, end="commit"),
        op(Op.TXN, OpType.OK, process, at(end_ms), txn=n),
    ]


def test_the_first_commit_after_a_fault_the_first_of_a_new_transaction_and_the_longest_gap() -> None:
    h = history(
        *committed("w", 0, 0, 900),
        *committed("w", 1, 950, 3_000),
        *committed("w", 2, 3_010, 3_500),
        *committed("w", 3, 3_510, 3_600),
        *fault(1, start_ms=1_000, stop_ms=2_000, nodes=[2]),
    )
    [entry] = commit_times(h)
    assert entry["fault_id"] == 1 and entry["fault"] == "kill"
    # Transaction 1 began before the fault and committed 2 s after it; transaction 2, begun after, 2.5 s after it.
    assert entry["writers"]["w"] == {"first_commit_ms": 2000.0, "first_new_commit_ms": 2500.0, "longest_gap_ms": 2100.0}


def test_a_writer_that_never_commits_again_has_no_times() -> None:
    h = history(
        *committed("w", 0, 0, 900), *committed("v", 0, 0, 5_000), *fault(1, start_ms=1_000, stop_ms=2_000, nodes=[2])
    )
    [entry] = commit_times(h)
    assert entry["writers"]["w"] == {"first_commit_ms": None, "first_new_commit_ms": None, "longest_gap_ms": None}
    # v's transaction began before the fault: a first commit, but no new one.
    assert entry["writers"]["v"]["first_commit_ms"] == 4000.0 and entry["writers"]["v"]["first_new_commit_ms"] is None


def test_no_fault_no_entries() -> None:
    assert commit_times(history(*committed("w", 0, 0, 900))) == []


def test_a_measurement_that_fails_leaves_the_verdict_standing(monkeypatch) -> None:
    import failsafe.checkers.txn.transactions as transactions

    def broken(history):
        raise ValueError("no")

    monkeypatch.setattr(transactions.txn_measure, "commit_times", broken)
    result = transactions.check(history(*committed("w", 0, 0, 900)))
    assert result["faults"] == [] and result["faults_error"] == "ValueError: no" and "error" not in result
