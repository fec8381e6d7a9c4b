"""A KRaft feature's level lowered for a while, then restored: the set-feature action as a fault campaigns draw.

    feature-downgrade  ``kafka-features downgrade --feature FEATURE=LEVEL`` (of the cluster's release) at its start,
                       and at its undo an upgrade back to the level it had before; a window of family feature-flip on
                       the quorum, with the feature and both levels in its details. A feature already at or below
                       ``level`` is left as it is (the window records that nothing moved).

Campaigns draw it at the levels below the defaults that change what a failure does: eligible.leader.replicas.version 0
(KIP-966 off: a partition whose ISR shrank below min.insync.replicas has no eligible replica to elect) and
transaction.version 1 (KIP-890's server-side defence off). It takes no node away (footprint 0): what it costs shows
with the faults drawn beside it. Each start and undo runs kafka-features (a JVM, a few seconds on two cores).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from failsafe.cluster.spec import KRAFT_MODE, ZOOKEEPER_MODE, ClusterSpec
from failsafe.errors import UserError
from failsafe.faults.base import (
    AppliedFault,
    FaultContext,
    FaultError,
    FaultSpec,
    FaultTargets,
    FaultType,
    Need,
    Target,
)
from failsafe.faults.draw import Arena, Draw
from failsafe.faults.registry import register
from failsafe.history.ops import Family
from failsafe.tools.kafka_tools import SETTABLE_FEATURES, finalized_features, set_feature_level

FEATURE_DOWNGRADE = "feature-downgrade"
# What campaigns draw: (feature, level), each below the default of Kafka 4.x's releases.
DRAWN = (("eligible.leader.replicas.version", 0), ("transaction.version", 1))


@dataclass(frozen=True)
class FeatureLevel:
    """The feature and the level it is lowered to while the fault is in force."""

    feature: str
    level: int = 0


def _check(params: FeatureLevel, ctx: FaultContext) -> None:
    if params.feature not in SETTABLE_FEATURES:
        raise ctx.fail("feature", f"{params.feature!r} is not one of {', '.join(SETTABLE_FEATURES)}")
    if params.level < 0:
        raise ctx.fail("level", f"{params.level} must be 0 or more")
    if ctx.mode == ZOOKEEPER_MODE:
        raise ctx.fail("", "feature-downgrade lowers a KRaft feature: a ZooKeeper-mode cluster has none")


def _fits(spec: ClusterSpec) -> str | None:
    return None if spec.mode == KRAFT_MODE else "its features are KRaft's: the cluster runs in ZooKeeper mode"


def downgrade(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    from failsafe.jvm.kafka import kafka_dist

    cluster = targets.cluster
    dist = getattr(cluster, "dist", None) or kafka_dist(cluster.spec.kafka_version)
    bootstrap = cluster.bootstrap_servers
    feature, level = spec.params.feature, spec.params.level
    try:
        known = finalized_features(dist, bootstrap)
        if feature not in known:
            raise FaultError(f"this cluster has no feature {feature} (Kafka {dist.version})")
        before = int(known[feature][2])
        now = set_feature_level(dist, bootstrap, feature, level, known) if before > level else before
    except UserError as e:
        raise FaultError(str(e)) from e

    def restore() -> None:
        if now != before:
            try:
                set_feature_level(dist, bootstrap, feature, before)
            except UserError as e:
                raise FaultError(str(e)) from e

    return AppliedFault(
        FEATURE_DOWNGRADE,
        Target.QUORUM,
        [],
        f"{feature} {before} -> {now}",
        restore,
        details={"feature": feature, "before": before, "level": now},
        label=f"{feature}={now}",
    )


def draw(rng: random.Random, arena: Arena) -> Draw:
    feature, level = rng.choice(DRAWN)
    return Draw({"feature": feature, "level": level})


register(
    FaultType(
        FEATURE_DOWNGRADE,
        Family.FEATURE_FLIP,
        "a KRaft feature finalized at a lower level (kafka-features downgrade) while it is in force",
        frozenset({Need.QUORUM}),
        downgrade,
        "the feature upgraded back to the level it had",
        FeatureLevel,
        _check,
        _fits,
        draw,
    )
)
