"""What a cluster is made of: node ids, roles and ports, validated before anything starts.

Two modes. KRaft (Kafka 4.x, or 3.9): brokers and a controller quorum of Kafka nodes.
ZooKeeper (Kafka 3.9.x only, the last line with it): a ZooKeeper ensemble and brokers, one of
which ZooKeeper elects controller. During a live migration (cluster/modes/migration.py) a cluster has
both: the ensemble, KRaft controllers in migration mode, and brokers being rolled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from dataclasses import fields as dataclass_fields

from failsafe.cluster.profiles import DEFAULT_PROFILE, check_cluster
from failsafe.cluster.security.modes import security_mode
from failsafe.errors import UserError
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, DEFAULT_ZOOKEEPER_KAFKA_VERSION

DEFAULT_BROKERS = 3
DEFAULT_CONTROLLERS = 1
DEFAULT_BASE_PORT = 9092
# Controllers listen apart from the seeds' broker ports 9092-9094.
DEFAULT_CONTROLLER_PORT_OFFSET = 100
# Brokers replicate over a listener of their own, 9292-9294 by default (docs/cluster.md, "Listeners and links").
DEFAULT_REPLICATION_PORT_OFFSET = 200
# Every node serves its metrics (Prometheus's JMX exporter, cluster/observe/metrics.py) on 127.0.0.1: brokers from 9392
# by default, controllers from 9442, ZooKeeper nodes from 9482 (ClusterSpec.metrics_port).
DEFAULT_METRICS_PORT_OFFSET = 300
# With protocol proxies (failsafe up --protocol-proxy, docs/protocol-faults.md) a broker's own client listener sits 500
# above the port it advertises, where its proxy listens: 9592-9594 behind 9092-9094 by default.
PROXY_BACKEND_PORT_OFFSET = 500
# ... and a second client listener, DIRECT, 550 above it, advertised as itself: clients that bootstrap there (the
# proxy's benchmark, measuring against the proxy in the same run) reach the broker without the proxy.
DIRECT_PORT_OFFSET = 550
METRICS_CONTROLLER_OFFSET = 50
METRICS_ZOOKEEPER_OFFSET = 90
# Each node's own loopback address for replication and controller traffic: brokers 127.0.0.10-99,
# controllers 127.0.0.100-149. Clients keep 127.0.0.1, where the seeds put them.
LOOPBACK = "127.0.0.1"
FIRST_BROKER_ADDRESS = 10
FIRST_CONTROLLER_ADDRESS = 100
MAX_ADDRESSED_BROKERS = FIRST_CONTROLLER_ADDRESS - FIRST_BROKER_ADDRESS
MAX_ADDRESSED_CONTROLLERS = 50
DEFAULT_FIRST_BROKER_ID = 0
DEFAULT_FIRST_CONTROLLER_ID = 1000
# kafka-server-start.sh's own default heap.
DEFAULT_HEAP = "1G"
# The seeds' single ZooKeeper on 2181; an ensemble's peer and election ports sit 100 and 200 above.
DEFAULT_ZOOKEEPER_PORT = 2181
ZOOKEEPER_PEER_PORT_OFFSET = 100
ZOOKEEPER_ELECTION_PORT_OFFSET = 200
DEFAULT_FIRST_ZOOKEEPER_ID = 1
# zookeeper-server-start.sh's own default heap.
ZOOKEEPER_HEAP = "512M"

BROKER = "broker"
CONTROLLER = "controller"
ZOOKEEPER = "zookeeper"

KRAFT_MODE = "kraft"
ZOOKEEPER_MODE = "zookeeper"
# Brokers are being moved from ZooKeeper to the KRaft controllers (cluster/modes/migration.py).
MIGRATING_MODE = "migrating"
# The modes 'failsafe up' makes; a state file may also hold MIGRATING_MODE. What each means: cluster/modes/mode.py.
MODES = (KRAFT_MODE, ZOOKEEPER_MODE)
MODE_NAMES = (*MODES, MIGRATING_MODE)


@dataclass(frozen=True)
class NodeSpec:
    """One Kafka process: a broker, a controller, or both (combined mode)."""

    node_id: int
    roles: tuple[str, ...]
    port: int | None  # the PLAINTEXT listener of a broker; the client port of a ZooKeeper node
    controller_port: int | None  # the CONTROLLER listener of a controller
    peer_port: int | None = None  # a ZooKeeper node's quorum port (server.N=host:peer:election)
    election_port: int | None = None
    # The address of the node's replication and controller listeners (KRaft); clients use 127.0.0.1.
    address: str = LOOPBACK
    replication_port: int | None = None  # a broker's REPLICATION listener (inter.broker.listener.name)
    # Where clients reach a broker's PLAINTEXT listener (and a node's metrics): 127.0.0.1 on this machine, where the
    # seeds put them; on hosts (ClusterSpec.placement) the host's address, as for every other listener.
    client_address: str = LOOPBACK

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def is_zookeeper(self) -> bool:
        return ZOOKEEPER in self.roles

    @property
    def role(self) -> str:
        return "+".join(self.roles)

    @property
    def name(self) -> str:
        """server-N for a Kafka node, zookeeper-N for a ZooKeeper node: the stem of its config, log and pidfile."""
        return f"zookeeper-{self.node_id}" if self.is_zookeeper else f"server-{self.node_id}"


@dataclass(frozen=True)
class ClusterSpec:
    brokers: int = DEFAULT_BROKERS
    controllers: int = DEFAULT_CONTROLLERS
    combined: bool = False
    base_port: int = DEFAULT_BASE_PORT
    controller_base_port: int | None = None
    first_broker_id: int = DEFAULT_FIRST_BROKER_ID
    first_controller_id: int = DEFAULT_FIRST_CONTROLLER_ID
    kafka_version: str = DEFAULT_KAFKA_VERSION
    heap: str = DEFAULT_HEAP
    overrides: dict[str, str] = field(default_factory=dict)
    # Extra JVM options of every node (failsafe's own use: writing the class-data sharing archive).
    jvm_options: tuple[str, ...] = ()
    mode: str = KRAFT_MODE
    zookeepers: int = 0
    zookeeper_base_port: int = DEFAULT_ZOOKEEPER_PORT
    # KRaft: every node has its own loopback address, brokers a REPLICATION listener (network faults
    # cut node-to-node links without cutting clients). Off in ZooKeeper mode and for clusters made
    # before it existed (their cluster.json has no such field).
    node_addresses: bool = True
    replication_base_port: int | None = None
    # Every node runs Prometheus's JMX exporter as a Java agent on a port of its own (cluster/observe/metrics.py,
    # docs/metrics.md). Off for clusters made before it existed (their cluster.json has no such field) and with
    # 'failsafe up --no-metrics'.
    metrics: bool = True
    metrics_base_port: int | None = None
    # Racks (availability zones): broker.rack of each broker, brokers split into this many
    # consecutive groups (6 brokers, 3 racks: 0-1 rack-0, 2-3 rack-1, 4-5 rack-2). 0: no broker.rack.
    racks: int = 0
    # Every node's data directory on a disk layer that forgets, on a power cut, what was not synced
    # (cluster/nodes/disks.py, docs/disk-faults.md): what power-loss faults need. Needs /dev/fuse and libfuse 3.
    volatile_disks: bool = False
    # Feature levels the storage is formatted with (kafka-storage format --feature K=V; KRaft only), e.g.
    # eligible.leader.replicas.version=0 for a cluster without KIP-966's eligible leader replicas. Empty: the release's.
    features: dict[str, str] = field(default_factory=dict)
    # The profile the cluster was made with (cluster/profiles.py, failsafe up --profile) and its version: its broker
    # settings are in every Kafka node's properties, under ``overrides``; its topic and client settings go to what
    # scenarios make and start on it. A state file written before profiles holds neither: Kafka's defaults, the defaults
    # profile's version 1.
    profile: str = DEFAULT_PROFILE
    profile_version: int = 1
    # On hosts reached over SSH (docs/hosts.md): each node's name (server-N) to the address of the host it runs on,
    # where all its listeners are. Empty: every node on this machine. The hosts' SSH details are in DIR/hosts.json.
    placement: dict[str, str] = field(default_factory=dict)
    # KRaft: a dynamic controller quorum (KIP-853, kraft.version 1): the nodes find it through
    # controller.quorum.bootstrap.servers, the first controllers are formatted as its voters (--initial-controllers),
    # and 'failsafe controller add|remove' change it while it runs (cluster/topology/quorum.py). Off: a static quorum
    # (controller.quorum.voters), as every cluster made before it.
    dynamic_quorum: bool = False
    # Controller ids removed from a dynamic quorum: no node of the cluster any more (their slot can be added again).
    retired_controllers: tuple[int, ...] = ()
    # A Kafka-aware proxy in front of each broker's client listener (failsafe.proxy, docs/protocol-faults.md): the
    # broker advertises the proxy's address (its usual port) and listens PROXY_BACKEND_PORT_OFFSET above it; replication
    # and controller traffic do not pass it. What protocol faults need. KRaft on this machine only.
    protocol_proxy: bool = False
    # Every broker and controller runs with libfaketime preloaded, its clock set apart by its file in DIR/clocks
    # (cluster/clocks.py, docs/clock-faults.md): what clock faults need. On this machine only.
    clock_faults: bool = False
    # Tiered storage (KIP-405): every broker runs Kafka's LocalTieredStorage on DIR/remote-store, a disk layer shared by
    # all of them (cluster/tiered.py, docs/tiered-storage.md): what remote-store faults and tiered topics need. KRaft,
    # on this machine only.
    tiered_storage: bool = False
    # The security mode of every listener (cluster/security/modes.py, docs/security.md): TLS, SASL/SCRAM and ACLs, from
    # failsafe's own CA and users in DIR/secrets. KRaft, on this machine only.
    security: str = "plaintext"

    @classmethod
    def zookeeper_mode(
        cls, zookeepers: int = 1, kafka_version: str = DEFAULT_ZOOKEEPER_KAFKA_VERSION, **fields
    ) -> ClusterSpec:
        """A ZooKeeper-mode cluster: an ensemble of ``zookeepers`` nodes, brokers, no KRaft controller."""
        return cls(
            mode=ZOOKEEPER_MODE,
            zookeepers=zookeepers,
            controllers=0,
            kafka_version=kafka_version,
            node_addresses=False,
            **fields,
        )

    @property
    def effective_controller_base_port(self) -> int:
        if self.controller_base_port is not None:
            return self.controller_base_port
        return self.base_port + DEFAULT_CONTROLLER_PORT_OFFSET

    @property
    def effective_replication_base_port(self) -> int:
        if self.replication_base_port is not None:
            return self.replication_base_port
        return self.base_port + DEFAULT_REPLICATION_PORT_OFFSET

    @property
    def effective_metrics_base_port(self) -> int:
        if self.metrics_base_port is not None:
            return self.metrics_base_port
        return self.base_port + DEFAULT_METRICS_PORT_OFFSET

    def metrics_port(self, node: NodeSpec) -> int:
        """Where node ``node`` serves its metrics: by role, so a node keeps its port when the cluster's shape changes (a
        migration adds controllers): brokers from the metrics base port, controllers 50 above, ZooKeeper nodes 90
        above."""
        base = self.effective_metrics_base_port
        if node.is_broker:
            return base + node.port - self.base_port
        if node.is_controller:
            return base + METRICS_CONTROLLER_OFFSET + node.controller_port - self.effective_controller_base_port
        return base + METRICS_ZOOKEEPER_OFFSET + node.port - self.zookeeper_base_port

    def listener_port(self, node: NodeSpec) -> int | None:
        """Where a broker's own client (PLAINTEXT) listener is: its port, or behind its protocol proxy's."""
        if self.protocol_proxy and node.is_broker and node.port is not None:
            return node.port + PROXY_BACKEND_PORT_OFFSET
        return node.port

    def direct_port(self, node: NodeSpec) -> int | None:
        """A broker's DIRECT listener, around its protocol proxy; None without one."""
        if self.protocol_proxy and node.is_broker and node.port is not None:
            return node.port + DIRECT_PORT_OFFSET
        return None

    def proxy_ports(self) -> list[int]:
        """The ports a broker listens on because of its proxy: its own client listener and the DIRECT one."""
        return [
            p
            for n in self.brokers_nodes()
            for p in ((self.listener_port(n) if self.protocol_proxy else None), self.direct_port(n))
            if p is not None
        ]

    def direct_bootstrap_servers(self) -> str | None:
        """Where clients reach the brokers around their protocol proxies; None without proxies."""
        if not self.protocol_proxy:
            return None
        return ",".join(f"{n.client_address}:{self.direct_port(n)}" for n in self.brokers_nodes())

    def metrics_ports(self) -> list[int]:
        return [self.metrics_port(n) for n in self.nodes()] if self.metrics else []

    def nodes(self) -> list[NodeSpec]:
        """ZooKeeper and controllers first: they must be up before brokers can register."""
        return self.zookeeper_nodes() + self._kafka_nodes()

    def zookeeper_nodes(self) -> list[NodeSpec]:
        base = self.zookeeper_base_port
        ensemble = self.zookeepers > 1
        return [
            NodeSpec(
                DEFAULT_FIRST_ZOOKEEPER_ID + i,
                (ZOOKEEPER,),
                base + i,
                None,
                base + ZOOKEEPER_PEER_PORT_OFFSET + i if ensemble else None,
                base + ZOOKEEPER_ELECTION_PORT_OFFSET + i if ensemble else None,
            )
            for i in range(self.zookeepers)
        ]

    def zookeeper_connect(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.zookeeper_nodes())

    @property
    def on_hosts(self) -> bool:
        """Whether the nodes run on hosts reached over SSH (docs/hosts.md), not on this machine."""
        return bool(self.placement)

    def _kafka_nodes(self) -> list[NodeSpec]:
        cport = self.effective_controller_base_port
        rport = self.effective_replication_base_port
        addressed = self.node_addresses

        def placed(node: NodeSpec) -> NodeSpec:
            host = self.placement.get(node.name)
            return replace(node, address=host, client_address=host) if host else node

        def broker(i: int, controller_port: int | None) -> NodeSpec:
            return placed(
                NodeSpec(
                    self.first_broker_id + i,
                    (BROKER, CONTROLLER) if controller_port else (BROKER,),
                    self.base_port + i,
                    controller_port,
                    address=f"127.0.0.{FIRST_BROKER_ADDRESS + i}" if addressed else LOOPBACK,
                    replication_port=rport + i if addressed else None,
                )
            )

        if self.combined:
            return [broker(i, cport + i if i < self.controllers else None) for i in range(self.brokers)]
        controllers = [
            placed(
                NodeSpec(
                    self.first_controller_id + i,
                    (CONTROLLER,),
                    None,
                    cport + i,
                    address=f"127.0.0.{FIRST_CONTROLLER_ADDRESS + i}" if addressed else LOOPBACK,
                )
            )
            for i in range(self.controllers)
            if self.first_controller_id + i not in self.retired_controllers
        ]
        return controllers + [broker(i, None) for i in range(self.brokers)]

    def rack_of(self, node: NodeSpec) -> str | None:
        """``broker.rack`` of a broker (None without racks, or for a controller or ZooKeeper node)."""
        if not self.racks or not node.is_broker:
            return None
        index = node.node_id - self.first_broker_id
        return f"rack-{index * self.racks // self.brokers}"

    def rack_brokers(self, rack: str) -> list[NodeSpec]:
        return [n for n in self.brokers_nodes() if self.rack_of(n) == rack]

    def brokers_nodes(self) -> list[NodeSpec]:
        return [n for n in self.nodes() if n.is_broker]

    def controller_nodes(self) -> list[NodeSpec]:
        return [n for n in self.nodes() if n.is_controller]

    def ports(self) -> list[int]:
        return (
            [
                p
                for n in self.nodes()
                for p in (n.port, n.controller_port, n.peer_port, n.election_port, n.replication_port)
                if p is not None
            ]
            + self.proxy_ports()
            + self.metrics_ports()
        )

    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.client_address}:{n.port}" for n in self.brokers_nodes())

    def quorum_voters(self) -> str:
        return ",".join(f"{n.node_id}@{n.address}:{n.controller_port}" for n in self.controller_nodes())

    def quorum_bootstrap_servers(self) -> str:
        """A dynamic quorum's controller.quorum.bootstrap.servers: every controller's listener."""
        return ",".join(f"{n.address}:{n.controller_port}" for n in self.controller_nodes())

    def validate(self) -> ClusterSpec:
        if self.brokers < 1:
            raise UserError(f"--brokers {self.brokers}: a cluster needs at least 1 broker")
        if self.mode == ZOOKEEPER_MODE:
            self._validate_zookeeper_mode()
        elif self.controllers < 1:
            raise UserError(f"--controllers {self.controllers}: KRaft needs at least 1 controller")
        if self.combined and self.controllers > self.brokers:
            raise UserError(
                f"--combined with --controllers {self.controllers} > --brokers {self.brokers}: "
                "in combined mode controllers run inside brokers, so ask for at most as many"
            )
        if self.node_addresses and (
            self.brokers > MAX_ADDRESSED_BROKERS or self.controllers > MAX_ADDRESSED_CONTROLLERS
        ):
            raise UserError(
                f"--brokers {self.brokers} --controllers {self.controllers}: each node gets its own loopback address, "
                f"for at most {MAX_ADDRESSED_BROKERS} brokers and {MAX_ADDRESSED_CONTROLLERS} controllers"
            )
        if self.racks < 0 or self.racks > self.brokers:
            raise UserError(
                f"--racks {self.racks}: between 1 and the number of brokers ({self.brokers}), or 0 for none"
            )
        ports = self.ports()
        bad = [p for p in ports if not 1 <= p <= 65535]
        if bad:
            raise UserError(f"port {bad[0]} is out of range 1-65535: choose another --base-port")
        if len(set(ports)) != len(ports):
            others = (
                f"ZooKeeper ports from {self.zookeeper_base_port}"
                if self.zookeepers
                else f"controller ports from {self.effective_controller_base_port} or replication ports from "
                f"{self.effective_replication_base_port}"
            )
            listeners = ports[: len(ports) - len(self.metrics_ports()) - len(self.proxy_ports())]
            if len(set(listeners)) == len(listeners):
                raise UserError(
                    f"metrics ports from {self.effective_metrics_base_port} overlap the nodes' other ports: "
                    "set --metrics-base-port apart"
                )
            raise UserError(
                f"broker ports from {self.base_port} and {others} overlap: "
                f"set --{'zookeeper-port' if self.zookeepers else 'controller-base-port'} apart"
            )
        if self.placement:
            self._validate_placement()
        if self.dynamic_quorum:
            self._validate_dynamic_quorum()
        if self.protocol_proxy and (self.mode != KRAFT_MODE or self.placement or not self.node_addresses):
            raise UserError(
                "--protocol-proxy: protocol proxies stand in front of a KRaft cluster's brokers on this machine "
                "(not in ZooKeeper mode, not on hosts)"
            )
        if self.clock_faults and self.placement:
            raise UserError("--clock-faults: nodes' clocks are set apart on this machine only (not on hosts)")
        if self.tiered_storage and (self.mode != KRAFT_MODE or self.placement):
            raise UserError(
                "--tiered-storage: the remote store is a directory of this machine shared by a KRaft cluster's brokers "
                "(not in ZooKeeper mode, not on hosts)"
            )
        self._validate_security()
        ids = [n.node_id for n in self._kafka_nodes()]
        if len(set(ids)) != len(ids) or min(ids) < 0:
            raise UserError("node ids overlap or are negative: set the first broker and controller ids apart")
        # A known profile, of the version failsafe ships, that this many brokers can serve.
        check_cluster(self)
        return self

    def _validate_dynamic_quorum(self) -> None:
        major, minor = (int(p) for p in self.kafka_version.split(".")[:2])
        why = (
            "it is KRaft's (a ZooKeeper-mode cluster has none)"
            if self.mode != KRAFT_MODE
            else "its controllers must be nodes of their own (not --combined)"
            if self.combined
            else f"Kafka {self.kafka_version} has none (KIP-853: 3.9 or later)"
            if (major, minor) < (3, 9)
            else "clusters on hosts do not have one yet"
            if self.placement
            else ""
        )
        if why:
            raise UserError(f"--dynamic-quorum: {why}")

    def _validate_security(self) -> None:
        mode = security_mode(self.security)
        if not mode.secured:
            return
        why = (
            "ZooKeeper mode has no SCRAM users at format time nor the StandardAuthorizer"
            if self.mode != KRAFT_MODE
            else "clusters on hosts get their certificates in a later change"
            if self.placement
            else "a protocol proxy reads the client listener's requests, which TLS and SASL hide from it"
            if self.protocol_proxy
            else "the remote log metadata manager's clients have no security settings yet"
            if self.tiered_storage
            else "nodes need their own addresses for their certificates"
            if not self.node_addresses
            else ""
        )
        if why:
            raise UserError(f"--security {self.security}: KRaft on this machine only ({why})")

    def _validate_zookeeper_mode(self) -> None:
        if not self.kafka_version.startswith("3.9."):
            raise UserError(
                f"ZooKeeper mode needs Kafka 3.9.x (the last line with ZooKeeper), not {self.kafka_version}: "
                f"drop --kafka-version or use --kafka-version {DEFAULT_ZOOKEEPER_KAFKA_VERSION}"
            )
        if self.zookeepers < 1:
            raise UserError(f"--zookeepers {self.zookeepers}: ZooKeeper mode needs at least 1 ZooKeeper node")
        if self.controllers or self.combined:
            raise UserError(
                "--controllers and --combined are KRaft options: in ZooKeeper mode a broker is the controller"
            )
        if self.features:
            raise UserError(
                "--feature sets the level a KRaft cluster's storage is formatted with: ZooKeeper mode has no "
                "such format"
            )

    def _validate_placement(self) -> None:
        if self.mode != KRAFT_MODE:
            raise UserError("clusters on hosts run in KRaft mode (ZooKeeper mode runs on this machine only)")
        names = {n.name for n in self._kafka_nodes()}
        unplaced = sorted(names - set(self.placement))
        if unplaced:
            raise UserError(f"nodes {', '.join(unplaced)} have no host")
        stray = sorted(set(self.placement) - names)
        if stray:
            raise UserError(f"placement names nodes the cluster does not have: {', '.join(stray)}")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> ClusterSpec:
        """The spec a state file holds; ValueError names the first field that is unknown, of the wrong type, or of no
        mode.

        A field left out takes its default: older state files lack the fields added since.
        """
        if not isinstance(data, dict):
            raise ValueError(f"its spec is {_json_kind(data)}, not an object")
        annotations = {f.name: f.type for f in dataclass_fields(cls)}
        for name, value in data.items():
            if name not in annotations:
                raise ValueError(f"spec.{name} is not a field of a cluster spec")
            accepts, kind = JSON_TYPES[annotations[name]]
            if not accepts(value):
                raise ValueError(f"spec.{name} is {value!r}, not {kind}")
        if data.get("mode", KRAFT_MODE) not in MODE_NAMES:
            raise ValueError(f"spec.mode is {data['mode']!r}, not one of {', '.join(MODE_NAMES)}")
        # A cluster.json written before nodes had their own addresses: its configs have none.
        # One written before nodes served metrics: they run without the agent.
        return cls(
            **{
                "node_addresses": False,
                "metrics": False,
                **data,
                "jvm_options": tuple(data.get("jvm_options", ())),
                "retired_controllers": tuple(data.get("retired_controllers", ())),
            }
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# What JSON a spec field may hold, by its annotation: (accepts, what it should be).
JSON_TYPES = {
    "int": (_is_int, "a whole number"),
    "int | None": (lambda v: v is None or _is_int(v), "a whole number or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "dict[str, str]": (
        lambda v: isinstance(v, dict) and all(isinstance(x, str) for kv in v.items() for x in kv),
        "an object of strings",
    ),
    "tuple[int, ...]": (
        lambda v: isinstance(v, list | tuple) and all(_is_int(x) for x in v),
        "a list of whole numbers",
    ),
    "tuple[str, ...]": (
        lambda v: isinstance(v, list | tuple) and all(isinstance(x, str) for x in v),
        "a list of strings",
    ),
}


def _json_kind(value: object) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "a boolean"}.get(type(value), "a number")
