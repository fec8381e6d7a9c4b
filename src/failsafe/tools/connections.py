"""Which security settings failsafe's clients use to reach a cluster: the one place every client family asks.

A client knows the cluster by its bootstrap servers, so that is the key: each HOST:PORT a cluster's clients dial maps
to the client properties files of failsafe's users there (``client``: producers, consumers, the pipeline, what the
cluster's ACLs grant; ``admin``: topics, ACLs, configs, reassignments, Kafka's tools). A secured cluster of failsafe's
registers DIR/secrets/clients/*.properties when it is opened; an attached cluster its ``--client-config`` for both
users. A plaintext cluster opened on the same addresses removes them, so a port reused by another cluster never takes
an earlier cluster's settings.

The register is an environment variable holding paths only, never a secret: the workers, Spark and Kafka's tools
that failsafe starts inherit it, and read the files (owner-only) themselves.

    secured(config)           a librdkafka configuration (confluent-kafka) with its cluster's settings added
    security_for(servers)     ClientSecurity (tools/security.py) for any other family: Java, kcat, Spark
    command_config(servers)   the properties file Kafka's tools take as --command-config
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from failsafe.tools.security import ClientSecurity, from_properties

ENV = "FAILSAFE_CLIENT_SECURITY"
CLIENT, ADMIN = "client", "admin"
USERS = (CLIENT, ADMIN)


def _register() -> dict[str, dict[str, str]]:
    try:
        data = json.loads(os.environ.get(ENV, "{}"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def register(addresses: Iterable[str], files: dict[str, Path] | None) -> None:
    """Clients dialling any of ``addresses`` (HOST:PORT) use ``files`` (a user: its client properties file) from now
    on, in this process and those it starts; None: they use no security (a plaintext cluster there now)."""
    known = _register()
    for address in addresses:
        if files:
            known[address] = {user: str(Path(path).resolve()) for user, path in files.items()}
        else:
            known.pop(address, None)
    if known:
        os.environ[ENV] = json.dumps(known, sort_keys=True)
    else:
        os.environ.pop(ENV, None)


def properties_file(bootstrap_servers: str, user: str = CLIENT) -> Path | None:
    """The client properties file of ``user`` for the cluster at ``bootstrap_servers``, or None (plaintext)."""
    known = _register()
    for server in bootstrap_servers.split(","):
        files = known.get(server.strip())
        if files:
            return Path(files.get(user) or files[CLIENT])
    return None


def security_for(bootstrap_servers: str, user: str = CLIENT) -> ClientSecurity | None:
    """What a client of ``user`` needs to reach the cluster at ``bootstrap_servers``; None: plaintext."""
    path = properties_file(bootstrap_servers, user)
    return from_properties(path) if path else None


def secured(config: dict[str, object], user: str = CLIENT) -> dict[str, object]:
    """A librdkafka ``config`` (its ``bootstrap.servers`` names the cluster) with the cluster's security settings,
    which win over any of the same name: a client of failsafe's never reaches a secured cluster half-configured."""
    security = security_for(str(config.get("bootstrap.servers", "")), user)
    return {**config, **security.librdkafka()} if security else config


def command_config(bootstrap_servers: str, user: str = ADMIN, option: str = "--command-config") -> list[str]:
    """``--command-config FILE`` (or the tool's own ``option``) for one of Kafka's tools, or nothing for a plaintext
    cluster."""
    path = properties_file(bootstrap_servers, user)
    return [option, str(path)] if path else []


def bootstrap_args(bootstrap_servers: str, user: str = ADMIN) -> list[str]:
    """Where one of Kafka's tools finds the cluster, with how it reaches it."""
    return ["--bootstrap-server", bootstrap_servers, *command_config(bootstrap_servers, user)]
