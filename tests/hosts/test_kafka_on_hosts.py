"""A real Kafka cluster on three test hosts (network namespaces, each with its own sshd), brought up, broken and judged
over SSH; a host that lacks Java or root refused in one line; nothing left running, no rule and no namespace left
behind."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.cluster.net import netfilter
from failsafe.hosts import testbed
from failsafe.hosts.ssh import SshHost
from tests.helpers import TEST_HEAP, open_dir, run_cli

UNAVAILABLE = testbed.unavailable_reason()
pytestmark = [
    pytest.mark.hosts,
    pytest.mark.cluster,
    pytest.mark.breaks_cluster,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or ""),
]


@pytest.fixture
def bed(own_cluster_dir: Path) -> Iterator[testbed.Testbed]:
    """Three whole hosts, and a fourth without Java (h4), a fifth that logs in a user who is not root (h5)."""
    root = open_dir()  # h5's user must enter its directory
    made = testbed.create(root / "bed", 5, no_java=("h4",), users={"h5": "failsafe-hosts-e2e"})
    yield made
    if (
        own_cluster_dir / "failsafe-state.json"
    ).exists():  # a test that failed half-way: its nodes stopped as down does
        run_cli("down", "--dir", str(own_cluster_dir), "--timeout-s", "20")
    namespaces = [h.netns for h in made.hosts]
    left = testbed.destroy(made)
    shutil.rmtree(root)
    assert left == [], f"processes left on the test hosts: {left}"
    assert not set(namespaces) & {p.name for p in Path("/run/netns").glob("*")}


def inventory(bed: testbed.Testbed, tmp: Path, names: tuple[str, ...]) -> Path:
    """A hosts.toml of the testbed's hosts ``names`` only."""
    text = bed.inventory_file.read_text()
    head, *entries = text.split("[[host]]")
    kept = [e for e in entries if any(f'name = "{n}"' in e for n in names)]
    path = tmp / f"hosts-{'-'.join(names)}.toml"
    path.write_text(head + "".join("[[host]]" + e for e in kept))
    return path


def _chains(bed: testbed.Testbed, root: Path) -> list[str]:
    """The hosts (of h1-h3) where the cluster's table holds a chain: a network fault in force there."""
    found = []
    for host in bed.inventory().hosts[:3]:
        ssh = SshHost(host)
        if netfilter.parse_listing(ssh.run(f"nft list table inet {netfilter.table_name(root)}").stdout):
            found.append(host.name)
        ssh.close()
    return found


