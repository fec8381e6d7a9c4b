"""The errors failsafe raises, one tree, and the exit code each gives (README, "Exit codes").

    FailsafeError                 failsafe could not carry out what was asked (infrastructure), exit 5
    ├── UserError                 the user can fix it (bad input, wrong state), exit 2
    │   ├── ProvisionError        Java, Maven or Kafka's jars are missing or unusable
    │   ├── ClusterNotRunning     no cluster runs at the directory
    │   ├── ClusterAlreadyRunning `up` on a running cluster
    │   ├── UnknownNode           no broker or controller with that id
    │   ├── BrokerUnreachable     nobody answered at the bootstrap servers in time
    │   └── LedgerError           a sales ledger is missing, not a ledger, or incomplete
    ├── ClusterStartError         a node died or the cluster was not ready in time
    │   └── PortInUse             a port the cluster needs is taken (by a process of someone else's)
    ├── KafkaClientError          Kafka answered with an error, or nobody answered
    ├── DiskLayerError            a disk layer (docs/disk-faults.md) could not be mounted, commanded or unmounted
    └── ScenarioFailed            a scenario could not be carried out (not: Kafka misbehaved, which checkers report)
        ├── WorkloadFailed        a client process died that no fault killed
        └── ClusterNotWhole       a node is still down or paused after a heal: the next scenario cannot run

A verdict is no error: ``failsafe run`` and ``check`` return 0 VALID, 1 INVALID, 3 UNKNOWN, 4 KNOWN
(checkers/common.py, Verdict). Third-party errors are wrapped at the boundary with the cause kept
(``raise ... from e``); anything else that reaches the command line is a crash of failsafe's own, exit 5,
its traceback in a log file (cli/boundary.py). Every message says what is wrong and, where there
is one, what to do.
"""

from __future__ import annotations

# The exit-code contract: CI jobs of users gate on these.
EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_UNKNOWN = 3
EXIT_KNOWN = 4
EXIT_NOT_CARRIED_OUT = 5


class FailsafeError(Exception):
    exit_code = EXIT_NOT_CARRIED_OUT


class UserError(FailsafeError):
    exit_code = EXIT_USAGE


class ProvisionError(UserError):
    pass


class ClusterNotRunning(UserError):
    pass


class ClusterAlreadyRunning(UserError):
    pass


class UnknownNode(UserError):
    pass


class BrokerUnreachable(UserError):
    pass


class LedgerError(UserError):
    pass


class ClusterStartError(FailsafeError):
    pass


class PortInUse(ClusterStartError):
    pass


class KafkaClientError(FailsafeError):
    pass


class DiskLayerError(FailsafeError):
    pass


class ScenarioFailed(FailsafeError):
    pass


class WorkloadFailed(ScenarioFailed):
    pass


class ClusterNotWhole(ScenarioFailed):
    pass
