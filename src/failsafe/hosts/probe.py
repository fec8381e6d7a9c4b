"""What a host has, read over SSH: kernel, Java, root, nftables, its disk, and its clock against ours.

The clock offset is measured the way Cristian's algorithm does: failsafe reads its clock (t0), asks
the host for its clock, reads its own again (t1); the host's reading was taken somewhere in [t0, t1],
so ``offset = host - (t0 + t1) / 2`` is off by at most ``(t1 - t0) / 2``. Of several samples the one
with the shortest round trip is kept, and that half round trip is the error bound the manifest records
and a comparison of timestamps across machines must allow for.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from failsafe.hosts.ssh import RemoteCommandFailed, SshHost, quote
from failsafe.jvm.java import MIN_JAVA_MAJOR, major_version

CLOCK_SAMPLES = 9
CLOCK_TIMEOUT_S = 10.0
# One command, one line per fact; every probe tolerates a missing tool (the fact is then empty).
_FACTS = r"""
echo "kernel=$(uname -sr)"
echo "arch=$(uname -m)"
echo "uid=$(id -u)"
echo "cpus=$(nproc 2>/dev/null)"
echo "mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null)"
echo "boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
if [ -n "$JAVA_HOME" ] && [ -x "$JAVA_HOME/bin/java" ]; then j="$JAVA_HOME/bin/java"; else j=$(command -v java 2>/dev/null); fi
echo "java=$j"
[ -n "$j" ] && echo "java_version=$("$j" -version 2>&1 | head -1)"
n=$(command -v nft 2>/dev/null || { [ -x /usr/sbin/nft ] && echo /usr/sbin/nft; })
echo "nft=$n"
echo "setpriv=$(command -v setpriv 2>/dev/null)"
echo "ssh_client=${SSH_CLIENT%% *}"
[ -n "$n" ] && "$n" list tables >/dev/null 2>&1 && echo "nft_usable=yes"
mkdir -p {dir} 2>/dev/null
echo "dir_writable=$([ -w {dir} ] && echo yes)"
echo "disk=$(df -PT {dir} 2>/dev/null | awk 'NR==2 {print $2, $3, $5}')"
echo "fuse=$([ -c /dev/fuse ] && echo yes)"
echo "fusermount3=$(command -v fusermount3 2>/dev/null)"
echo "libfuse3=$( { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q 'libfuse3\.so\.3 ' && echo yes)"
echo "python3=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"
"""


@dataclass(frozen=True)
class HostFacts:
    name: str
    address: str
    kernel: str
    arch: str
    uid: int | None
    cpus: int | None
    mem_kib: int | None
    boot_id: str
    java: str
    java_major: int | None
    java_version: str
    nft: str
    nft_usable: bool
    setpriv: str
    ssh_client: str  # failsafe's address as the host sees it (where its clients' packets come from)
    dir: str
    dir_writable: bool
    fs_type: str
    disk_kib: int | None
    disk_free_kib: int | None
    clock_offset_s: float
    clock_error_s: float
    ssh_round_trip_s: float
    # What a disk layer there needs (cluster/nodes/host_disks.py): /dev/fuse, libfuse 3 and fusermount3, python3 >= 3.9.
    fuse: bool = False
    fusermount3: str = ""
    libfuse3: bool = False
    python3: str = ""

    @property
    def root(self) -> bool:
        return self.uid == 0

    def to_json(self) -> dict:
        return {**asdict(self), "root": self.root}


def probe(ssh: SshHost, *, clock_samples: int = CLOCK_SAMPLES) -> HostFacts:
    """Every fact of one host (one command, then the clock samples)."""
    host = ssh.host
    out = ssh.check(_FACTS.replace("{dir}", quote(str(host.dir))), what="reading its facts (uname, id, java, nft, df)")
    facts = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    offset, error, rtt = clock_offset(ssh, clock_samples)
    fs_type, size, free = (facts.get("disk", "").split() + ["", "", ""])[:3]
    return HostFacts(
        name=host.name,
        address=host.address,
        kernel=facts.get("kernel", ""),
        arch=facts.get("arch", ""),
        uid=_int(facts.get("uid")),
        cpus=_int(facts.get("cpus")),
        mem_kib=_int(facts.get("mem_kib")),
        boot_id=facts.get("boot_id", ""),
        java=facts.get("java", ""),
        java_major=major_version(facts.get("java_version", "")),
        java_version=facts.get("java_version", ""),
        nft=facts.get("nft", ""),
        nft_usable=facts.get("nft_usable") == "yes",
        setpriv=facts.get("setpriv", ""),
        ssh_client=facts.get("ssh_client", ""),
        dir=str(host.dir),
        dir_writable=facts.get("dir_writable") == "yes",
        fs_type=fs_type,
        disk_kib=_int(size),
        disk_free_kib=_int(free),
        clock_offset_s=offset,
        clock_error_s=error,
        ssh_round_trip_s=rtt,
        fuse=facts.get("fuse") == "yes",
        fusermount3=facts.get("fusermount3", ""),
        libfuse3=facts.get("libfuse3") == "yes",
        python3=facts.get("python3", ""),
    )


def clock_offset(ssh: SshHost, samples: int = CLOCK_SAMPLES) -> tuple[float, float, float]:
    """(offset of the host's clock from ours, its error bound, the round trip it was read in), all in seconds.

    One channel runs a loop on the host that answers each line it reads with its clock, so a sample's round
    trip is a message each way on a open connection, not a new command."""
    best: tuple[float, float, float] | None = None
    with ssh.open_channel("while read -r _; do date +%s.%N; done") as channel:
        channel.settimeout(CLOCK_TIMEOUT_S)
        reader = channel.makefile("r")
        for _ in range(max(1, samples)):
            t0 = time.time()
            channel.sendall(b"\n")
            line = reader.readline()
            t1 = time.time()
            try:
                remote = float(line)
            except ValueError as e:
                raise RemoteCommandFailed(
                    f"host {ssh.host}: reading its clock gave {line.strip()!r}, not a time"
                ) from e
            sample = (remote - (t0 + t1) / 2, (t1 - t0) / 2, t1 - t0)
            if best is None or sample[2] < best[2]:
                best = sample
        channel.shutdown_write()
    assert best is not None
    return best


def problems(
    facts: HostFacts, *, needs_java: bool = True, needs_network_faults: bool = False, needs_disk_layers: bool = False
) -> list[str]:
    """What keeps a host from what it is asked to do, one line each, naming the host."""
    where = f"host {facts.name} ({facts.address})"
    found = []
    if needs_java and not facts.java:
        found.append(
            f"{where}: no Java (no java on PATH and no JAVA_HOME): install Java {MIN_JAVA_MAJOR} or later there"
        )
    elif needs_java and (facts.java_major or 0) < MIN_JAVA_MAJOR:
        found.append(
            f"{where}: {facts.java} is {facts.java_version or 'of unknown version'}; Kafka needs Java "
            f"{MIN_JAVA_MAJOR} or later"
        )
    if not facts.dir_writable:
        found.append(f"{where}: cannot write {facts.dir}: make it the SSH user's or choose another dir in hosts.toml")
    if needs_network_faults:
        if not facts.nft:
            found.append(f"{where}: network faults need nftables there (Debian: apt-get install nftables)")
        elif not facts.root:
            found.append(f"{where}: network faults need root there, and user uid {facts.uid} is not: log in as root")
        elif not facts.nft_usable:
            found.append(f"{where}: 'nft list tables' fails there as root: the kernel may lack nf_tables")
        elif not facts.setpriv:
            found.append(
                f"{where}: network faults need setpriv there (util-linux), to run each node under a group id of its own"
            )
    if needs_disk_layers:
        python = tuple(int(p) for p in facts.python3.split(".")) if facts.python3 else ()
        missing = [
            what
            for what, ok in (
                ("root", facts.root),
                ("/dev/fuse", facts.fuse),
                ("libfuse 3 (libfuse3.so.3)", facts.libfuse3),
                ("fusermount3", bool(facts.fusermount3)),
                ("python3 3.9 or later", python >= (3, 9)),
            )
            if not ok
        ]
        if missing:
            found.append(
                f"{where}: disk layers (--volatile-disks, power loss) need {', '.join(missing)} there "
                "(Debian: apt-get install fuse3 python3; log in as root)"
            )
    return found


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "") else None
    except ValueError:
        return None
