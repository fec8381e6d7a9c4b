"""Test hosts on this machine: Linux network namespaces, each with its own address and its own sshd (docs/hosts.md).

    bridge fsb<tag>  10.213.N.1/24        failsafe's side: the address it reaches the hosts from
    netns  fs<tag>-h1  eth0 10.213.N.11   sshd on :22, keys and config under DIR/h1/
    netns  fs<tag>-h2  eth0 10.213.N.12   ...

Each host has a network stack of its own (addresses, routes, nftables), so a rule there cuts a real link;
the file system is shared, so each host's failsafe directory is DIR/<name>/root. A host made with
``java=False`` runs its sshd in a mount namespace of its own where /usr/lib/jvm is an empty tmpfs: a host
without Java. A host made with a ``user`` logs that user in instead of root (a host without root).

Every step is written to DIR/testbed.json before it is taken, so ``destroy`` (and ``failsafe hosts testbed
down``) removes exactly what was made, also after a crash: the sshd daemons by pid and start time, the
namespaces with whatever still runs in them, the bridge, the users it added.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from failsafe.errors import UserError
from failsafe.hosts import inventory
from failsafe.supervisor import TrackedProcess, run_to_end
from failsafe.waiting import WaitTimeout, wait_until

IP_TIMEOUT_S = 10.0
SSHD_START_TIMEOUT_S = 10.0
SUBNET_PREFIX = "10.213"
FIRST_HOST = 11
STATE = "testbed.json"
_SSHD = "/usr/sbin/sshd"
_JVM_DIR = "/usr/lib/jvm"


class TestbedError(UserError):
    """Test hosts cannot be made here (not root, no sshd, no ip)."""


@dataclass
class TestHost:
    name: str
    netns: str
    address: str
    veth: str
    user: str = "root"
    java: bool = True
    sshd: list[float] | None = None  # [pid, create_time] of its sshd

    def dir(self, root: Path) -> Path:
        return root / self.name


@dataclass
class Testbed:
    root: Path
    tag: str
    subnet: str
    bridge: str
    hosts: list[TestHost] = field(default_factory=list)
    users: list[str] = field(default_factory=list)  # users this testbed added (removed by destroy)

    @property
    def gateway(self) -> str:
        """failsafe's own address on the testbed network."""
        return str(ipaddress.ip_network(self.subnet).network_address + 1)

    @property
    def client_key(self) -> Path:
        return self.root / "client_key"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def inventory_file(self) -> Path:
        return self.root / "hosts.toml"

    def inventory(self) -> inventory.Inventory:
        return inventory.load(self.inventory_file)

    def save(self) -> None:
        data = asdict(self)
        data["root"] = str(self.root)
        tmp = self.root / (STATE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.root / STATE)

    @classmethod
    def open(cls, root: Path) -> Testbed:
        try:
            data = json.loads((root / STATE).read_text())
        except FileNotFoundError as e:
            raise TestbedError(f"{root}: no test hosts there (no {STATE})") from e
        except (OSError, ValueError) as e:
            raise TestbedError(f"{root}/{STATE}: unreadable ({e})") from e
        hosts = [TestHost(**h) for h in data.pop("hosts")]
        return cls(root=Path(data.pop("root")), hosts=hosts, **data)


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "test hosts need root (network namespaces, sshd)"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"test hosts need {tool!r} (Debian: iproute2, util-linux)"
    if not Path(_SSHD).exists():
        return "test hosts need sshd (Debian: openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "test hosts need ssh-keygen (Debian: openssh-client)"
    return None


def create(root: Path, count: int, *, no_java: tuple[str, ...] = (), users: dict[str, str] | None = None) -> Testbed:
    """``count`` hosts h1..hN under ``root``; ``no_java`` names hosts without Java, ``users`` maps a host to the
    non-root user it logs in. On any failure what was made is removed before the error propagates."""
    reason = unavailable_reason()
    if reason:
        raise TestbedError(reason)
    if not 1 <= count <= 200:
        raise TestbedError(f"{count} test hosts: 1 to 200")
    root = root.resolve()
    if (root / STATE).exists():
        raise TestbedError(f"{root}: test hosts exist there already (failsafe hosts testbed down {root})")
    root.mkdir(parents=True, exist_ok=True)
    if users:
        closed = [p for p in (root, *root.parents) if not os.stat(p).st_mode & 0o001]
        if closed:
            raise TestbedError(
                f"{root}: a host's user who is not root could not enter {closed[0]} (mode "
                f"{oct(os.stat(closed[0]).st_mode & 0o777)}): choose a directory every user may enter"
            )
    tag = hashlib.sha256(str(root).encode()).hexdigest()[:6]
    bed = Testbed(root=root, tag=tag, subnet=_free_subnet(tag), bridge=f"fsb{tag}")
    bed.hosts = [
        TestHost(
            name=f"h{i}",
            netns=f"fs{tag}-h{i}",
            address=_host_address(bed.subnet, i),
            veth=f"fsv{tag}{i}",
            user=(users or {}).get(f"h{i}", "root"),
            java=f"h{i}" not in no_java,
        )
        for i in range(1, count + 1)
    ]
    bed.save()
    try:
        _keygen(bed.client_key)
        _make_bridge(bed)
        for host in bed.hosts:
            _make_host(bed, host)
        _write_inventory(bed)
        for host in bed.hosts:
            _start_sshd(bed, host)
    except BaseException:
        destroy(bed)
        raise
    return bed


