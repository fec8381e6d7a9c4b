"""The soundness suite: every mutation of tests/mutations.py over every corpus run (real runs of every kind, recorded by
benchmarks/record_corpus.py), judged as `failsafe check` judges a stored run; no mutation may come out VALID or KNOWN.

Checkers only, no cluster. Hypothesis picks which write, partition, line, client or option each mutation takes; the
counts are printed at the end of the test session (conftest.py). A kind with no run in the corpus fails the suite.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failsafe.scenarios.kinds import KINDS
from tests.mutations import MUTATIONS, Mutation, Run, judge, load_corpus

RUNS = load_corpus()
# (run, mutation) -> verdicts seen: what the session's summary reports (conftest.py).
SEEN: dict[tuple[str, str], list[str]] = {}
_dirs = itertools.count()


def test_every_kind_has_runs_in_the_corpus_and_each_is_judged_as_it_was_recorded(tmp_path: Path) -> None:
    assert {run.kind for run in RUNS} >= set(KINDS), (
        f"kinds without a run in tests/data/corpus: {sorted(set(KINDS) - {r.kind for r in RUNS})}"
    )
    assert {run.meta["family"] for run in RUNS} >= {
        "process",
        "network",
        "client",
        "region",
        "disk",
        "campaign",
        "protocol",
        "clock",
        "security",
    }
    from tests.mutations import Mutant

    for run in RUNS:
        assert judge(run, Mutant(run.ops, run.scenario), tmp_path / run.name) == run.meta["verdict"], run.name


@pytest.mark.parametrize(
    ("run", "mutation"), [(r, m) for r in RUNS for m in MUTATIONS], ids=lambda v: getattr(v, "name", None)
)
@settings(
    max_examples=2,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_mutation_of_a_real_run_is_judged_valid(
    run: Run, mutation: Mutation, data: st.DataObject, tmp_path: Path
) -> None:
    mutant = mutation.apply(run, lambda values, label: data.draw(st.sampled_from(list(values)), label=label))
    if mutant is None:
        SEEN.setdefault((run.name, mutation.name), [])
        return  # the mutation does not apply to this run (its precondition)
    verdict = judge(run, mutant, tmp_path / f"m{next(_dirs)}")
    SEEN.setdefault((run.name, mutation.name), []).append(verdict)
    assert verdict in mutation.allowed, (
        f"{mutation.name} of {run.name}: {verdict} (may be {sorted(mutation.allowed)}): {mutation.description}"
    )
