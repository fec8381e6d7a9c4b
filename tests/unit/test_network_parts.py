"""Network faults without a cluster: the sides' syntax, who is on which side, the nft rules, nft's listing, the scenario
fields."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from failsafe.cluster.config import node_properties
from failsafe.cluster.net import netfilter
from failsafe.cluster.net.leash import NetworkLeash
from failsafe.cluster.nodes.control import LocalNodes
from failsafe.cluster.site import NeutralSite
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.faults import FaultError, FaultSpec, FaultTargets, network
from failsafe.faults.network import partition_rules, placed_rules
from failsafe.faults.sides import Side, parse_sides, resolve_sides
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.registry import parse_scenario

SPEC = (
    ClusterSpec()
)  # controller 1000 on 127.0.0.100:9192; brokers 0-2 on 9092-9094, replication 127.0.0.10-12:9292-9294
SAMPLE = {"topic": "events", "partition": 0, "leader": 1, "replicas": [1, 2, 0], "isr": [1, 2, 0]}


def _ids(sides: list[Side]) -> list[list[int]]:
    return [[n.node_id for n in s.nodes] for s in sides]


def gid(node) -> int:
    return 500 + node.node_id


ALL_GIDS = [gid(n) for n in SPEC.nodes()]


# -- the sides ----------------------------------------------------------------------------------------
def test_sides_are_read_with_or_without_braces_and_one_way_with_an_arrow() -> None:
    assert parse_sides("{0} | {1,2,controllers}").sides == (("0",), ("1", "2", "controllers"))
    assert parse_sides("0 | 1 2").sides == (("0",), ("1", "2"))
    one_way = parse_sides("{leader} -> {followers}")
    assert one_way.one_way and str(one_way) == "{leader} -> {followers}"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{0} | {}", "a side is empty"),
        ("{0} | {bob}", "'bob' is not a node id"),
        ("{0} -> {1} -> {2}", "exactly two sides"),
        ("{0} -> {1} | {2}", "not both"),
    ],
)
def test_bad_sides_are_refused_with_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(FaultError, match=fragment):
        parse_sides(text)


def test_one_side_alone_is_cut_from_every_other_node() -> None:
    assert _ids(resolve_sides(parse_sides("{0}"), SPEC)) == [[0], [1000, 1, 2]]


def test_role_words_resolve_against_the_partition_and_the_active_controller() -> None:
    controller = SPEC.controller_nodes()[0]
    sides = resolve_sides(parse_sides("{leader} | {followers, controller}"), SPEC, SAMPLE, controller)
    assert _ids(sides) == [[1], [2, 0, 1000]]
    assert sides[1].label == "{2,0,1000}"
    clients = resolve_sides(parse_sides("{clients} | {replicas}"), SPEC, SAMPLE)
    assert clients[0].clients and clients[0].nodes == () and _ids(clients)[1] == [1, 2, 0]


@pytest.mark.parametrize(
    ("text", "sample", "fragment"),
    [
        ("{0} | {0,1}", None, "node 0 is on two sides"),
        ("{leader} | {others}", None, "give the fault a partition"),
        ("{controller} | {brokers}", None, "there is none now"),
        ("{7} | {0}", None, "no broker or controller with id 7"),
        ("{leader} | {others}", {**SAMPLE, "leader": -1}, "has no leader"),
        ("{brokers, controllers} | {others}", None, "a side has no node"),
    ],
)
def test_sides_that_cannot_be_resolved_say_why(text: str, sample: dict | None, fragment: str) -> None:
    with pytest.raises(FaultError, match=fragment):
        resolve_sides(parse_sides(text), SPEC, sample)


# -- the rules ----------------------------------------------------------------------------------------
def test_a_partition_drops_each_sides_packets_to_the_other_sides_replication_and_controller_listeners() -> None:
    sides = resolve_sides(parse_sides("{0} | {1, controllers}"), SPEC)
    rules = partition_rules(sides, False, gid, ALL_GIDS)
    assert rules == [
        "meta skgid 500 ip daddr . tcp dport { 127.0.0.11 . 9293, 127.0.0.100 . 9192 } counter drop",
        "meta skgid { 501, 1500 } ip daddr . tcp dport { 127.0.0.10 . 9292 } counter drop",
    ]
    # No rule touches a client listener: clients keep every broker.
    assert not any("127.0.0.1 ." in r for r in rules)


def test_one_way_drops_only_the_first_sides_packets_and_loss_drops_a_share() -> None:
    sides = resolve_sides(parse_sides("{0} -> {1}"), SPEC)
    assert partition_rules(sides, True, gid, ALL_GIDS) == [
        "meta skgid 500 ip daddr . tcp dport { 127.0.0.11 . 9293 } counter drop"
    ]
    lossy = partition_rules(sides, False, gid, ALL_GIDS, loss=0.25)
    assert len(lossy) == 2 and all("numgen random mod 10000 < 2500 counter drop" in r for r in lossy)


def test_clients_are_cut_by_what_is_not_a_node_of_the_cluster() -> None:
    sides = resolve_sides(parse_sides("{0} | {clients}"), SPEC)
    assert partition_rules(sides, False, gid, ALL_GIDS) == [
        "meta skgid != { 1500, 500, 501, 502 } ip daddr . tcp dport { 127.0.0.1 . 9092 } counter drop"
    ]


def test_a_one_way_cut_to_clients_drops_what_the_brokers_own_listener_answers_from_behind_a_proxy() -> None:
    proxied = ClusterSpec(protocol_proxy=True)
    sides = resolve_sides(parse_sides("{0} -> {clients}"), proxied)
    (plain,) = placed_rules(sides, True, gid, ALL_GIDS).values()
    (behind,) = placed_rules(sides, True, gid, ALL_GIDS, listener_port=proxied.listener_port).values()
    # Clients' answers leave the broker from its own listener (9592), to its proxy: 9092 is the proxy's port.
    assert plain == ["meta skgid 500 ip daddr 127.0.0.1 tcp sport 9092 counter drop"]
    assert behind == ["meta skgid 500 ip daddr 127.0.0.1 tcp sport 9592 counter drop"]


def test_sides_with_no_link_between_them_are_refused() -> None:
    with pytest.raises(FaultError, match="share no link"):
        partition_rules([Side((), True), Side(tuple(SPEC.controller_nodes()))], False, gid, ALL_GIDS)


def test_a_zookeeper_mode_broker_is_reached_on_its_one_listener() -> None:
    spec = ClusterSpec.zookeeper_mode()
    sides = resolve_sides(parse_sides("{0} | {zookeeper}"), spec)
    rules = partition_rules(sides, False, lambda n: 600 + n.node_id, [600])
    assert rules == [
        "meta skgid 600 ip daddr . tcp dport { 127.0.0.1 . 2181 } counter drop",
        "meta skgid 601 ip daddr . tcp dport { 127.0.0.1 . 9092 } counter drop",
    ]


def test_nfts_listing_gives_each_chain_its_comment_rules_and_dropped_packets() -> None:
    text = """table inet failsafe_0123456789 {
	comment "failsafe cluster /tmp/c"
	chain fault_1 {
		comment "partition {0} | {1,2,1000}"
		type filter hook output priority filter; policy accept;
		meta skgid 500 ip daddr . tcp dport { 127.0.0.11 . 9293 } counter packets 12 bytes 720 drop
		meta skgid 501 ip daddr . tcp dport { 127.0.0.10 . 9292 } counter packets 3 bytes 180 drop
	}
	chain fault_2 {
		comment "lossy link {0} | {1}"
		type filter hook output priority filter; policy accept;
	}
}
"""
    chains = netfilter.parse_listing(text)
    assert [(c.name, c.comment, c.dropped_packets, len(c.rules)) for c in chains] == [
        ("fault_1", "partition {0} | {1,2,1000}", 15, 2),
        ("fault_2", "lossy link {0} | {1}", 0, 0),
    ]


def test_each_cluster_directory_has_its_own_table_and_group_ids(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert netfilter.table_name(a) != netfilter.table_name(b)
    assert netfilter.table_name(a) == netfilter.table_name(tmp_path / "x" / ".." / "a")
    gids = [netfilter.node_gid(a, slot) for slot in range(4)]
    assert len(set(gids)) == 4 and min(gids) > 65535
    assert netfilter.with_gid(["java", "-version"], gids[0])[-2:] == ["java", "-version"]


# -- the fault plug-in, on a fake nft -------------------------------------------------------------------
class FakeCluster(NeutralSite):
    def __init__(self, root: Path) -> None:
        self.spec = ClusterSpec()
        self.dir = SimpleNamespace(root=root)
        self.nodes = LocalNodes(self.dir)  # type: ignore[arg-type]  (its network rules: netfilter's, patched below)

    def node(self, node_id: int, role: str | None = None):
        return next(n for n in self.spec.nodes() if n.node_id == node_id)

    def tracked(self, node):
        return None  # down: no process to check

    def net_ready(self) -> None:
        netfilter.require_available()  # every node is down: no group id to check

    def node_state(self, node) -> str:
        return "down"

    def active_controller_node(self):
        return self.spec.controller_nodes()[0]


def test_isolate_installs_one_chain_and_its_undo_deletes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chains: dict[str, tuple[str, list[str]]] = {}
    monkeypatch.setattr(netfilter, "require_available", lambda: None)
    monkeypatch.setattr(
        netfilter, "list_chains", lambda root: [netfilter.FaultChain(n, c, r, 0) for n, (c, r) in chains.items()]
    )
    monkeypatch.setattr(
        netfilter, "add_chain", lambda root, name, comment, rules: chains.__setitem__(name, (comment, rules))
    )
    monkeypatch.setattr(netfilter, "delete_chain", lambda root, name: chains.pop(name, None) is not None)
    targets = FaultTargets(FakeCluster(tmp_path), clients=None, partition=lambda name: SAMPLE)  # type: ignore[arg-type]
    applied = network.isolate(
        FaultSpec(network.ISOLATE, 0.0, params=network.IsolateChoice(role="leader", partition="events-0")), targets
    )
    assert applied.nodes == [1] and applied.role == "leader of events-0: partition {1} | {1000,0,2}"
    assert (
        applied.sides == [["1"], ["1000", "0", "2"]]
        and applied.label == "{1} | {1000,0,2}"
        and applied.one_way is False
    )
    ((comment, rules),) = chains.values()
    assert len(rules) == 2 and all("127.0.0.1 ." not in r for r in rules)
    applied.undo()
    assert chains == {} and applied.undone


class RecordingLeash(NetworkLeash):
    """The leash's protocol without its process: the lines it would have been sent."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def _send(self, line: str) -> None:
        self.lines.append(line)


