"""Where scenarios run (scenarios/engine/placement.py), on directories with nothing running: one way for a cluster and a
DR pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.scenarios.engine.placement import misfit, needs_of, placed
from failsafe.scenarios.registry import load_scenario
from tests.unit.test_topology import lone, pair  # noqa: F401 - fixtures

QUORUM_LOSS = load_scenario("controller-outage")


def test_a_fault_type_says_what_cluster_cannot_take_it() -> None:
    combined = ClusterSpec(brokers=3, controllers=3, combined=True)
    assert (
        misfit(combined, needs_of([QUORUM_LOSS]), [QUORUM_LOSS])
        == "it runs in combined mode and the scenario stops the controller quorum"
    )
    broker_failover = load_scenario("broker-failover")
    assert misfit(combined, needs_of([broker_failover]), [broker_failover]) is None


def _enter(root: Path, scenario_name: str, pair_wanted: bool) -> None:
    with placed(root, [load_scenario(scenario_name)], pair_wanted, None, None, lambda _: None):
        pytest.fail("a topology that does not fit was used")


def test_a_dr_scenario_refuses_a_lone_cluster_and_a_lab_one_a_pair(lone: Path, pair: Path) -> None:  # noqa: F811
    with pytest.raises(UserError, match=r"holds a cluster and these scenarios run on a DR pair: pass another --dir"):
        _enter(lone, "dr-failover", True)
    with pytest.raises(UserError, match=r"holds a DR pair and these scenarios run on a cluster: pass another --dir"):
        _enter(pair, "pubsub", False)


def test_each_cluster_of_a_topology_must_fit(pair: Path) -> None:  # noqa: F811
    # The pair's clusters have one broker each.
    with pytest.raises(UserError, match=r"the primary at .* does not fit: it has 1 brokers and the scenario needs 3"):
        with placed(pair, [load_scenario("dr-failover", ("cluster.brokers=3",))], True, None, None, lambda _: None):
            pytest.fail("a topology that does not fit was used")


def test_feature_levels_a_scenario_needs_are_formatted_into_a_cluster_it_starts_and_checked_on_one_it_finds() -> None:
    from failsafe.scenarios.engine.placement import spec_for

    standing = load_scenario("last-replica-standing", ('cluster.features."eligible.leader.replicas.version"="0"',))
    needs = needs_of([standing])
    assert needs.features == {"eligible.leader.replicas.version": "0"} and needs.volatile_disks
    started = spec_for(needs, None, None, None)
    assert started.features == {"eligible.leader.replicas.version": "0"} and started.volatile_disks
    assert misfit(started, needs, [standing]) is None
    plain = ClusterSpec(brokers=3, volatile_disks=True)
    assert misfit(plain, needs, [standing]) == (
        "it was made without the feature level eligible.leader.replicas.version=0 "
        "(failsafe up --feature eligible.leader.replicas.version=0)"
    )
    with pytest.raises(UserError, match="these scenarios need eligible.leader.replicas.version set to both 0 and 1"):
        needs_of(
            [
                standing,
                load_scenario("last-replica-standing", ('cluster.features."eligible.leader.replicas.version"="1"',)),
            ]
        )
    with pytest.raises(UserError, match="--feature sets the level a KRaft cluster's storage is formatted with"):
        ClusterSpec.zookeeper_mode(features={"eligible.leader.replicas.version": "0"}).validate()
