"""The feature-downgrade fault without a cluster: its fields, what it refuses, its draw, and its start and undo against
a fake kafka-features (the real one runs in the lifecycle scenarios' set-feature flips)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

import failsafe.faults.features as features
from failsafe.cluster.spec import ClusterSpec
from failsafe.faults import FAULT_TYPES, FaultContext, FaultError, FaultSpec
from failsafe.faults.draw import Arena

FEATURE = FAULT_TYPES["feature-downgrade"]


@pytest.mark.parametrize(
    ("table", "mode", "fragment"),
    [
        ({"feature": "colour.version"}, "kraft", "is not one of"),
        ({"feature": "transaction.version", "level": -1}, "kraft", "must be 0 or more"),
        ({"feature": "transaction.version"}, "zookeeper", "ZooKeeper-mode"),
    ],
)
def test_what_a_feature_downgrade_refuses(table: dict, mode: str, fragment: str) -> None:
    with pytest.raises(FaultError, match=fragment):
        FEATURE.parse(table, FaultContext(where="s.faults[0]", mode=mode))


def test_it_fits_kraft_clusters_and_campaigns_draw_it_below_the_defaults() -> None:
    assert FEATURE.fits(ClusterSpec()) is None
    assert "ZooKeeper" in (FEATURE.fits(ClusterSpec.zookeeper_mode(brokers=3)) or "")
    rng = random.Random(7)
    drawn = {tuple(FEATURE.draw(rng, Arena(("t-0",))).fields.values()) for _ in range(40)}  # type: ignore[misc]
    assert drawn == set(features.DRAWN)
    assert FEATURE.draw(rng, Arena(("t-0",))).brokers == 0  # type: ignore[misc]


class FakeFeatures:
    def __init__(self, level: int) -> None:
        self.level = level
        self.calls: list[int] = []

    def finalized(self, dist: object, bootstrap: str) -> dict:
        return {"eligible.leader.replicas.version": ("0", "1", str(self.level))}

    def set(self, dist: object, bootstrap: str, feature: str, level: int, known: object = None) -> int:
        self.calls.append(level)
        self.level = level
        return level


def _start(monkeypatch: pytest.MonkeyPatch, fake: FakeFeatures, level: int):  # noqa: ANN202
    monkeypatch.setattr(features, "finalized_features", fake.finalized)
    monkeypatch.setattr(features, "set_feature_level", fake.set)
    cluster = SimpleNamespace(dist=SimpleNamespace(version="4.3.1"), bootstrap_servers="b:9092", spec=ClusterSpec())
    params = features.FeatureLevel("eligible.leader.replicas.version", level)
    return features.downgrade(FaultSpec("feature-downgrade", 0.0, 5.0, params), SimpleNamespace(cluster=cluster))


def test_the_feature_is_lowered_then_restored_to_the_level_it_had(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeFeatures(1)
    applied = _start(monkeypatch, fake, 0)
    assert applied.details == {"feature": "eligible.leader.replicas.version", "before": 1, "level": 0}
    assert applied.role == "eligible.leader.replicas.version 1 -> 0"
    applied.undo()
    assert fake.calls == [0, 1] and fake.level == 1


def test_a_feature_already_at_the_level_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeFeatures(0)
    applied = _start(monkeypatch, fake, 0)
    applied.undo()
    assert fake.calls == [] and applied.details["before"] == applied.details["level"] == 0