def destroy(bed: Testbed) -> list[str]:
    """Remove every sshd, process, namespace, link and user the testbed made; returns what was left running in a
    namespace (processes some test did not stop: killed here, reported so the test that leaked them can fail)."""
    leftovers: list[str] = []
    errors: list[BaseException] = []
    for host in bed.hosts:
        # Each step of each host is taken whatever failed before it; the first error is raised at the end.
        steps = [
            lambda h=host: _stop_sshd(TrackedProcess(int(h.sshd[0]), h.sshd[1])) if h.sshd else None,
            lambda h=host: leftovers.extend(_empty_namespace(h.netns)),
            lambda h=host: _ip("netns", "del", h.netns, missing_ok=True),
            lambda h=host: _ip("link", "del", h.veth, missing_ok=True),
        ]
        for step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - re-raised below, after every host
                errors.append(e)
    _ip("link", "del", bed.bridge, missing_ok=True)
    for user in bed.users:
        run_to_end(["userdel", user], name="userdel", timeout_s=IP_TIMEOUT_S)
    if errors:
        raise errors[0]
    wait_until(
        lambda: not any(_link_exists(h.veth) for h in bed.hosts),
        IP_TIMEOUT_S,
        "test host links still there after deleting them",
    )
    (bed.root / STATE).unlink(missing_ok=True)
    return leftovers


def strays(host: TestHost) -> list[str]:
    """What runs on a test host besides its sshd and the processes sshd forked for connections: what failsafe started
    there and left (a test after 'down' must find none)."""
    own: set[int] = set()
    if host.sshd:
        proc = TrackedProcess(int(host.sshd[0]), host.sshd[1]).process()
        if proc is not None:
            own = {proc.pid, *(c.pid for c in proc.children(recursive=True))}
    left = []
    for pid in namespace_pids(host.netns):
        if pid in own:
            continue
        try:
            left.append(f"pid {pid} {' '.join(psutil.Process(pid).cmdline())[:120]}")
        except psutil.NoSuchProcess:
            continue
    return left


def namespace_pids(netns: str) -> list[int]:
    """The processes running in a test host's namespace (``ip netns pids``): what a test must leave none of."""
    result = run_to_end(["ip", "netns", "pids", netns], name="ip netns pids", timeout_s=IP_TIMEOUT_S)
    return [int(p) for p in result.output.split() if p.isdigit()] if result.returncode == 0 else []


# -- the parts ----------------------------------------------------------------------------------------------


def _free_subnet(tag: str) -> str:
    taken = [
        ipaddress.ip_network(r.split()[0], strict=False)
        for r in _ip_lines("-4", "route", "show", "table", "all")
        if r[:1].isdigit()
    ]
    start = int(tag, 16) % 250
    for step in range(250):
        candidate = ipaddress.ip_network(f"{SUBNET_PREFIX}.{(start + step) % 250}.0/24")
        if not any(candidate.overlaps(net) for net in taken):
            return str(candidate)
    raise TestbedError(f"no free /24 in {SUBNET_PREFIX}.0.0/16 for test hosts")


def _host_address(subnet: str, index: int) -> str:
    return str(ipaddress.ip_network(subnet).network_address + FIRST_HOST - 1 + index)


def _make_bridge(bed: Testbed) -> None:
    _ip("link", "add", bed.bridge, "type", "bridge")
    _ip("addr", "add", f"{bed.gateway}/{ipaddress.ip_network(bed.subnet).prefixlen}", "dev", bed.bridge)
    _ip("link", "set", bed.bridge, "up")


def _make_host(bed: Testbed, host: TestHost) -> None:
    prefix = ipaddress.ip_network(bed.subnet).prefixlen
    _ip("netns", "add", host.netns)
    _ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
    _ip("link", "set", host.veth, "master", bed.bridge, "up")
    _ip("-n", host.netns, "addr", "add", f"{host.address}/{prefix}", "dev", "eth0")
    _ip("-n", host.netns, "link", "set", "eth0", "up")
    _ip("-n", host.netns, "link", "set", "lo", "up")
    _ip("-n", host.netns, "route", "add", "default", "via", bed.gateway)
    d = host.dir(bed.root)
    (d / "root").mkdir(parents=True, exist_ok=True)
    _keygen(d / "host_key")
    (d / "authorized_keys").write_text(Path(f"{bed.client_key}.pub").read_text())
    if host.user != "root":
        _add_user(bed, host.user, d / "root")
        shutil.chown(d / "root", user=host.user)
    key_type, key = Path(f"{d / 'host_key'}.pub").read_text().split()[:2]
    with bed.known_hosts.open("a") as f:
        f.write(f"{host.address} {key_type} {key}\n")
    (d / "sshd_config").write_text(
        f"ListenAddress {host.address}\nPort 22\nHostKey {d / 'host_key'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nMaxSessions 64\nMaxStartups 64\n"
        f"AllowUsers {host.user}\nSubsystem sftp internal-sftp\nLogLevel VERBOSE\n"
    )


