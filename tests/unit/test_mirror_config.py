"""MirrorMaker 2's configuration as failsafe writes it, the DR pair's ports, and DR scenarios as data."""

from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.topology.mirror import (
    MirrorFlow,
    PartitionLag,
    fitted_replication,
    mirror_properties,
    mirroring,
    parse_flow,
    settings_not_applied,
    translation_delay_s,
)
from failsafe.cluster.topology.pair import BACKUP_PORT_OFFSET, backup_spec
from failsafe.errors import UserError
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.kinds.dr.schema import DrScenario
from failsafe.scenarios.registry import load_scenario

BOOTSTRAPS = {"primary": "127.0.0.1:9092", "backup": "127.0.0.1:10092"}


def _properties(text: str) -> dict[str, str]:
    return dict(line.split(" = ", 1) for line in text.splitlines() if " = " in line and not line.startswith("#"))


def test_one_flow_with_replication_factors_fitted_to_each_cluster() -> None:
    flow = MirrorFlow("primary", "backup")
    props = _properties(mirror_properties(flow, BOOTSTRAPS, {"primary": 3, "backup": 1}, "orders"))
    assert props["clusters"] == "primary, backup"
    assert props["primary->backup.enabled"] == "true" and props["backup->primary.enabled"] == "false"
    assert props["primary->backup.topics"] == "orders"
    assert props["sync.group.offsets.enabled"] == "true" and props["emit.checkpoints.enabled"] == "true"
    # Everything on the 1-broker backup at RF 1; the offset syncs live on the 3-broker source at RF 3.
    for key in (
        "replication.factor",
        "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "config.storage.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
    ):
        assert props[key] == "1", key
    assert props["offset-syncs.topic.replication.factor"] == "3"
    assert props["refresh.groups.interval.seconds"] == "5"


def test_settings_come_last_and_win() -> None:
    text = mirror_properties(
        MirrorFlow("backup", "primary"),
        BOOTSTRAPS,
        {"primary": 5, "backup": 5},
        "orders",
        {"refresh.groups.interval.seconds": "1", "offset.lag.max": "0", "offset.flush.interval.ms": "1000"},
    )
    props = _properties(text)
    assert props["backup->primary.enabled"] == "true" and props["primary->backup.enabled"] == "false"
    assert props["replication.factor"] == "3" and props["offset.lag.max"] == "0"
    # A Connect worker setting is read from the target's prefix only.
    assert props["primary.offset.flush.interval.ms"] == "1000" and "offset.flush.interval.ms" not in props
    assert "refresh.groups.interval.seconds = 1" in text and "refresh.groups.interval.seconds = 5" not in text


def test_flows_and_their_topic_names() -> None:
    assert parse_flow("primary->backup", ("primary", "backup")) == MirrorFlow("primary", "backup")
    assert parse_flow("backup-primary", ("primary", "backup")).remote_topic("orders") == "backup.orders"
    for bad in ("primary->primary", "primary", "east->west"):
        with pytest.raises(UserError, match="is not a flow"):
            parse_flow(bad, ("primary", "backup"))
    assert [fitted_replication(n) for n in (1, 2, 3, 6)] == [1, 2, 3, 3]


def test_mirroring_needs_every_partition_with_an_observable_lag() -> None:
    assert mirroring([PartitionLag("orders", 0, 10, 10), PartitionLag("orders", 1, 5, 2)])
    assert not mirroring([PartitionLag("orders", 0, 10, 10), PartitionLag("orders", 1, 5, None)])
    assert not mirroring([])
    assert PartitionLag("orders", 1, 5, 2).lag == 3 and PartitionLag("orders", 1, None, 2).lag is None


def test_a_setting_mirrormaker_did_not_log_with_its_value_is_not_applied(tmp_path: Path) -> None:
    log = tmp_path / "mirrormaker.log"
    log.write_text(
        "[x] INFO MirrorCheckpointConfig values:\n\temit.checkpoints.interval.seconds = 1\n\toffset.lag.max = 10\n"
        "[x] INFO DistributedConfig values:\n\toffset.flush.interval.ms = 60000\n"
    )
    settings = {
        "emit.checkpoints.interval.seconds": "1",
        "emit.checkpoints.interval.ms": "1000",
        "primary->backup.offset.lag.max": "10",
        "offset.lag.max": "10",
        "offset.flush.interval.ms": "1000",
    }
    assert settings_not_applied(log, settings) == ["emit.checkpoints.interval.ms=1000", "offset.flush.interval.ms=1000"]
    assert settings_not_applied(log, {"offset.flush.interval.ms": "60000", "backup.offset.lag.max": "10"}) == []


def test_the_backup_is_the_primary_1000_ports_higher() -> None:
    primary = ClusterSpec(brokers=3, base_port=19092, controller_base_port=19500)
    backup = backup_spec(primary)
    assert backup.brokers == 3 and backup.base_port == 19092 + BACKUP_PORT_OFFSET
    assert backup.effective_controller_base_port == 19500 + BACKUP_PORT_OFFSET
    assert not set(primary.ports()) & set(backup.ports())


def test_dr_scenarios_parse_with_their_mirror_settings() -> None:
    failover = load_scenario("dr-failover")
    assert isinstance(failover, DrScenario) and failover.kind == "dr"
    assert failover.mirror["emit.checkpoints.interval.seconds"] == "1"
    assert failover.raw["kind"] == "dr" and "mirror" in failover.raw
    assert [f.fault for f in failover.faults] == ["cluster-loss"] and [a.action for a in failover.actions] == [
        "failover"
    ]
    changed = load_scenario("dr-failover", ('mirror.settings."offset.lag.max"=100',))
    assert changed.mirror["offset.lag.max"] == "100"
    failback = load_scenario("dr-failback")
    assert failback.checkers["dr"]["clusters"] == ["backup", "primary"]


def test_a_dr_action_outside_a_dr_scenario_is_refused() -> None:
    with pytest.raises(ScenarioError, match="'failover' is not an action lab scenarios take"):
        load_scenario("broker-failover", ('actions=[{action = "failover"}]',))
    with pytest.raises(ScenarioError, match="mirror"):
        load_scenario("dr-failover", ("mirror.settings=3",))


def test_translation_delay_adds_the_offset_flush_the_checkpoint_and_the_sync_intervals() -> None:
    assert translation_delay_s({}) == 180.0, "MirrorMaker's defaults: 60 s flush, 60 s checkpoints, 60 s syncs"
    tuned = {
        "offset.flush.interval.ms": "1000",
        "emit.checkpoints.interval.seconds": "1",
        "sync.group.offsets.interval.seconds": "2",
    }
    assert translation_delay_s(tuned) == 4.0
