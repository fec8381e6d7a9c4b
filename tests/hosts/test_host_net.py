"""Network rules on test hosts, without Kafka: a chain goes where its packets leave from, the heal takes it from every
place, and the leash on a host deletes what it holds when failsafe dies (SIGKILL)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.cluster.net import netfilter
from failsafe.cluster.nodes.hosts import HostNodes, place, save_inventory
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir
from failsafe.hosts import testbed
from failsafe.hosts.ssh import SshHost
from failsafe.waiting import wait_until

UNAVAILABLE = testbed.unavailable_reason()
pytestmark = [pytest.mark.hosts, pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")]


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testbed.Testbed]:
    made = testbed.create(tmp_path_factory.mktemp("netbed"), 2)
    yield made
    assert testbed.destroy(made) == []


@pytest.fixture
def nodes(bed: testbed.Testbed, tmp_path: Path) -> Iterator[HostNodes]:
    inv = bed.inventory()
    spec = ClusterSpec(brokers=2, controllers=1)
    spec = ClusterSpec(brokers=2, controllers=1, placement=place(spec, inv)).validate()
    cdir = ClusterDir(tmp_path / "cluster")
    save_inventory(cdir, inv)
    made = HostNodes(cdir, spec, inv)
    yield made
    made.net_delete_all()
    made.close()


def _table_on(bed: testbed.Testbed, index: int, root: Path) -> str:
    ssh = SshHost(bed.inventory().hosts[index])
    out = ssh.run(f"nft list table inet {netfilter.table_name(root)} 2>/dev/null").stdout
    ssh.close()
    return out


def _connects(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


def test_a_chain_goes_where_its_packets_leave_and_the_heal_takes_it_from_every_place(
    bed: testbed.Testbed, nodes: HostNodes
) -> None:
    h1, h2 = bed.hosts
    # A listener on h2 (its sshd port stays reachable: the rules name the port they cut only).
    rules = {
        h1.address: [f"ip daddr {h2.address} tcp dport 22 counter drop"],
        netfilter.LOCAL: [f"ip daddr {h1.address} tcp dport 2 counter drop"],
    }
    nodes.net_add("fault_1", "test cut", rules)
    assert "fault_1" in _table_on(bed, 0, nodes.dir.root) and _table_on(bed, 1, nodes.dir.root) == ""
    ssh1 = SshHost(bed.inventory().hosts[0])
    # h1 can no longer reach h2's port 22; failsafe still reaches h1 over SSH.
    probe = f"python3 -c \"import socket; socket.create_connection(('{h2.address}', 22), 2)\""
    assert not ssh1.run(probe).ok()
    assert ssh1.run("true").ok()
    chains = nodes.net_chains()
    assert [c.name for c in chains] == ["fault_1"] and any(r.startswith("h1: ") for r in chains[0].rules)
    assert any(r.startswith("here: ") for r in chains[0].rules)
    assert nodes.net_delete("fault_1")
    assert "fault_1" not in _table_on(bed, 0, nodes.dir.root)
    assert netfilter.list_chains(nodes.dir.root) == []
    assert _connects(h2.address, 22) and ssh1.run(probe).ok()
    ssh1.close()


def test_a_refused_rule_leaves_no_chain_anywhere(bed: testbed.Testbed, nodes: HostNodes) -> None:
    h1, h2 = bed.hosts
    with pytest.raises(netfilter.NftError, match="host h2"):
        nodes.net_add("fault_1", "half", {h1.address: ["tcp dport 1 counter drop"], h2.address: ["this is not a rule"]})
    assert "fault_1" not in _table_on(bed, 0, nodes.dir.root)


def test_the_leash_on_a_host_deletes_its_chains_when_failsafe_is_killed(
    bed: testbed.Testbed, nodes: HostNodes, tmp_path: Path
) -> None:
    h1 = bed.hosts[0]
    script = textwrap.dedent(f"""
        import sys, json
        from pathlib import Path
        from failsafe.cluster.state import ClusterDir
        from failsafe.cluster.nodes.hosts import HostNodes, load_inventory
        from failsafe.cluster.spec import ClusterSpec
        cdir = ClusterDir(Path({str(nodes.dir.root)!r}))
        spec = ClusterSpec.from_json(json.loads({json.dumps(json.dumps(nodes.spec.to_json()))}))
        nodes = HostNodes(cdir, spec, load_inventory(cdir))
        leash = nodes.net_leash(Path({str(tmp_path / "leash.log")!r}))
        leash.hold("fault_7")
        nodes.net_add("fault_7", "held", {{{h1.address!r}: ["tcp dport 1 counter drop"]}})
        print("in force", flush=True)
        sys.stdin.read()
    """)
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "in force"
            assert "fault_7" in _table_on(bed, 0, nodes.dir.root)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(10)
    wait_until(lambda: "fault_7" not in _table_on(bed, 0, nodes.dir.root), 15, "the leash on h1 did not delete fault_7")