def _write_inventory(bed: Testbed) -> None:
    lines = [
        "# test hosts made by failsafe (docs/hosts.md): network namespaces on this machine",
        "[defaults]",
        f'key = "{bed.client_key}"',
        f'known_hosts = "{bed.known_hosts}"',
        "",
    ]
    for host in bed.hosts:
        lines += [
            "[[host]]",
            f'name = "{host.name}"',
            f'address = "{host.address}"',
            f'user = "{host.user}"',
            f'dir = "{host.dir(bed.root) / "root"}"',
            "",
        ]
    bed.inventory_file.write_text("\n".join(lines))


def _start_sshd(bed: Testbed, host: TestHost) -> None:
    d = host.dir(bed.root)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    sshd = [_SSHD, "-f", str(d / "sshd_config"), "-E", str(d / "sshd.log")]
    if host.java:
        cmd = ["ip", "netns", "exec", host.netns, *sshd]
    else:
        hide = f"mount -t tmpfs -o ro,size=1m failsafe-no-java {_JVM_DIR} && exec {' '.join(sshd)}"
        cmd = ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--propagation", "private", "sh", "-c", hide]
    result = run_to_end(cmd, name=f"sshd {host.name}", timeout_s=SSHD_START_TIMEOUT_S)
    if result.returncode != 0:
        raise TestbedError(f"test host {host.name}: sshd did not start: {result.output.strip() or result.returncode}")
    try:
        tracked = wait_until(
            lambda: read_pidfile_sshd(d / "sshd.pid"),
            SSHD_START_TIMEOUT_S,
            f"test host {host.name}: sshd wrote no pid file",
        )
    except WaitTimeout as e:
        raise TestbedError(str(e)) from e
    host.sshd = [tracked.pid, tracked.create_time]
    bed.save()


def read_pidfile_sshd(path: Path) -> TrackedProcess | None:
    """sshd's own pid file holds just the pid: its start time is read from /proc while it runs."""
    try:
        pid = int(path.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None
    try:
        return TrackedProcess(pid, psutil.Process(pid).create_time())
    except psutil.NoSuchProcess:
        return None


def _add_user(bed: Testbed, user: str, home: Path) -> None:
    if run_to_end(["id", "-u", user], name="id", timeout_s=IP_TIMEOUT_S).returncode == 0:
        return  # someone else's user: used, never removed
    bed.users.append(user)
    bed.save()
    result = run_to_end(
        [
            "useradd",
            "--system",
            "--password",
            "*",
            "--no-create-home",
            "--home-dir",
            str(home),
            "--shell",
            "/bin/sh",
            user,
        ],
        name="useradd",
        timeout_s=IP_TIMEOUT_S,
    )
    if result.returncode != 0:
        raise TestbedError(f"cannot add user {user}: {result.output.strip()}")


def _keygen(path: Path) -> None:
    if path.exists():
        return
    result = run_to_end(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "failsafe-testbed", "-f", str(path)],
        name="ssh-keygen",
        timeout_s=IP_TIMEOUT_S,
    )
    if result.returncode != 0:
        raise TestbedError(f"ssh-keygen failed: {result.output.strip()}")


def _stop_sshd(sshd: TrackedProcess) -> None:
    """The sshd and the children it forked per connection (a connection still open, or one that failed to log in);
    what a session started on its own (setsid, as a node is) is not among them."""
    proc = sshd.process()
    family = [proc, *proc.children(recursive=True)] if proc is not None else []
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(family, timeout=5.0)


def _empty_namespace(netns: str) -> list[str]:
    left = []
    for pid in namespace_pids(netns):
        try:
            proc = psutil.Process(pid)
            left.append(f"{netns}: pid {pid} {' '.join(proc.cmdline())[:120]}")
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    if left:
        wait_until(lambda: not namespace_pids(netns), IP_TIMEOUT_S, f"processes still running in {netns} after SIGKILL")
    return left


def _link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def _ip_lines(*args: str) -> list[str]:
    result = run_to_end(["ip", *args], name="ip", timeout_s=IP_TIMEOUT_S)
    if result.returncode != 0:
        raise TestbedError(f"ip {' '.join(args)}: {result.output.strip()}")
    return result.output.splitlines()


def _ip(*args: str, missing_ok: bool = False) -> None:
    result = run_to_end(["ip", *args], name="ip", timeout_s=IP_TIMEOUT_S)
    if result.returncode != 0:
        text = result.output.strip()
        if missing_ok and ("Cannot find device" in text or "No such file" in text or "does not exist" in text):
            return
        raise TestbedError(f"ip {' '.join(args)}: {text}")
