"""Network faults on hosts (docs/hosts.md): the rules of faults/network.py, each put where the packets it drops leave
from.

A node's packets leave from its host: a rule dropping them goes into that host's nftables, in a table
named after the cluster (cluster/net/netfilter.py), matched by the group id the node runs under there
(``setpriv --regid``, as on this machine), so two nodes sharing a host are told apart. The clients'
packets leave from this machine: those rules go into this machine's table. SSH itself is never
matched (the rules name Kafka's listener ports and the nodes' group ids only), so failsafe keeps
reaching a host it cut off.

A run's rules on a host are leashed there: a shell loop on the host, fed over an SSH channel, holds
the names of the chains in force and deletes them when the channel ends, which it does when failsafe
is done, and when failsafe dies (its connection closes). So no rule outlives failsafe on any host.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from failsafe.cluster.net import netfilter
from failsafe.cluster.net.netfilter import LOCAL, FaultChain, NetworkFaultsUnavailable, NftError
from failsafe.cluster.spec import NodeSpec
from failsafe.hosts import probe
from failsafe.hosts.inventory import Host
from failsafe.hosts.loops import HostLoops
from failsafe.hosts.ssh import RemoteCommandFailed, SshHost, quote

# The leash on a host: 'hold CHAIN' / 'release CHAIN' lines; at the end of its input, every chain still held is deleted.
_LEASH = (
    'T={table}; held=""\n'
    "while read -r verb chain; do\n"
    '  case "$verb" in\n'
    '    hold) held="$held $chain";;\n'
    '    release) kept=""; for c in $held; do [ "$c" = "$chain" ] || kept="$kept $c"; done; held=$kept;;\n'
    "  esac\n"
    "done\n"
    'for c in $held; do nft flush chain inet "$T" "$c" 2>/dev/null; nft delete chain inet "$T" "$c" 2>/dev/null && '
    'echo "network leash: failsafe ended with $c in force; deleted it"; done\n'
)


class HostNetwork:
    """The network methods of cluster/nodes/hosts.py's HostNodes (a mixin: it needs ``dir``, ``hosts``, ``host``,
    ``ssh`` and the hosts' facts)."""

    dir: Any
    _facts: dict[str, dict[str, Any]]

    def hosts(self) -> list[Host]: ...

    def host(self, node: NodeSpec) -> Host: ...

    def ssh(self, host: Host) -> SshHost: ...

    def _fact(self, host: Host, key: str) -> Any:
        if host.name not in self._facts:
            self._facts[host.name] = probe.probe(self.ssh(host)).to_json()
        return self._facts[host.name].get(key)

    def net_ready(self, spec: Any = None) -> None:
        """Root and nft on every host of the cluster, and every running node there under its own group id."""
        for host in self.hosts():
            facts = probe.probe(self.ssh(host))
            self._facts[host.name] = facts.to_json()
            found = probe.problems(facts, needs_java=False, needs_network_faults=True)
            if found:
                raise NetworkFaultsUnavailable(found[0])
        netfilter.require_available()  # the clients' rules go here
        self.check_gids()

    def check_gids(self) -> None: ...

    def net_place(self, node: NodeSpec) -> str:
        return self.host(node).address

    def net_control_address(self, where: str) -> str:
        if where == LOCAL:
            return "127.0.0.1"
        host = next(h for h in self.hosts() if h.address == where)
        address = str(self._fact(host, "ssh_client") or "")
        if not address:
            raise NetworkFaultsUnavailable(
                f"host {host.name}: its SSH session names no client address ($SSH_CLIENT), so the rules "
                "cutting its brokers from the clients cannot name them"
            )
        return address

    def _table(self) -> str:
        return netfilter.table_name(self.dir.root)

    def _on_hosts(self, action: Any) -> list[Any]:
        hosts = self.hosts()
        with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as pool:
            return list(pool.map(action, hosts))

    def net_chains(self) -> list[FaultChain]:
        """Every chain of this cluster, here and on the hosts, once each: its rules prefixed by where they are."""
        found: dict[str, FaultChain] = {}

        def merge(where: str, chains: list[FaultChain]) -> None:
            for c in chains:
                seen = found.get(c.name)
                rules = [f"{where}: {r}" for r in c.rules]
                found[c.name] = FaultChain(
                    c.name,
                    c.comment,
                    (seen.rules if seen else []) + rules,
                    (seen.dropped_packets if seen else 0) + c.dropped_packets,
                )

        merge("here", netfilter.list_chains(self.dir.root))

        def listing(host: Host) -> tuple[str, str]:
            result = self.ssh(host).run(f"nft list table inet {self._table()} 2>/dev/null")
            return host.name, result.stdout if result.ok() else ""

        for name, text in self._on_hosts(listing):
            merge(name, netfilter.parse_listing(text))
        return sorted(found.values(), key=lambda c: c.name)

    def net_add(self, chain: str, comment: str, rules: dict[str, list[str]]) -> None:
        """Each place's rules as ``chain`` there; if one place refuses, the places done already drop theirs again."""
        done: list[str] = []
        try:
            for where, place_rules in rules.items():
                script = netfilter.chain_script(self.dir.root, chain, comment, place_rules)
                if where == LOCAL:
                    netfilter.add_chain(self.dir.root, chain, comment, place_rules)
                else:
                    host = next(h for h in self.hosts() if h.address == where)
                    result = self.ssh(host).run("nft -f -", stdin=script.encode())
                    if not result.ok():
                        raise NftError(f"host {host.name}: {result.why()}")
                done.append(where)
        except (NftError, RemoteCommandFailed):
            self._delete(chain, done)
            raise

    def _delete(self, chain: str, places: list[str]) -> bool:
        table = self._table()
        gone = False
        for where in places:
            if where == LOCAL:
                gone |= netfilter.delete_chain(self.dir.root, chain)
                continue
            host = next(h for h in self.hosts() if h.address == where)
            result = self.ssh(host).run(
                f"nft flush chain inet {table} {chain} && nft delete chain inet {table} {chain}"
            )
            if result.ok():
                gone = True
            elif "No such file or directory" not in result.stdout + result.stderr:
                raise NftError(f"host {host.name}: {result.why()}")
        return gone

    def net_delete(self, chain: str) -> bool:
        return self._delete(chain, [LOCAL, *(h.address for h in self.hosts())])

    def net_delete_all(self) -> bool:
        here = netfilter.delete_table(self.dir.root)
        there = self._on_hosts(
            lambda host: self.ssh(host).run(f"nft delete table inet {self._table()} 2>/dev/null").ok()
        )
        return here or any(there)

    def net_leash(self, log_file: Path) -> HostLeash:
        return HostLeash([self.ssh(h) for h in self.hosts()], self._table(), log_file)


class HostLeash(HostLoops):
    """On every host, a loop that deletes the chains it holds once its channel ends (failsafe done, or dead)."""

    def __init__(self, hosts: list[SshHost], table: str, log_file: Path) -> None:
        super().__init__([(ssh, _LEASH.replace("{table}", quote(table))) for ssh in hosts], log_file, "network leash")

    def hold(self, chain: str) -> None:
        self.tell(f"hold {chain}")

    def release(self, chain: str) -> None:
        self.tell(f"release {chain}")
