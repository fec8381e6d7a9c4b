"""The failsafe pytest plugin (entry point ``pytest11``): a real cluster for the session, a fixture per test.

    pytest --failsafe-dir DIR [--failsafe-kafka-version V] [--failsafe-brokers N]

``failsafe_cluster`` (session): the cluster at --failsafe-dir (default: a directory of the session's own), started if
none runs there and stopped at the end if the session started it. ``failsafe`` (function): the same cluster, made
whole again after each test (a node a test left down is started). Nothing is imported from failsafe until a test asks
for a fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("failsafe", "failsafe: a real Kafka cluster, broken on purpose")
    group.addoption("--failsafe-dir", default=None, help="the cluster directory (default: one of the session's own)")
    group.addoption("--failsafe-kafka-version", default=None, help="Kafka version of a cluster the session starts")
    group.addoption("--failsafe-brokers", type=int, default=3, help="brokers of a cluster the session starts")


@pytest.fixture(scope="session")
def failsafe_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from failsafe.testing.cluster import FailsafeCluster

    option = request.config.getoption("--failsafe-dir")
    root = Path(option) if option else tmp_path_factory.mktemp("failsafe") / "cluster"
    cluster = FailsafeCluster.session(
        root, request.config.getoption("--failsafe-kafka-version"), request.config.getoption("--failsafe-brokers")
    )
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def failsafe(failsafe_cluster) -> Iterator:
    yield failsafe_cluster
    failsafe_cluster.heal()
