"""Faults of a secured cluster's credentials and rights (``failsafe up --security``, docs/security.md): what operators
change on a running cluster, made under load, each a window on the quorum (the change goes through the controller's
metadata log, as every SCRAM credential and ACL of a KRaft cluster does).

    scram-password-change  failsafe's client user gets a new SCRAM-SHA-512 password (AlterUserScramCredentials); the
                           cluster's client file (DIR/secrets/clients) gets it too, so a client started from then on
                           logs in with it. A client already running keeps the one it had: its sessions go on until
                           they end (a broker's restart, connections.max.reauth.ms, KIP-368), and then it cannot log in
                           again. The undo gives the user its old password back.
    acl-removed            one right of failsafe's client principal (an ALLOW binding of cluster/security/acls.py:
                           WRITE on every topic unless the fault names another operation) deleted (DeleteAcls), created
                           again at the undo. The producer's errors meanwhile are TOPIC_AUTHORIZATION_FAILED: expected,
                           measured, and never a loss of what was acknowledged.

Both act through failsafe's admin user, a super user whom neither change touches.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from failsafe.cluster.security import secured
from failsafe.cluster.security.modes import security_mode
from failsafe.cluster.security.store import CLIENT_USER, PASSWORD_BYTES
from failsafe.cluster.spec import ClusterSpec
from failsafe.faults.base import (
    AppliedFault,
    FaultContext,
    FaultError,
    FaultSpec,
    FaultTargets,
    FaultType,
    Need,
    Target,
)
from failsafe.faults.registry import register
from failsafe.tools.admin import describe_error, new_admin

SCRAM_PASSWORD_CHANGE = "scram-password-change"
ACL_REMOVED = "acl-removed"
FAMILY = "security"
ADMIN_TIMEOUT_S = 30.0
# Kafka's own default for a SCRAM credential made by kafka-configs (and the least it accepts for SHA-512).
SCRAM_ITERATIONS = 4096
ACL_OPERATIONS = ("WRITE", "READ", "DESCRIBE", "CREATE", "IDEMPOTENT_WRITE")


@dataclass(frozen=True)
class PasswordChange:
    """Whose password changes: failsafe's client user (the workload's principal) unless another SCRAM user is named."""

    user: str = CLIENT_USER


@dataclass(frozen=True)
class RightRemoved:
    """Which of the client principal's rights is taken away: an operation on every topic (IDEMPOTENT_WRITE: on the
    cluster)."""

    operation: str = "WRITE"


def _fits_scram(spec: ClusterSpec) -> str | None:
    mode = security_mode(spec.security)
    return (
        None
        if mode.scram_users
        else f"its listeners are {spec.security}: no SCRAM users (failsafe up --security sasl-ssl)"
    )


def _fits_acls(spec: ClusterSpec) -> str | None:
    mode = security_mode(spec.security)
    return (
        None
        if mode.authorizer
        else f"its listeners are {spec.security}: no authorizer (failsafe up --security sasl-ssl)"
    )


def _check_operation(params: RightRemoved, ctx: FaultContext) -> None:
    if params.operation not in ACL_OPERATIONS:
        raise ctx.fail("operation", f"{params.operation!r} is not one of {', '.join(ACL_OPERATIONS)}")


def _cluster_secrets(targets: FaultTargets):  # noqa: ANN202 - ClusterSecrets, or a FaultError
    spec = targets.cluster.spec
    found = secured.secrets_of(Path(targets.cluster.dir.root), spec)
    if found is None:
        raise FaultError(f"the cluster's listeners are {spec.security}: it has no credentials of failsafe's to change")
    return found


def _set_scram_password(bootstrap: str, user: str, password: str) -> None:
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
    admin = new_admin(bootstrap)
    try:
        for future in admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(user, info, password.encode())], request_timeout=ADMIN_TIMEOUT_S
        ).values():
            future.result(timeout=ADMIN_TIMEOUT_S)
    except KafkaException as e:
        raise FaultError(f"Kafka refused a new SCRAM password for {user}: {describe_error(e)}") from e


def change_password(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    cluster = targets.cluster
    store, user = _cluster_secrets(targets), spec.params.user
    before, after = store.password(user), secrets.token_urlsafe(PASSWORD_BYTES)

    def to(password: str) -> None:
        # Kafka first: a client started between the two steps would otherwise log in with a password Kafka does not
        # know yet.
        _set_scram_password(cluster.bootstrap_servers, user, password)
        store.set_password(user, password)
        secured.ensure_secrets(Path(cluster.dir.root), cluster.spec)

    to(after)
    return AppliedFault(
        SCRAM_PASSWORD_CHANGE,
        Target.QUORUM,
        [],
        f"{user}'s password",
        lambda: to(before),
        details={"user": user, "mechanism": "SCRAM-SHA-512"},
        label=f"{user} password",
    )


def _client_right(operation: str) -> AclBinding:
    on_cluster = operation == "IDEMPOTENT_WRITE"
    return AclBinding(
        ResourceType.BROKER if on_cluster else ResourceType.TOPIC,
        "kafka-cluster" if on_cluster else "*",
        ResourcePatternType.LITERAL,
        f"User:{CLIENT_USER}",
        "*",
        AclOperation[operation],
        AclPermissionType.ALLOW,
    )


def remove_right(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    cluster = targets.cluster
    _cluster_secrets(targets)
    binding = _client_right(spec.params.operation)
    removing = AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )
    admin = new_admin(cluster.bootstrap_servers)
    try:
        deleted = [
            b
            for future in admin.delete_acls([removing], request_timeout=ADMIN_TIMEOUT_S).values()
            for b in future.result(timeout=ADMIN_TIMEOUT_S)
        ]
    except KafkaException as e:
        raise FaultError(f"Kafka refused to delete the ACL {binding}: {describe_error(e)}") from e

    def restore() -> None:
        try:
            for future in admin.create_acls([binding], request_timeout=ADMIN_TIMEOUT_S).values():
                future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as e:
            raise FaultError(f"Kafka refused to create the ACL {binding} again: {describe_error(e)}") from e

    resource = "the cluster" if binding.restype == ResourceType.BROKER else "every topic"
    return AppliedFault(
        ACL_REMOVED,
        Target.QUORUM,
        [],
        f"{spec.params.operation} on {resource} for User:{CLIENT_USER}",
        restore,
        details={"principal": f"User:{CLIENT_USER}", "operation": spec.params.operation, "deleted": len(deleted)},
        label=f"no {spec.params.operation}",
    )


register(
    FaultType(
        SCRAM_PASSWORD_CHANGE,
        FAMILY,
        "failsafe's client user gets a new SCRAM password while it is in force (running clients keep the old one)",
        frozenset({Need.QUORUM}),
        change_password,
        "the user's old password given back",
        PasswordChange,
        fits=_fits_scram,
        cluster_needs=(),
    )
)
register(
    FaultType(
        ACL_REMOVED,
        FAMILY,
        "one right of failsafe's client principal (an ALLOW ACL) deleted while it is in force",
        frozenset({Need.QUORUM}),
        remove_right,
        "the ACL created again",
        RightRemoved,
        _check_operation,
        _fits_acls,
    )
)
