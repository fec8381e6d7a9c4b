"""failsafe from pytest: a real cluster for a test session, faults as context managers, scenarios run and judged.

    cluster.py  FailsafeCluster (bootstrap servers, fault(), run(), heal()) and RunResult (verdict, explanations,
                report, assert_valid())
    plugin.py   the pytest plugin (entry point pytest11): --failsafe-dir, --failsafe-kafka-version, --failsafe-brokers;
                fixtures failsafe_cluster (the session's) and failsafe (the same, made whole again after each test)

docs/apps.md shows a user's test of their own application.
"""

from failsafe.testing.cluster import FailsafeCluster, RunResult

__all__ = ["FailsafeCluster", "RunResult"]