def test_a_cluster_on_three_hosts_fails_over_and_leaves_nothing(
    bed: testbed.Testbed, own_cluster_dir: Path, tmp_path: Path
) -> None:
    d = str(own_cluster_dir)
    # A host without Java: refused in one line, exit 2, before anything starts anywhere.
    no_java = run_cli(
        "up",
        "--dir",
        str(tmp_path / "nojava"),
        "--inventory",
        str(inventory(bed, tmp_path, ("h1", "h2", "h4"))),
        "--heap",
        TEST_HEAP,
    )
    assert no_java.returncode == 2, no_java.stderr
    assert no_java.stderr.strip().splitlines()[-1].startswith("failsafe: host h4") and "no Java" in no_java.stderr
    assert [testbed.strays(h) for h in bed.hosts[:2]] == [[], []], "a refused start left something running"

    started = time.monotonic()
    up = run_cli(
        "up", "--dir", d, "--inventory", str(inventory(bed, tmp_path, ("h1", "h2", "h3"))), "--heap", TEST_HEAP
    )
    up_s = time.monotonic() - started
    assert up.returncode == 0, up.stderr
    addresses = [h.address for h in bed.hosts[:3]]
    assert up.stdout.strip().splitlines()[-1] == ",".join(f"{a}:{9092 + i}" for i, a in enumerate(addresses))
    status = json.loads(run_cli("status", "--dir", d, "--json").stdout)
    assert {n["state"] for n in status["nodes"]} == {"up"}

    # broker-failover with Kafka's Java clients placed on hosts (the producer on h3, the consumer on h2), judged on
    # failsafe's clock; leader-isolated below keeps its librdkafka clients here.
    runs = tmp_path / "runs"
    java_on = (
        "--set",
        'producers[*].driver="kafka-verifiable"',
        "--set",
        'producers[*].host="h3"',
        "--set",
        'consumers[*].driver="kafka-verifiable"',
        "--set",
        'consumers[*].host="h2"',
        "--set",
        "consumers[*].count=1",
    )
    failover = run_cli("run", "broker-failover", "--dir", d, "--runs", str(runs), *java_on, timeout_s=400)
    assert failover.returncode == 0, failover.stderr[-3000:]
    (run_dir,) = [p.parent for p in runs.glob("broker-failover/*/results.json")]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    hosts = {h["name"]: h for h in manifest["hosts"]}
    assert set(hosts) == {"h1", "h2", "h3"}
    for h in hosts.values():
        # One machine, one clock: the offset found lies within the bound stated.
        assert abs(h["clock_offset_s"]) <= h["clock_error_s"] < 0.25 and h["kernel"] and h["java"]
    configs = [
        json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if '"client-config"' in line
    ]
    assert {c["process"]: c.get("host") for c in configs} == {"producer": "h3", "member-0": "h2"}
    assert all(abs(c["clock_offset_ns"]) <= c["clock_error_ns"] < 250_000_000 for c in configs)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] == "VALID"
    breakdown = results["measurements"]["failover_breakdown"]
    assert breakdown["partitions"], "the failover's time, read from the hosts' logs, was not broken down"
    # An app on a host: the transactional example's instances on h3 (its file copied there; this machine's Python, since
    # the test hosts share its file system), through a kill of the broker leading its input and a kill of an instance.
    app = run_cli(
        "run",
        "examples/apps/eos-broker-and-instance-kill.toml",
        "--dir",
        d,
        "--runs",
        str(runs),
        "--set",
        'apps[0].host="h3"',
        "--set",
        'apps[0].files=["examples/apps/eos_ctp.py"]',
        "--set",
        f'apps[0].command=["{sys.executable}", "examples/apps/eos_ctp.py"]',
        "--set",
        "phases.chaos_s=20",
        "--set",
        "faults[1].at_s=10",
        timeout_s=400,
    )
    assert app.returncode == 0, app.stderr[-3000:]
    (app_run,) = [p.parent for p in runs.glob("app-eos-kills/*/results.json")]
    ops = [json.loads(line) for line in (app_run / "history.jsonl").read_text().splitlines()]
    starts = {o["process"]: o.get("host") for o in ops if o["f"] == "app-start"}
    assert starts == {"eos-0": "h3", "eos-1": "h3", "eos-0.1": "h3"}, starts
    assert [o["exit_code"] for o in ops if o["f"] == "app-exit" and o["process"] == "eos-0"] == [-9]
    assert json.loads((app_run / "results.json").read_text())["verdict"] == "VALID"
    h3 = SshHost(bed.inventory().hosts[2])
    there = h3.run(f"cd {h3.host.dir}/clusters/*/clients/apps/eos && ls examples/apps state/{app_run.name}").stdout
    h3.close()
    assert "eos_ctp.py" in there.split() and {"eos-0", "eos-1"} <= set(there.split()), there
    assert not [p for p in testbed.strays(bed.hosts[2]) if "eos_ctp" in p], "an app instance outlived its run on h3"
    # A fault that cuts the clients' links cannot cut a client on a host: refused in one line before anything runs.
    cutting = run_cli(
        "run", "leader-isolated", "--dir", d, "--runs", str(runs), *java_on, "--set", "faults[0].clients=true"
    )
    assert cutting.returncode == 2, cutting.stderr
    assert "cuts the clients' links" in cutting.stderr.strip().splitlines()[-1]

    # Isolated 12 s, not the scenario's 20 (make test's budget): still past broker.session.timeout.ms, so a new leader
    # comes.
    isolated = run_cli(
        "run",
        "leader-isolated",
        "--dir",
        d,
        "--runs",
        str(runs),
        "--set",
        "faults[0].duration_s=12",
        "--set",
        "phases.chaos_s=18",
        "--set",
        "phases.recover_s=6",
        timeout_s=400,
    )
    assert isolated.returncode in (0, 4), isolated.stderr[-3000:]
    assert json.loads((sorted(runs.glob("leader-isolated/*/results.json"))[0]).read_text())["verdict"] in (
        "VALID",
        "KNOWN",
    )
    assert _chains(bed, own_cluster_dir) == [], "a network fault's rules outlived its heal on a host"

    down = run_cli("down", "--dir", d)
    assert down.returncode == 0, down.stderr
    assert [testbed.strays(h) for h in bed.hosts[:3]] == [[], [], []], "down left a node running on a host"
    clean = run_cli("clean", "--dir", d)
    assert clean.returncode == 0, clean.stderr
    for host in bed.inventory().hosts[:3]:
        ssh = SshHost(host)
        assert ssh.run(f"ls {host.dir}/clusters").stdout.split() == [], "clean left the cluster's files on a host"
        ssh.close()
    print(f"up on 3 namespace hosts over SSH: {up_s:.1f} s")

    # A host whose user is not root cannot take a network fault: refused in one line naming it, nothing cut (a broker on
    # h5).
    roles = tmp_path / "hosts-h1-h5.toml"
    roles.write_text(
        inventory(bed, tmp_path, ("h1", "h5"))
        .read_text()
        .replace('name = "h1"', 'name = "h1"\nroles = ["controller"]')
        .replace('name = "h5"', 'name = "h5"\nroles = ["broker"]')
    )
    up = run_cli("up", "--dir", d, "--inventory", str(roles), "--heap", TEST_HEAP, "--brokers", "1")
    assert up.returncode == 0, up.stderr
    refused = run_cli("net", "isolate", "0", "--dir", d)
    assert refused.returncode == 2, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("failsafe: host h5") and "need root" in last, last
    assert run_cli("clean", "--dir", d).returncode == 0
    assert [testbed.strays(h) for h in (bed.hosts[0], bed.hosts[4])] == [[], []]


