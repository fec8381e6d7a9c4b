"""Hosts over SSH on real test hosts (network namespaces with an sshd each; no Kafka): commands, processes, clock, and
the one-line refusals of a host that refuses SSH, lacks Java or lacks root."""

from __future__ import annotations

import json
import pwd
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from failsafe.hosts import inventory, probe, sync, testbed
from failsafe.hosts import processes as remote
from failsafe.hosts.remote_child import RemoteChild
from failsafe.hosts.ssh import SHELLS, HostUnreachable, RemoteCommandFailed, SshHost
from failsafe.supervisor import DOWN, PAUSED, UP
from failsafe.waiting import wait_until
from tests.helpers import open_dir, run_cli

UNAVAILABLE = testbed.unavailable_reason()
pytestmark = [pytest.mark.hosts, pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")]
NON_ROOT = "failsafe-test"


@pytest.fixture(scope="module")
def bed() -> Iterator[testbed.Testbed]:
    """h1 a whole host, h2 logs in a user who is not root, h3 has no Java."""
    root = open_dir()
    made = testbed.create(root, 3, no_java=("h3",), users={"h2": NON_ROOT})
    yield made
    netns = [h.netns for h in made.hosts]
    left = testbed.destroy(made)
    shutil.rmtree(root)
    assert left == [], "a test left a process running on a test host"
    assert not set(netns) & set(_namespaces())
    assert (
        not any(Path(f"/sys/class/net/{h.veth}").exists() for h in made.hosts)
        and not Path(f"/sys/class/net/{made.bridge}").exists()
    )


def _namespaces() -> list[str]:
    """The named network namespaces (what ``ip netns list`` lists)."""
    return [p.name for p in Path("/run/netns").glob("*")]


@pytest.fixture
def h1(bed: testbed.Testbed) -> Iterator[SshHost]:
    ssh = SshHost(bed.inventory().host("h1"))
    yield ssh
    ssh.close()


def test_each_host_has_its_own_network_stack(bed: testbed.Testbed) -> None:
    seen = {}
    for host in bed.inventory().hosts:
        ssh = SshHost(host)
        out = ssh.check("readlink /proc/self/ns/net; ip -4 -o addr show dev eth0", what="reading its network")
        ssh.close()
        netns, addr = out.splitlines()[:2]
        assert f"inet {host.address}/" in addr
        seen[host.name] = netns
    assert len(set(seen.values())) == 3
    assert Path("/proc/self/ns/net").readlink().name not in seen.values()


def test_a_command_says_its_exit_status_and_streams(h1: SshHost) -> None:
    result = h1.run("echo out; echo err >&2; exit 7")
    assert (result.returncode, result.stdout, result.stderr) == (7, "out\n", "err\n")
    assert result.why() == "err"
    assert h1.run("cat", stdin=b"given").stdout == "given"


def test_commands_run_in_one_open_shell_and_a_command_that_hangs_takes_only_its_own(h1: SshHost) -> None:
    # One shell answers one command after the other: the same parent process (the shell's loop) runs each.
    parents = {h1.check("echo $PPID", what="ppid").strip() for _ in range(3)}
    assert len(parents) == 1
    result = h1.run("printf 'a\\nb'; printf 'no newline' >&2; exit 4")
    assert (result.returncode, result.stdout, result.stderr) == (4, "a\nb", "no newline")
    assert len(h1.check("head -c 300000 /dev/zero | tr '\\0' x", what="big output")) == 300000
    assert h1.check("echo 'two\nlines'\necho third", what="lines").splitlines() == ["two", "lines", "third"]
    with pytest.raises(RemoteCommandFailed, match="no answer within the timeout"):
        h1.run("sleep 5", timeout_s=0.5)
    # A process left in the background with the command's output open writes on after its answer: the next answers
    # are still whole and in step.
    assert h1.run("(sleep 0.2; echo late; echo late >&2) & echo now").stdout == "now\n"
    for _ in range(3):
        assert h1.run("sleep 0.15; echo next").stdout == "next\n"
    # More commands at once than shells: the others run in sessions of their own, and all answer. Parents: each shell's
    # loop, and the connection's sshd for the sessions.
    with ThreadPoolExecutor(max_workers=SHELLS + 2) as pool:
        outs = list(
            pool.map(lambda i: h1.check(f"sleep 0.5; echo {i} $PPID", what="at once").split(), range(SHELLS + 2))
        )
    assert [o[0] for o in outs] == [str(i) for i in range(SHELLS + 2)] and len({o[1] for o in outs}) == SHELLS + 1
    assert h1.check("echo still", what="after").strip() == "still"


def test_a_client_on_a_host_streams_its_output_takes_signals_and_dies_with_its_channel(
    h1: SshHost, tmp_path: Path
) -> None:
    d = h1.host.dir
    script = "trap 'echo term; exit 3' TERM; echo started $$; echo to-log >&2; while :; do sleep 0.1; done"
    child = RemoteChild(h1, ["sh", "-c", script], cwd=d, name="client", log_path=tmp_path / "client.log")
    first, pid = child.stdout.read1(100).split()
    assert first == b"started" and child.running()
    pid = pid.decode()
    child.signal(signal.SIGSTOP)
    wait_until(
        lambda: h1.check(f"sed 's/.*) //' /proc/{pid}/stat | cut -d' ' -f1", what="state").strip() == "T",
        10,
        "not stopped",
    )
    child.signal(signal.SIGCONT)
    child.signal(signal.SIGTERM)
    assert child.wait(10) == 3 and child.stdout.read1(100) == b"term\n"
    assert "to-log" in child.tail() and "to-log" in (tmp_path / "client.log").read_text()
    # The channel's end (failsafe done, or dead) kills what still runs.
    second = RemoteChild(
        h1, ["sh", "-c", "trap '' TERM; echo up $$; while :; do sleep 0.1; done"], cwd=d, name="second"
    )
    up, pid = second.stdout.read1(100).decode().split()
    assert up == "up"
    second.close()
    wait_until(lambda: not h1.run(f"[ -d /proc/{pid} ]").ok(), 10, "the client outlived its channel")


def test_files_round_trip_atomically(h1: SshHost) -> None:
    path = f"{h1.host.dir}/conf/x.properties"
    h1.check(f"mkdir -p {h1.host.dir}/conf", what="mkdir")
    h1.write_text(path, "a=1\n")
    assert h1.read_text(path) == "a=1\n" and h1.read_text(path, offset=2) == "1\n"
    assert h1.read_text(f"{h1.host.dir}/conf/missing") == ""
    assert h1.run(f"ls {h1.host.dir}/conf").stdout.split() == ["x.properties"]


def test_a_process_is_known_by_pid_start_and_boot_and_stopped_by_pid(h1: SshHost) -> None:
    d = h1.host.dir
    script = "echo started; trap 'echo terminated; exit 0' TERM; while :; do sleep 0.1; done"
    proc = remote.start(h1, ["sh", "-c", script], cwd=d, log=d / "logs/p.log", pidfile=d / "pids/p.pid")
    assert remote.read(h1, d / "pids/p.pid") == proc
    assert remote.state(h1, proc) == UP
    # Another start time under the same pid, or another boot: not this process, never signalled.
    impostors = {
        "later": remote.RemoteProcess(proc.pid, proc.start_ticks + 1, proc.boot_id),
        "other-boot": remote.RemoteProcess(proc.pid, proc.start_ticks, "0" * 8),
    }
    for impostor in impostors.values():
        assert remote.state(h1, impostor) == DOWN and not remote.signal_group(h1, impostor, signal.SIGKILL)
    assert remote.states(h1, {"p": proc, **impostors, "none": None}) == {
        "p": UP,
        "later": DOWN,
        "other-boot": DOWN,
        "none": DOWN,
    }
    assert remote.signal_group(h1, proc, signal.SIGSTOP) and remote.wait_state(h1, proc, PAUSED, 5)
    remote.stop(h1, proc, signal.SIGTERM, 10)  # continued first, so its trap runs
    assert remote.state(h1, proc) == DOWN
    assert h1.read_text(f"{d}/logs/p.log").splitlines()[-1] == "terminated"
    assert not remote.signal_group(h1, proc, signal.SIGKILL)


def test_sigkill_ends_what_ignores_sigterm(h1: SshHost) -> None:
    d = h1.host.dir
    proc = remote.start(
        h1,
        ["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"],
        cwd=d,
        log=d / "logs/q.log",
        pidfile=d / "pids/q.pid",
    )
    remote.stop(h1, proc, signal.SIGTERM, 1)
    assert remote.state(h1, proc) == DOWN


def test_the_start_leash_kills_what_failsafe_started_when_it_dies_and_nothing_once_released(
    bed: testbed.Testbed,
) -> None:
    d = bed.inventory().host("h1").dir
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path, PurePosixPath
        from failsafe.hosts import inventory, processes
        from failsafe.hosts.ssh import SshHost
        ssh = SshHost(inventory.load(Path({str(bed.inventory_file)!r})).host("h1"))
        d = PurePosixPath({str(d)!r})
        for name in ("kept", "started"):
            processes.start(ssh, ["sleep", "1000"], cwd=d, log=d / "logs/leash.log", pidfile=d / f"pids/{{name}}.pid")
        with processes.StartLeash({{ssh: [d / "pids/kept.pid"]}}, Path({str(bed.root / "kept.log")!r})) as kept:
            kept.release()
        leash = processes.StartLeash({{ssh: [d / "pids/started.pid"]}}, Path({str(bed.root / "started.log")!r}))
        print("started", flush=True)
        sys.stdin.read()
    """)
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "started"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(10)
    ssh = SshHost(bed.inventory().host("h1"))
    try:
        started, kept = (remote.read(ssh, d / f"pids/{name}.pid") for name in ("started", "kept"))
        assert kept is not None and started is not None
        assert remote.wait_state(ssh, started, DOWN, 15), "the start leash did not kill what failsafe was starting"
        assert remote.state(ssh, kept) == UP, "a released leash killed a node that was ready"
        remote.stop(ssh, kept, signal.SIGKILL, 10)
    finally:
        ssh.close()


def test_the_clock_offset_bound_holds(h1: SshHost) -> None:
    # One machine, one clock: the true offset is 0, and it must lie within the bound.
    offset, error, round_trip = probe.clock_offset(h1, samples=9)
    assert abs(offset) <= error and error == pytest.approx(round_trip / 2)
    assert error < 0.25


def test_check_names_each_host_and_what_it_lacks(bed: testbed.Testbed) -> None:
    result = run_cli("hosts", "check", "--inventory", str(bed.inventory_file), "--network-faults", "--json")
    assert result.returncode == 2
    report = {h["name"]: h for h in json.loads(result.stdout)["hosts"]}
    assert (
        report["h1"]["problems"] == [] and report["h1"]["facts"]["java_major"] >= 17 and report["h1"]["facts"]["root"]
    )
    assert report["h2"]["problems"] == [
        f"host h2 ({bed.hosts[1].address}): network faults need root there, and user uid "
        f"{report['h2']['facts']['uid']} is not: log in as root"
    ]
    assert [p.split(": ", 1)[1] for p in report["h3"]["problems"]] == [
        "no Java (no java on PATH and no JAVA_HOME): install Java 17 or later there"
    ]
    table = run_cli("hosts", "check", "--inventory", str(bed.inventory_file), "--network-faults")
    assert table.returncode == 2
    assert [line for line in table.stderr.splitlines() if line.startswith("failsafe: ")] == [
        f"failsafe: {p}" for h in ("h2", "h3") for p in report[h]["problems"]
    ]
    # What a disk layer needs: h1 has it all (root, /dev/fuse, libfuse 3, fusermount3, python3); h2's user is not root.
    layers = {
        h["name"]: h["problems"]
        for h in json.loads(
            run_cli("hosts", "check", "--inventory", str(bed.inventory_file), "--disk-layers", "--json").stdout
        )["hosts"]
    }
    assert layers["h1"] == []
    assert layers["h2"] == [
        f"host h2 ({bed.hosts[1].address}): disk layers (--volatile-disks, power loss) need root there "
        "(Debian: apt-get install fuse3 python3; log in as root)"
    ]
    ok = run_cli("hosts", "check", "--hosts", bed.hosts[0].address, "--key", str(bed.client_key), "--json")
    assert ok.returncode == 2  # --hosts knows no known_hosts file of the testbed: the key is unknown, said in one line
    assert "its key is not in" in json.loads(ok.stdout)["hosts"][0]["problems"][0]


def test_a_host_that_refuses_ssh_is_one_line_exit_2(bed: testbed.Testbed, tmp_path: Path) -> None:
    inv = tmp_path / "hosts.toml"
    inv.write_text(
        bed.inventory_file.read_text().replace(
            f'address = "{bed.hosts[0].address}"', f'address = "{bed.hosts[0].address}"\nport = 2222'
        )
    )
    result = run_cli("hosts", "check", "--inventory", str(inv))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("failsafe: ")]
    assert lines[0] == (
        f"failsafe: host h1 (root@{bed.hosts[0].address}:2222): connection refused: is sshd running there and "
        "listening on port 2222?"
    )
    with pytest.raises(HostUnreachable, match="cannot log in"):
        SshHost(
            inventory.Host(
                "h1", bed.hosts[0].address, user="nobody-here", key=bed.client_key, known_hosts=bed.known_hosts
            )
        ).run("true")


def test_a_changed_host_key_is_refused(bed: testbed.Testbed, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    other = bed.hosts[1]
    line = next(row for row in bed.known_hosts.read_text().splitlines() if row.startswith(other.address + " "))
    known.write_text(line.replace(other.address, bed.hosts[0].address, 1) + "\n")  # h2's key under h1's address
    host = inventory.Host("h1", bed.hosts[0].address, key=bed.client_key, known_hosts=known)
    with pytest.raises(HostUnreachable, match="does not match"):
        SshHost(host).run("true")
    fresh = tmp_path / "fresh_known_hosts"
    accepting = inventory.Host(
        "h1", bed.hosts[0].address, key=bed.client_key, known_hosts=fresh, new_host_keys="accept"
    )
    ssh = SshHost(accepting)
    assert ssh.run("true").ok()
    ssh.close()
    assert fresh.read_text().startswith(bed.hosts[0].address + " ")


def test_down_kills_what_was_left_running_and_removes_everything(tmp_path: Path) -> None:
    with pytest.raises(testbed.TestbedError, match="could not enter"):
        testbed.create(tmp_path / "closed", 1, users={"h1": "failsafe-test2"})
    made = testbed.create(tmp_path / "bed", 1)
    ssh = SshHost(made.inventory().host("h1"))
    d = ssh.host.dir
    remote.start(ssh, ["sleep", "600"], cwd=d, log=d / "logs/s.log", pidfile=d / "pids/s.pid")
    ssh.close()
    with pytest.raises(testbed.TestbedError, match="exist there already"):
        testbed.create(tmp_path / "bed", 1)
    result = run_cli("hosts", "testbed", "down", "--dir", str(tmp_path / "bed"))
    assert result.returncode == 0, result.stderr
    assert "sleep 600" in result.stderr
    assert made.hosts[0].netns not in _namespaces()
    assert not Path(f"/sys/class/net/{made.bridge}").exists()
    assert run_cli("hosts", "testbed", "down", "--dir", str(tmp_path / "bed")).returncode == 2
    with pytest.raises(KeyError):
        pwd.getpwnam("failsafe-test2")  # the refused testbed added no user


def test_the_users_a_testbed_added_are_removed_with_it() -> None:
    root = open_dir()
    made = testbed.create(root / "bed", 1, users={"h1": "failsafe-test3"})
    assert pwd.getpwnam("failsafe-test3").pw_uid != 0
    testbed.destroy(made)
    shutil.rmtree(root)
    with pytest.raises(KeyError):
        pwd.getpwnam("failsafe-test3")


def test_a_tree_is_copied_once_then_only_what_changed(h1: SshHost, tmp_path: Path) -> None:
    local = tmp_path / "dist"
    (local / "libs").mkdir(parents=True)
    for i in range(5):
        (local / "libs" / f"a{i}.jar").write_bytes(bytes([i]) * (1000 + i))
    (local / "run.sh").write_text("#!/bin/sh\n")
    (local / "run.sh").chmod(0o755)
    remote_dir = h1.host.dir / "synced"
    first = sync.sync_tree(h1, local, remote_dir)
    assert (first.files, first.bytes, first.kept) == (6, sum(1000 + i for i in range(5)) + 10, 0)
    assert sync.sync_tree(h1, local, remote_dir).files == 0
    (local / "libs" / "a3.jar").write_bytes(b"changed")
    (local / "libs" / "a4.jar").unlink()
    again = sync.sync_tree(h1, local, remote_dir, delete=True)
    assert (again.files, again.kept, again.deleted) == (1, 4, 1)
    listing = h1.check(
        f"cd {remote_dir} && find . -type f | sort && stat -c %a run.sh && cat libs/a3.jar", what="listing"
    )
    assert listing.split() == [
        "./libs/a0.jar",
        "./libs/a1.jar",
        "./libs/a2.jar",
        "./libs/a3.jar",
        "./run.sh",
        "755",
        "changed",
    ]
