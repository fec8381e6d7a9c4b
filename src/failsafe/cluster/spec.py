"""What a cluster is made of: node ids, roles and ports, validated before anything starts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from failsafe.dist.kafka import DEFAULT_KAFKA_VERSION
from failsafe.errors import UserError

DEFAULT_BROKERS = 3
DEFAULT_CONTROLLERS = 1
DEFAULT_BASE_PORT = 9092
# Controllers listen apart from the seeds' broker ports 9092-9094.
DEFAULT_CONTROLLER_PORT_OFFSET = 100
DEFAULT_FIRST_BROKER_ID = 0
DEFAULT_FIRST_CONTROLLER_ID = 1000
# kafka-server-start.sh's own default heap.
DEFAULT_HEAP = "1G"

BROKER = "broker"
CONTROLLER = "controller"


@dataclass(frozen=True)
class NodeSpec:
    """One Kafka process: a broker, a controller, or both (combined mode)."""

    node_id: int
    roles: tuple[str, ...]
    port: int | None  # the PLAINTEXT listener of a broker
    controller_port: int | None  # the CONTROLLER listener of a controller

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def role(self) -> str:
        return "+".join(self.roles)

    @property
    def name(self) -> str:
        return f"server-{self.node_id}"


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

    @property
    def effective_controller_base_port(self) -> int:
        if self.controller_base_port is not None:
            return self.controller_base_port
        return self.base_port + DEFAULT_CONTROLLER_PORT_OFFSET

    def nodes(self) -> list[NodeSpec]:
        """Controllers first: they must be up before brokers can register."""
        cport = self.effective_controller_base_port
        if self.combined:
            return [
                NodeSpec(
                    node_id=self.first_broker_id + i,
                    roles=(BROKER, CONTROLLER) if i < self.controllers else (BROKER,),
                    port=self.base_port + i,
                    controller_port=cport + i if i < self.controllers else None,
                )
                for i in range(self.brokers)
            ]
        controllers = [
            NodeSpec(self.first_controller_id + i, (CONTROLLER,), None, cport + i)
            for i in range(self.controllers)
        ]
        brokers = [
            NodeSpec(self.first_broker_id + i, (BROKER,), self.base_port + i, None)
            for i in range(self.brokers)
        ]
        return controllers + brokers

    def brokers_nodes(self) -> list[NodeSpec]:
        return [n for n in self.nodes() if n.is_broker]

    def controller_nodes(self) -> list[NodeSpec]:
        return [n for n in self.nodes() if n.is_controller]

    def ports(self) -> list[int]:
        return [p for n in self.nodes() for p in (n.port, n.controller_port) if p is not None]

    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.brokers_nodes())

    def quorum_voters(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.controller_nodes())

    def validate(self) -> ClusterSpec:
        if self.brokers < 1:
            raise UserError(f"--brokers {self.brokers}: a cluster needs at least 1 broker")
        if self.controllers < 1:
            raise UserError(f"--controllers {self.controllers}: KRaft needs at least 1 controller")
        if self.combined and self.controllers > self.brokers:
            raise UserError(
                f"--combined with --controllers {self.controllers} > --brokers {self.brokers}: "
                "in combined mode controllers run inside brokers, so ask for at most as many"
            )
        ports = self.ports()
        bad = [p for p in ports if not 1 <= p <= 65535]
        if bad:
            raise UserError(f"port {bad[0]} is out of range 1-65535: choose another --base-port")
        if len(set(ports)) != len(ports):
            raise UserError(
                f"broker ports from {self.base_port} and controller ports from "
                f"{self.effective_controller_base_port} overlap: set --controller-base-port apart"
            )
        ids = [n.node_id for n in self.nodes()]
        if len(set(ids)) != len(ids) or min(ids) < 0:
            raise UserError("node ids overlap or are negative: set the first broker and controller ids apart")
        return self

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ClusterSpec:
        return cls(**{**data, "jvm_options": tuple(data.get("jvm_options", ()))})
