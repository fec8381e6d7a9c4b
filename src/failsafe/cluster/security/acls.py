"""The ACLs failsafe's client principal is granted on a cluster with an authorizer (modes mtls, sasl-scram,
sasl-ssl): what its producers, consumers, transactional writers, share consumers and the pipeline ask of Kafka,
and no more. failsafe-admin is a super user and needs none.

    resource            name          operations
    TOPIC               every topic   READ, WRITE, DESCRIBE, DESCRIBE_CONFIGS, CREATE
    GROUP               every group   READ, DESCRIBE            (consumer groups, share groups, the marker group)
    TRANSACTIONAL_ID    every id      WRITE, DESCRIBE
    CLUSTER             kafka-cluster IDEMPOTENT_WRITE, DESCRIBE

A scenario that takes a right away (an ACL removed during a controller failover) removes one of these bindings
and adds it back; what is expected of the client then is TOPIC_AUTHORIZATION_FAILED, not a loss.
"""

from __future__ import annotations

from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

ANY_NAME = "*"
CLUSTER_NAME = "kafka-cluster"
# librdkafka's BROKER resource type is Kafka's CLUSTER (code 4 in both), named kafka-cluster.
CLUSTER = ResourceType.BROKER
CLIENT_RIGHTS: tuple[tuple[ResourceType, str, tuple[AclOperation, ...]], ...] = (
    (
        ResourceType.TOPIC,
        ANY_NAME,
        (
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.CREATE,
        ),
    ),
    (ResourceType.GROUP, ANY_NAME, (AclOperation.READ, AclOperation.DESCRIBE)),
    (ResourceType.TRANSACTIONAL_ID, ANY_NAME, (AclOperation.WRITE, AclOperation.DESCRIBE)),
    (CLUSTER, CLUSTER_NAME, (AclOperation.IDEMPOTENT_WRITE, AclOperation.DESCRIBE)),
)


def client_acls(principal: str) -> list[AclBinding]:
    """Allow bindings for ``principal`` (``User:NAME``) from any host: one per resource and operation."""
    return [
        AclBinding(resource, name, ResourcePatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)
        for resource, name, operations in CLIENT_RIGHTS
        for operation in operations
    ]
