"""One topology interface for a lone cluster and a DR pair (cluster/topology/directory.py), on directories with nothing
running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failsafe.cluster.observe.status import Stopped
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState, UnreadableState
from failsafe.cluster.topology import directory as topology
from failsafe.cluster.topology.directory import SingleCluster, find_topology, open_topology, topology_kind
from failsafe.cluster.topology.lifecycle import Cluster
from failsafe.cluster.topology.pair import BACKUP, PAIR_FILE, PRIMARY, Pair, backup_spec, write_pair_file
from failsafe.errors import ClusterNotRunning
from tests.helpers import free_port_block, run_cli

CLUSTER_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def _save(root: Path, spec: ClusterSpec) -> None:
    ClusterDir(root).save(ClusterState(spec, CLUSTER_ID, "2026-01-01T00:00:00Z"))


@pytest.fixture
def lone(tmp_path: Path) -> Path:
    """A stopped cluster: its state, no process."""
    root = tmp_path / "lone"
    _save(root, ClusterSpec(base_port=free_port_block(3), controller_base_port=free_port_block(1), racks=3))
    return root


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    """A stopped DR pair of 1-broker clusters, laid out as 'failsafe up --dr' leaves it."""
    root = tmp_path / "pair"
    spec = ClusterSpec(
        brokers=1,
        base_port=free_port_block(1),
        controller_base_port=free_port_block(1),
        replication_base_port=free_port_block(1),
    )
    _save(root / PRIMARY, spec)
    _save(root / BACKUP, backup_spec(spec))
    write_pair_file(root)
    return root


def test_where_there_is_nothing_open_says_how_to_start_and_find_says_none(tmp_path: Path) -> None:
    with pytest.raises(
        ClusterNotRunning, match=f"no failsafe cluster at {tmp_path}: start one with 'failsafe up --dir"
    ):
        open_topology(tmp_path)
    assert find_topology(tmp_path) is None
    with pytest.raises(ClusterNotRunning, match="nothing to clean"):
        topology.clean(tmp_path)


def test_the_kind_is_chosen_in_one_place(tmp_path: Path, lone: Path, pair: Path) -> None:
    assert topology_kind(lone) is SingleCluster and topology_kind(pair) is Pair
    assert topology_kind(tmp_path / "new", dr=True) is Pair and topology_kind(tmp_path / "new") is SingleCluster
    assert (SingleCluster.noun, Pair.noun) == ("cluster", "DR pair")
    assert isinstance(find_topology(lone), SingleCluster) and isinstance(find_topology(pair), Pair)


def test_a_lone_cluster_as_a_topology(lone: Path) -> None:
    top = open_topology(lone)
    cluster = Cluster.open(lone)
    assert list(top.clusters()) == ["cluster"] and top.fault_target.dir.root == lone and top.root == lone
    assert top.bootstraps() == {"cluster": cluster.bootstrap_servers}
    assert top.nodes() == {"cluster": cluster.spec.nodes()}
    assert not top.running()
    assert top.not_up() == ["controller 1000 is down", "broker 0 is down", "broker 1 is down", "broker 2 is down"]
    assert top.not_whole() == top.not_up()
    assert top.describe() == "3 brokers in 3 racks, 1 controllers, Kafka 4.3.1, profile defaults"
    assert top.bootstrap_lines() == [cluster.bootstrap_servers]
    stopped = top.down()
    assert stopped == Stopped({"cluster": 0}) and stopped.summary() == "nothing was running"


def test_a_lone_clusters_status_is_what_status_json_printed(lone: Path) -> None:
    status = open_topology(lone).status()
    assert list(status.clusters) == ["cluster"] and status.mirrors == [] and status.note is None
    data = status.to_json()
    assert list(data) == [
        "dir",
        "mode",
        "kafka_version",
        "profile",
        "cluster_id",
        "bootstrap_servers",
        "active_controller",
        "nodes",
        "operator_actions",
    ]
    assert data["profile"] == {"name": "defaults", "version": 1}
    assert (data["dir"], data["mode"], data["cluster_id"], data["active_controller"]) == (
        str(lone),
        "kraft",
        CLUSTER_ID,
        None,
    )
    assert data["nodes"][1] == {
        "id": 0,
        "role": "broker",
        "pid": None,
        "port": Cluster.open(lone).spec.base_port,
        "rack": "rack-0",
        "controller_port": None,
        "state": "down",
        "active_controller": False,
        "metrics": f"http://127.0.0.1:{Cluster.open(lone).spec.base_port + 300}/metrics",
    }
    assert json.loads(run_cli("status", "--json", "--dir", str(lone)).stdout) == data


def test_the_facts_are_those_a_run_records(lone: Path, pair: Path) -> None:
    facts = open_topology(lone).facts()
    assert list(facts) == ["kafka_version", "java", "cluster_dir", "bootstrap_servers", "cluster", "nodes"]
    assert (
        facts["cluster_dir"] == str(lone.resolve())
        and facts["bootstrap_servers"] == Cluster.open(lone).bootstrap_servers
    )
    assert [n["id"] for n in facts["nodes"]] == [n.node_id for n in Cluster.open(lone).spec.nodes()]
    pair_facts = open_topology(pair).facts()
    assert list(pair_facts) == ["dr_pair"] and list(pair_facts["dr_pair"]) == [PRIMARY, BACKUP]
    assert pair_facts["dr_pair"][BACKUP]["cluster_dir"] == str((pair / BACKUP).resolve())


def test_a_dr_pair_as_a_topology(pair: Path) -> None:
    top = open_topology(pair)
    assert list(top.clusters()) == [PRIMARY, BACKUP] and top.fault_target.dir.root == pair / PRIMARY
    primary, backup = Cluster.open(pair / PRIMARY), Cluster.open(pair / BACKUP)
    assert top.bootstraps() == {PRIMARY: primary.bootstrap_servers, BACKUP: backup.bootstrap_servers}
    assert top.nodes() == {PRIMARY: primary.spec.nodes(), BACKUP: backup.spec.nodes()}
    assert not top.running()
    assert top.not_up() == [
        "the primary's controller 1000 is down",
        "the primary's broker 0 is down",
        "the backup's controller 1000 is down",
        "the backup's broker 0 is down",
    ]
    assert top.describe() == (
        f"primary {primary.bootstrap_servers}, backup {backup.bootstrap_servers} (1 brokers each, Kafka 4.3.1, "
        f"profile defaults); mirror with 'failsafe mirror start --dir {pair}'"
    )
    assert top.bootstrap_lines() == [f"primary={primary.bootstrap_servers}", f"backup={backup.bootstrap_servers}"]
    stopped = top.down()
    assert stopped.mirrors == [] and stopped.summary() == "backup: nothing was running; primary: nothing was running"


def test_a_pairs_status_holds_both_clusters_and_the_mirrors(pair: Path) -> None:
    (pair / "mirror" / "primary-backup").mkdir(parents=True)
    status = open_topology(pair).status()
    assert list(status.clusters) == [PRIMARY, BACKUP]
    assert [(m.flow.arrow, m.pid, str(m.state)) for m in status.mirrors] == [("primary->backup", None, "down")]
    data = status.to_json()
    assert list(data) == ["dir", "clusters", "mirrors"] and data["dir"] == str(pair)
    assert data["clusters"][BACKUP] == open_topology(pair / BACKUP).status().to_json()
    assert data["mirrors"] == [
        {
            "flow": "primary->backup",
            "pid": None,
            "state": "down",
            "properties": str(pair / "mirror" / "primary-backup" / "mm2.properties"),
        }
    ]
    assert json.loads(run_cli("status", "--json", "--dir", str(pair)).stdout) == data
    text = run_cli("status", "--dir", str(pair)).stdout
    squashed = "".join(text.split())  # a table's title wraps at the table's width
    assert f"{pair / PRIMARY}(kraft," in squashed and f"{pair / BACKUP}(kraft," in squashed
    assert text.rstrip().endswith("MirrorMaker primary->backup: down")


def test_down_and_clean_of_a_pair_from_the_command_line(pair: Path) -> None:
    down = run_cli("down", "--dir", str(pair))
    assert (
        down.returncode == 0 and down.stderr.strip() == "backup: nothing was running; primary: nothing was running"
    ), down.stderr
    clean = run_cli("clean", "--dir", str(pair))
    assert clean.returncode == 0 and clean.stderr.strip() == f"deleted {pair}", clean.stderr
    assert not pair.exists()


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"format": 2, "clusters": {}}', '{"format": 1, "clusters": {"primary": {"dir": "primary"}}}'],
)
def test_an_unreadable_dr_json_says_to_clean_and_clean_deletes_the_pair(pair: Path, content: str) -> None:
    (pair / PAIR_FILE).write_text(content)
    with pytest.raises(
        UnreadableState, match=f"{pair / PAIR_FILE} is unreadable .*: run 'failsafe clean --dir {pair}' and start again"
    ):
        open_topology(pair)
    topology.clean(pair)
    assert not pair.exists()


def test_clean_of_a_pair_whose_backup_state_is_unreadable(pair: Path) -> None:
    (pair / BACKUP / "failsafe-state.json").write_text('{"format": 1}')
    with pytest.raises(UnreadableState, match="'spec' is missing"):
        open_topology(pair).status()
    topology.clean(pair)
    assert not pair.exists()


def test_stopped_says_one_line() -> None:
    assert Stopped({"cluster": 3}).summary() == "stopped 3 nodes"
    assert Stopped({BACKUP: 4, PRIMARY: 0}).summary() == "backup: stopped 4 nodes; primary: nothing was running"
    assert Stopped({}).summary() == "nothing was running"