@pytest.mark.long  # a 6-node cluster and a run: the e2e above covers the same path; make test-long runs it
def test_the_atlas_makes_its_cluster_on_hosts_and_deletes_it_after(bed: testbed.Testbed, tmp_path: Path) -> None:
    out = tmp_path / "atlas"
    result = run_cli(
        "atlas",
        "--cells",
        "fault=kill;profile=defaults;client=librdkafka;mode=kraft-4.3.1",
        "--repeat",
        "1",
        "--out",
        str(out),
        "--heap",
        TEST_HEAP,
        "--inventory",
        str(inventory(bed, tmp_path, ("h1", "h2", "h3"))),
        timeout_s=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    cell = json.loads((out / "cells" / "kill--defaults--librdkafka--kraft-4.3.1.json").read_text())
    (run,) = cell["runs"]
    assert run["verdict"] == "VALID" and run["unavailable_ms"] is not None
    manifest = json.loads(next((out / "runs").rglob("manifest.json")).read_text())
    assert {h["name"] for h in manifest["hosts"]} == {"h1", "h2", "h3"}
    assert not (out / "cluster").exists() and [testbed.strays(h) for h in bed.hosts[:3]] == [[], [], []]
    refused = run_cli(
        "atlas",
        "--cells",
        "fault=kill;profile=defaults;client=librdkafka;mode=zookeeper-3.9.2",
        "--repeat",
        "1",
        "--out",
        str(out),
        "--inventory",
        str(inventory(bed, tmp_path, ("h1", "h2", "h3"))),
    )
    assert refused.returncode == 2 and "KRaft mode" in refused.stderr.strip().splitlines()[-1]


@pytest.mark.long  # a campaign and the console on a cluster on hosts: the same Cluster and run paths as the e2e above
def test_a_campaign_and_the_console_work_on_a_cluster_on_hosts(
    bed: testbed.Testbed, own_cluster_dir: Path, tmp_path: Path
) -> None:
    import httpx

    from tests.e2e.console_helpers import start_console, stop_console

    d = str(own_cluster_dir)
    # The acks-all workload's cluster: 3 brokers and 3 controllers, one of each on every host.
    up = run_cli(
        "up",
        "--dir",
        d,
        "--inventory",
        str(inventory(bed, tmp_path, ("h1", "h2", "h3"))),
        "--heap",
        TEST_HEAP,
        "--controllers",
        "3",
    )
    assert up.returncode == 0, up.stderr
    # Two drawn schedules of kills and isolations, each judged; the isolations' rules leashed on the hosts.
    out = tmp_path / "campaign"
    campaign = run_cli(
        "campaign",
        "--dir",
        d,
        "--runs",
        "2",
        "--seed",
        "7",
        "--duration-s",
        "12",
        "--faults",
        "kill,isolate",
        "--out",
        str(out),
        timeout_s=900,
    )
    assert campaign.returncode in (0, 4), campaign.stderr[-3000:]
    summary = json.loads(next(out.rglob("campaign.json")).read_text())
    assert [r["verdict"] for r in summary["runs"]] and all(r["verdict"] in ("VALID", "KNOWN") for r in summary["runs"])
    assert len(summary["runs"]) == 2 and _chains(bed, own_cluster_dir) == []
    # The console: each node's host, a broker killed and started again there.
    console = start_console(own_cluster_dir)
    try:
        with httpx.Client(base_url=console.base, timeout=60, headers=console.headers) as http:
            nodes = http.get("/api/cluster").json()["nodes"]
            assert [n["state"] for n in nodes] == ["up"] * 6
            assert http.post("/api/nodes/broker/1/kill").status_code == 200
            states = {
                (n["role"], n["id"]): n["state"]
                for n in json.loads(run_cli("status", "--dir", d, "--json").stdout)["nodes"]
            }
            assert states[("broker", 1)] == "down"
            assert http.post("/api/nodes/broker/1/start").status_code == 200
            assert {n["state"] for n in json.loads(run_cli("status", "--dir", d, "--json").stdout)["nodes"]} == {"up"}
    finally:
        err = stop_console(console, own_cluster_dir)
    assert "Traceback" not in err
    assert run_cli("clean", "--dir", d).returncode == 0
    assert [testbed.strays(h) for h in bed.hosts[:3]] == [[], [], []]


@pytest.mark.long  # disk layers on hosts: a power loss of a broker there, a full disk, and clean leaves no mount
def test_a_power_loss_on_a_host_takes_what_was_not_synced_and_clean_leaves_no_mount(
    bed: testbed.Testbed, own_cluster_dir: Path, tmp_path: Path
) -> None:
    def layers() -> list[str]:
        """The disk layers mounted on h1-h3, as each host's own mount table lists them (a host has its own mounts)."""
        found = []
        for host in bed.inventory().hosts[:3]:
            ssh = SshHost(host)
            found += ssh.run("findmnt -rn -t fuse.failsafe-disk -o TARGET").stdout.split()
            ssh.close()
        return found

    d = str(own_cluster_dir)
    up = run_cli(
        "up",
        "--dir",
        d,
        "--inventory",
        str(inventory(bed, tmp_path, ("h1", "h2"))),
        "--heap",
        TEST_HEAP,
        "--volatile-disks",
        "--brokers",
        "1",
    )
    assert up.returncode == 0, up.stderr
    nodes = json.loads(run_cli("status", "--dir", d, "--json").stdout)["nodes"]
    assert all(n["disk"] is not None for n in nodes), nodes
    assert len(layers()) == len(nodes), "each node's data is on a disk layer mounted on its host"
    runs = tmp_path / "runs"
    result = run_cli("run", "power-loss-single-broker", "--dir", d, "--runs", str(runs), timeout_s=400)
    (run_dir,) = [p.parent for p in runs.glob("power-loss-single-broker/*/results.json")]
    results = json.loads((run_dir / "results.json").read_text())
    delivery = results["checkers"]["delivery"]
    # Kafka's default flush: the broker's acknowledged writes die with its host's page cache, as on this machine.
    assert result.returncode == 1 and delivery["counts"]["lost-after-read"] > 0, result.stderr[-2000:]
    start = next(
        json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if '"fault-start"' in line
    )
    assert start["fault"] == "power-loss" and start["details"]["lost"]["0"]["bytes_lost"] > 0
    assert run_cli("clean", "--dir", d).returncode == 0
    assert layers() == [] and [testbed.strays(h) for h in bed.hosts[:2]] == [[], []]

    # A disk fault on hosts: the leader's disk full, through the same layer on its host; nothing acknowledged lost.
    up = run_cli(
        "up",
        "--dir",
        d,
        "--inventory",
        str(inventory(bed, tmp_path, ("h1", "h2", "h3"))),
        "--heap",
        TEST_HEAP,
        "--volatile-disks",
    )
    assert up.returncode == 0, up.stderr
    full = run_cli("run", "disk-full", "--dir", d, "--runs", str(runs), timeout_s=400)
    assert full.returncode == 0, full.stderr[-3000:]
    start = next(
        json.loads(line)
        for line in next(runs.glob("disk-full/*/history.jsonl")).read_text().splitlines()
        if '"fault-start"' in line
    )
    assert start["fault"] == "disk-full"
    assert run_cli("clean", "--dir", d).returncode == 0
    assert layers() == [] and [testbed.strays(h) for h in bed.hosts[:3]] == [[], [], []]
