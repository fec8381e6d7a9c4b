"""failsafe's own nftables table per cluster: every network fault is one chain in it, so failsafe only
ever removes rules it made, and only its own cluster's.

    table inet failsafe_<tag>    tag: 10 hex digits of a hash of the cluster directory's resolved path
        chain fault_<n>          one per network fault: a filter chain on the output hook; its comment
                                 says what the fault is (``failsafe net status`` prints it)

How a node's packets are told apart: every node runs under a group id of its own (``setpriv
--regid``, see :func:`node_gid`) and a rule matches ``meta skgid``. The source address cannot do it:
a connection to any 127.x address leaves from 127.0.0.1, and Kafka's clients do not bind one.
Where a packet goes is told by the address and port of the listener it is sent to.

A DROP on the output hook also stops packets of connections that already exist, and TCP needs both
directions, so a one-way rule (A's packets to B dropped) breaks the connections A opened to B;
those B opened to A still work.

``up``, ``down`` and ``clean`` delete the table: no rule outlives the cluster, also after a crash of
failsafe (a scenario's network faults are leashed as well, see faults/network.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from failsafe.errors import UserError
from failsafe.supervisor import run_to_end

NFT_TIMEOUT_S = 10.0
# Where a rule goes (faults/network.py): this machine's nftables, or a host's (by its address).
LOCAL = "local"
# Group ids failsafe gives its nodes: far above the ids Debian hands out (< 60000 for users and
# groups, 65534 nogroup), 100 per cluster, one per node slot.
GID_BASE = 400000
GID_CLUSTERS = 100000
GID_SLOTS = 100


class NetworkFaultsUnavailable(UserError):
    """This machine or user cannot make network faults (not root, no nft)."""


def cluster_tag(root: Path) -> str:
    return hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:10]


def table_name(root: Path) -> str:
    return f"failsafe_{cluster_tag(root)}"


def node_gid(root: Path, slot: int) -> int:
    """The group id the node in ``slot`` (its position in the spec's node list) runs under."""
    if not 0 <= slot < GID_SLOTS:
        raise ValueError(f"node slot {slot} outside 0-{GID_SLOTS - 1}")
    return GID_BASE + (int(cluster_tag(root), 16) % GID_CLUSTERS) * GID_SLOTS + slot


def can_set_gids() -> bool:
    """Nodes can run under their own group ids: root (CAP_SETGID) and util-linux's setpriv."""
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def with_gid(cmd: list[str], gid: int) -> list[str]:
    """``cmd`` run under group ``gid`` only (setpriv execs it: the pid stays the one we track)."""
    return ["setpriv", f"--regid={gid}", "--clear-groups", "--", *cmd]


def process_gid(pid: int) -> int | None:
    """The real group id of process ``pid`` (None if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Gid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def unavailable_reason() -> str | None:
    """Why network faults cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network faults need root (nftables rules, and nodes under their own group ids): run failsafe as root"
    if shutil.which("nft") is None:
        return "network faults need nft, which is not installed: apt-get install nftables"
    if shutil.which("setpriv") is None:
        return "network faults need setpriv (util-linux), which is not installed: apt-get install util-linux"
    return None


def require_available() -> None:
    reason = unavailable_reason()
    if reason:
        raise NetworkFaultsUnavailable(reason)


def _nft(args: list[str], script: str | None = None) -> str:
    if script is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".nft", prefix="failsafe-") as fh:
            fh.write(script)
            fh.flush()
            done = run_to_end(["nft", "-f", fh.name], name="nft", timeout_s=NFT_TIMEOUT_S)
    else:
        done = run_to_end(["nft", *args], name="nft", timeout_s=NFT_TIMEOUT_S)
    if done.returncode != 0:
        raise NftError(
            done.output.strip().splitlines()[0] if done.output.strip() else f"nft exited with {done.returncode}"
        )
    return done.output


class NftError(RuntimeError):
    """nft refused a command (the first line it printed)."""


def _quote(text: str) -> str:
    return '"' + text.replace('"', "'") + '"'


def add_chain(root: Path, chain: str, comment: str, rules: list[str]) -> None:
    """Create the cluster's table if needed, and ``chain`` with ``rules`` in one transaction: all or nothing."""
    _nft([], chain_script(root, chain, comment, rules))


def chain_script(root: Path, chain: str, comment: str, rules: list[str]) -> str:
    """The ``nft -f`` script that adds the cluster's table (if needed) and ``chain`` with ``rules`` (here, or on a
    host)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", chain):
        raise ValueError(f"bad chain name {chain!r}")
    table = table_name(root)
    lines = [
        f"add table inet {table} {{ comment {_quote(f'failsafe cluster {root.resolve()}')}; }}",
        f"add chain inet {table} {chain} {{ type filter hook output priority filter; policy accept; comment "
        f"{_quote(comment)}; }}",
        *(f"add rule inet {table} {chain} {rule}" for rule in rules),
    ]
    return "\n".join(lines) + "\n"


def delete_chain(root: Path, chain: str) -> bool:
    """Remove one fault's chain; False if it was not there (healed already, or the table is gone)."""
    table = table_name(root)
    try:
        _nft([], f"flush chain inet {table} {chain}\ndelete chain inet {table} {chain}\n")
    except NftError as e:
        if "No such file or directory" in str(e):
            return False
        raise
    return True


def delete_table(root: Path) -> bool:
    """Remove every rule failsafe made for this cluster; False if there were none. A no-op without root or nft."""
    if os.geteuid() != 0 or shutil.which("nft") is None:
        return False
    try:
        _nft(["delete", "table", "inet", table_name(root)])
    except NftError as e:
        if "No such file or directory" in str(e):
            return False
        raise
    return True


@dataclass(frozen=True)
class FaultChain:
    name: str
    comment: str
    rules: list[str]
    dropped_packets: int


def list_chains(root: Path) -> list[FaultChain]:
    """The network faults in force on this cluster, as nft lists them (empty without a table, root or nft)."""
    if os.geteuid() != 0 or shutil.which("nft") is None:
        return []
    try:
        text = _nft(["list", "table", "inet", table_name(root)])
    except NftError as e:
        if "No such file or directory" in str(e):
            return []
        raise
    return parse_listing(text)


def parse_listing(text: str) -> list[FaultChain]:
    """``nft list table``'s text: each chain's name, comment, rules and the packets its counters dropped."""
    chains: list[FaultChain] = []
    name, comment, rules = None, "", []

    def close() -> None:
        if name is not None:
            dropped = sum(int(m) for r in rules for m in re.findall(r"counter packets (\d+)", r))
            chains.append(FaultChain(name, comment, rules, dropped))

    for raw in text.splitlines():
        line = raw.strip()
        if m := re.fullmatch(r"chain (\S+) \{", line):
            close()
            name, comment, rules = m.group(1), "", []
        elif name is not None and (m := re.fullmatch(r'comment "(.*)"', line)):
            comment = m.group(1)
        elif name is not None and line and not line.startswith(("type ", "}")):
            rules.append(line)
    close()
    return chains