def test_the_leash_holds_a_chain_before_its_rules_are_in_force_and_lets_go_of_one_nft_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SIGKILL of failsafe just after nft installed the chain must find the chain held (CI once saw a
    # kill land between the two, and the rules outlived the run).
    leash = RecordingLeash()
    seen_when_added: list[list[str]] = []

    def add_chain(root, name, comment, rules):
        seen_when_added.append(list(leash.lines))
        if len(seen_when_added) == 2:
            raise netfilter.NftError("Error: Could not process rule")

    monkeypatch.setattr(netfilter, "require_available", lambda: None)
    monkeypatch.setattr(netfilter, "list_chains", lambda root: [])
    monkeypatch.setattr(netfilter, "add_chain", add_chain)
    targets = FaultTargets(
        FakeCluster(tmp_path),
        clients=None,
        partition=lambda name: SAMPLE,  # type: ignore[arg-type]
        network_leash=lambda: leash,
    )
    network.isolate(
        FaultSpec(network.ISOLATE, 0.0, params=network.IsolateChoice(role="leader", partition="events-0")), targets
    )
    assert seen_when_added == [["hold fault_1"]]
    with pytest.raises(FaultError, match="nft refused"):
        network.isolate(
            FaultSpec(network.ISOLATE, 0.0, params=network.IsolateChoice(role="leader", partition="events-0")), targets
        )
    assert leash.lines == ["hold fault_1", "hold fault_1", "release fault_1"]


def test_without_root_or_nft_a_network_fault_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(netfilter.os, "geteuid", lambda: 1000)
    with pytest.raises(netfilter.NetworkFaultsUnavailable, match="need root"):
        network.apply(
            FakeCluster(tmp_path), [Side(tuple(SPEC.brokers_nodes()[:1])), Side(tuple(SPEC.brokers_nodes()[1:]))]
        )
    monkeypatch.setattr(netfilter.os, "geteuid", lambda: 0)
    monkeypatch.setattr(netfilter.shutil, "which", lambda name: None)
    assert "apt-get install nftables" in (netfilter.unavailable_reason() or "")


# -- scenario fields ------------------------------------------------------------------------------------
def _scenario(fault: dict) -> dict:
    return {
        "name": "n",
        "topics": [{"name": "events", "partitions": 1, "replication_factor": 3}],
        "producers": [{"name": "p", "topic": "events", "rate_per_s": 10}],
        "faults": [{"at_s": 1, "duration_s": 2, **fault}],
        "phases": {"warmup_s": 1, "chaos_s": 5, "recover_s": 1},
    }


def test_a_scenario_names_network_faults_with_sides_and_roles() -> None:
    s = parse_scenario(
        _scenario({"fault": "partition", "sides": "{leader} | {followers,controllers}", "partition": "events-0"})
    )
    assert s.faults[0].params.sides == "{leader} | {followers,controllers}"
    s = parse_scenario(_scenario({"fault": "lossy-link", "sides": "{brokers}", "loss": 0.3}))
    assert s.faults[0].params.loss == 0.3


@pytest.mark.parametrize(
    ("fault", "fragment"),
    [
        ({"fault": "partition"}, "sides: missing"),
        ({"fault": "partition", "sides": "{leader} | {others}"}, r"faults\[0\]\.partition: None must name a partition"),
        ({"fault": "partition", "sides": "{0} | {x}"}, "'x' is not a node id"),
        ({"fault": "lossy-link", "sides": "{0}"}, "needs a drop probability"),
        ({"fault": "lossy-link", "sides": "{0}", "loss": 1.5}, "drop probability in"),
        ({"fault": "kill", "sides": "{0}"}, r"faults\[0\]\.sides: is not a field of this fault"),
        (
            {"fault": "isolate", "role": "leader", "partition": "events-0", "sides": "{0}"},
            r"faults\[0\]\.sides: is not a field of this fault",
        ),
    ],
)
def test_network_fault_fields_are_checked_before_anything_runs(fault: dict, fragment: str) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        parse_scenario(_scenario(fault))


# -- racks ----------------------------------------------------------------------------------------------
def test_racks_split_the_brokers_into_consecutive_groups_named_in_broker_rack(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=6, racks=3)
    assert [spec.rack_of(n) for n in spec.brokers_nodes()] == [
        "rack-0",
        "rack-0",
        "rack-1",
        "rack-1",
        "rack-2",
        "rack-2",
    ]
    assert node_properties(spec, spec.brokers_nodes()[3], tmp_path)["broker.rack"] == "rack-1"
    assert "broker.rack" not in node_properties(ClusterSpec(), ClusterSpec().brokers_nodes()[0], tmp_path)
    assert _ids(resolve_sides(parse_sides("{rack-0} | {others, clients}"), spec)) == [[0, 1], [1000, 2, 3, 4, 5]]
    with pytest.raises(FaultError, match="the cluster has no racks"):
        resolve_sides(parse_sides("{rack-0}"), SPEC)
    with pytest.raises(UserError, match="--racks 4"):
        ClusterSpec(brokers=3, racks=4).validate()


def test_a_topic_placed_by_hand_needs_one_list_of_distinct_brokers_per_partition() -> None:
    data = _scenario({"fault": "kill", "role": "any"})
    data["topics"][0]["replica_assignment"] = [[0, 1, 2]]
    assert parse_scenario(data).topics[0].replica_assignment == ((0, 1, 2),)
    for bad in ([[0, 1]], [[0, 0, 1]], [[0, 1, 2], [1, 2, 0]], "0,1,2"):
        data["topics"][0]["replica_assignment"] = bad
        with pytest.raises(ScenarioError, match="replica_assignment"):
            parse_scenario(data)


@pytest.mark.skipif(netfilter.unavailable_reason() is not None, reason=netfilter.unavailable_reason() or "")
@pytest.mark.parametrize(
    ("text", "loss"),
    [
        ("{0} | {1, controllers}", None),
        ("{0} -> {clients}", None),
        ("{clients} | {brokers}", 0.3),
        ("{rack-0} | {others, clients}", None),
    ],
)
def test_the_rules_are_ones_nft_accepts(text: str, loss: float | None, tmp_path: Path) -> None:
    """nft's own parser, in check mode (nothing is applied): the syntax is nft's, not ours to guess."""
    spec = ClusterSpec(brokers=4, racks=2)
    sides = resolve_sides(parse_sides(text), spec)
    rules = partition_rules(sides, parse_sides(text).one_way, gid, [gid(n) for n in spec.nodes()], loss)
    script = tmp_path / "check.nft"
    script.write_text(
        "add table inet failsafe_check\nadd chain inet failsafe_check c { type filter hook output priority filter; }\n"
        + "".join(f"add rule inet failsafe_check c {r}\n" for r in rules)
    )
    checked = subprocess.run(["nft", "--check", "-f", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
