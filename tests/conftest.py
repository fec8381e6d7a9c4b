"""One shared cluster per test session for tests that do not break it.

Tests marked ``breaks_cluster`` start clusters of their own; they are ordered last, after the
shared cluster is stopped, so that two clusters never run at once on a 2-core machine.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import TEST_HEAP, alive_pids, cluster_ports, run_cli

_started_dirs: list[Path] = []


@dataclass
class RunningCluster:
    dir: Path
    bootstrap: str

    def cli(self, *args: str, **kwargs):
        """Run failsafe against this cluster, found through FAILSAFE_DIR as a user's shell would."""
        return run_cli(*args, env={"FAILSAFE_DIR": str(self.dir)}, **kwargs)


def start_cluster(path: Path, *extra: str, brokers: int = 3, controllers: int = 1) -> RunningCluster:
    _started_dirs.append(path)
    result = run_cli("up", "--dir", str(path), "--heap", TEST_HEAP, *cluster_ports(brokers, controllers), *extra)
    assert result.returncode == 0, result.stderr
    return RunningCluster(path, result.stdout.strip().splitlines()[-1])


def stop_cluster(cluster: RunningCluster) -> None:
    result = run_cli("down", "--dir", str(cluster.dir))
    assert result.returncode == 0, result.stderr
    assert alive_pids(cluster.dir) == []


def module_cluster(
    holder: dict, factory: pytest.TempPathFactory, name: str, *flags: str, controllers: int = 1
) -> Iterator[RunningCluster]:
    """A module's own cluster made with ``flags`` (the shared cluster stopped first), stopped after the module: what a
    module-scoped fixture yields from."""
    if "cluster" in holder:
        stop_cluster(holder.pop("cluster"))
    cluster = start_cluster(factory.mktemp(name) / "cluster", *flags, controllers=controllers)
    yield cluster
    stop_cluster(cluster)


def pytest_terminal_summary(terminalreporter) -> None:
    """The soundness suite's count (tests/unit/test_mutation_suite.py), when it ran: mutations x kinds, and what they
    were judged."""
    suite = next((m for name, m in list(sys.modules.items()) if name.endswith("test_mutation_suite")), None)
    seen = getattr(suite, "SEEN", None)
    if not seen:
        return
    verdicts = Counter(v for found in seen.values() for v in found)
    applied = [key for key, found in seen.items() if found]
    kinds = {run.kind for run in suite.RUNS}
    terminalreporter.write_line(
        f"soundness suite: {len(suite.MUTATIONS)} mutations x {len(kinds)} kinds ({len(suite.RUNS)} runs): "
        f"{len(applied)} of {len(seen)} (run, mutation) pairs apply, {sum(verdicts.values())} mutants judged: "
        + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
        + f"; VALID or KNOWN: {verdicts['VALID'] + verdicts['KNOWN']}"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("breaks_cluster") is not None)


_shared: RunningCluster | None = None
# The shared cluster lets a KIP-848 group's session be as short as the seeds' (consumer-failover-kip848 needs both);
# classic groups and every other setting are Kafka's own.
SHARED_OVERRIDES = ("group.consumer.min.session.timeout.ms=10000", "group.consumer.session.timeout.ms=10000")


def shared_cluster_in(holder: dict, tmp_path_factory: pytest.TempPathFactory) -> RunningCluster:
    """The shared cluster, started on first use."""
    if "cluster" not in holder:
        holder["cluster"] = start_cluster(
            tmp_path_factory.mktemp("shared-cluster"), *(a for o in SHARED_OVERRIDES for a in ("--override", o))
        )
    return holder["cluster"]


@pytest.fixture(scope="session")
def shared_cluster_holder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    holder: dict = {}
    yield holder
    if "cluster" in holder:
        stop_cluster(holder["cluster"])


@pytest.fixture
def shared_cluster(
    request: pytest.FixtureRequest, shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory
) -> RunningCluster:
    """A 3-broker, 1-controller cluster shared by every test that leaves it as it found it."""
    assert request.node.get_closest_marker("breaks_cluster") is None, "breaking tests must use their own cluster"
    return shared_cluster_in(shared_cluster_holder, tmp_path_factory)


@pytest.fixture
def own_cluster_dir(request: pytest.FixtureRequest, shared_cluster_holder: dict, tmp_path: Path) -> Iterator[Path]:
    """A directory for a cluster of the test's own; the shared cluster is stopped first."""
    assert request.node.get_closest_marker("breaks_cluster") is not None
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    path = tmp_path / "cluster"
    yield path
    if (path / "failsafe-state.json").exists():
        run_cli("down", "--dir", str(path), "--timeout-s", "20")
    assert alive_pids(path) == [], "a test left Kafka processes running"


@pytest.fixture(scope="session", autouse=True)
def nothing_left_running() -> Iterator[None]:
    yield
    leftovers = {str(d): alive_pids(d) for d in _started_dirs if alive_pids(d)}
    assert not leftovers, f"Kafka processes left running: {json.dumps(leftovers)}"
