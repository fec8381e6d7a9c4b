"""The errors failsafe raises, one tree.

    FailsafeError                 anything failsafe reports as one line, exit 1
    ├── UserError                 the user can fix it (bad input, wrong state), exit 2
    │   ├── ProvisionError        Java, Maven or Kafka's jars are missing or unusable
    │   ├── ClusterNotRunning     no cluster runs at the directory
    │   ├── ClusterAlreadyRunning `up` on a running cluster
    │   ├── PortInUse             a port the cluster needs is taken
    │   ├── UnknownNode           no broker or controller with that id
    │   ├── BrokerUnreachable     nobody answered at the bootstrap servers in time
    │   └── LedgerError           a sales ledger is missing, not a ledger, or incomplete
    ├── ClusterStartError         a node died or the cluster was not ready in time
    ├── KafkaClientError          Kafka answered with an error, or nobody answered
    └── ScenarioFailed            a scenario could not be carried out (not: Kafka misbehaved, which checkers report)
        ├── WorkloadFailed        a client process died that no fault killed
        └── ClusterNotWhole       a node is still down or paused after a heal: the next scenario cannot run

Third-party errors are wrapped at the boundary with the cause kept (``raise ... from e``).
Every message says what is wrong and, where there is one, what to do.
"""

from __future__ import annotations


class FailsafeError(Exception):
    exit_code = 1


class UserError(FailsafeError):
    exit_code = 2


class ProvisionError(UserError):
    pass


class ClusterNotRunning(UserError):
    pass


class ClusterAlreadyRunning(UserError):
    pass


class PortInUse(UserError):
    pass


class UnknownNode(UserError):
    pass


class BrokerUnreachable(UserError):
    pass


class LedgerError(UserError):
    pass


class ClusterStartError(FailsafeError):
    pass


class KafkaClientError(FailsafeError):
    pass


class ScenarioFailed(FailsafeError):
    pass


class WorkloadFailed(ScenarioFailed):
    pass


class ClusterNotWhole(ScenarioFailed):
    pass
