"""A dynamic controller quorum (KIP-853) changed while it runs: a controller added, one removed.

A cluster made with ``failsafe up --dynamic-quorum`` (ClusterSpec.dynamic_quorum) formats its first controllers as
the quorum's voters (--initial-controllers) and every node finds the quorum through
controller.quorum.bootstrap.servers. Then, as Kafka's operations guide ("Controller membership changes") does it:

    add     a controller's slot (the next id, or a removed one's again) added to the spec, its storage formatted with
            --no-initial-controllers (a new disk: a new directory id), the node started as an observer, and
            ``kafka-metadata-quorum --command-config ITS.properties add-controller``; done when it is a voter.
    remove  ``kafka-metadata-quorum remove-controller --controller-id ID --controller-directory-id DIR``; done when it
            is no voter; then the node is stopped (SIGTERM) and its slot retired (ClusterSpec.retired_controllers).

Every node's properties are written again after each change, so a node started later finds the quorum as it is.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
from collections.abc import Callable

from failsafe.cluster.config import render_server_properties
from failsafe.cluster.nodes.control import LocalNodes
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.topology.lifecycle import DEFAULT_STOP_TIMEOUT_S, Cluster
from failsafe.errors import FailsafeError, UserError
from failsafe.supervisor import UP
from failsafe.tools.kafka_tools import tool_output
from failsafe.waiting import wait_until

TOOL_TIMEOUT_S = 60.0
STEP_TIMEOUT_S = 120.0


class QuorumChangeFailed(FailsafeError):
    """kafka-metadata-quorum refused a change, or the quorum did not show it in time."""


def _check(cluster: Cluster) -> None:
    spec = cluster.spec
    if not spec.dynamic_quorum:
        raise UserError(
            f"the cluster at {cluster.dir.root} has a static controller quorum (controller.quorum.voters): make one "
            "with 'failsafe up --dynamic-quorum' to add or remove controllers"
        )
    if not isinstance(cluster.nodes, LocalNodes):
        raise UserError("changing the controller quorum of a cluster on hosts is not supported yet")


def _tool(cluster: Cluster, args: list[str]) -> str:
    running = [n for n in cluster.spec.controller_nodes() if cluster.node_state(n) == UP]
    bootstrap = ",".join(f"{n.address}:{n.controller_port}" for n in running) or cluster.spec.quorum_bootstrap_servers()
    return tool_output(
        cluster.dist,
        "metadata-quorum",
        ["--bootstrap-controller", bootstrap, *args],
        TOOL_TIMEOUT_S,
        QuorumChangeFailed,
        " ".join(args),
    )


def voters(cluster: Cluster) -> dict[int, str]:
    """The quorum's voters as its leader describes them: node id -> directory id."""
    out = _tool(cluster, ["describe", "--status"])
    line = next((x for x in out.splitlines() if x.startswith("CurrentVoters:")), None)
    if line is None:
        raise QuorumChangeFailed(f"kafka-metadata-quorum describe --status printed no CurrentVoters: {out[-300:]}")
    return {int(v["id"]): str(v.get("directoryId") or "") for v in json.loads(line.split(":", 1)[1])}


def _save(cluster: Cluster, spec: ClusterSpec) -> None:
    """The new spec in the state file and every Kafka node's properties (a node started later finds the quorum)."""
    cluster.state = dataclasses.replace(cluster.state, spec=spec.validate())
    cluster.dir.save(cluster.state)
    root = cluster.dir.root.resolve()
    for node in spec.nodes():
        if not node.is_zookeeper:
            cluster.dir.write_config(node, render_server_properties(spec, node, root))


def _wait(condition: Callable[[], bool], timeout_s: float, message: str) -> None:
    wait_until(condition, timeout_s, message, poll_interval_s=0.5)


def next_controller_id(spec: ClusterSpec) -> int:
    """The slot an added controller takes: the first retired one, else one past the last."""
    return min(spec.retired_controllers) if spec.retired_controllers else spec.first_controller_id + spec.controllers


def add_controller(
    cluster: Cluster,
    node_id: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
    timeout_s: float = STEP_TIMEOUT_S,
) -> NodeSpec:
    """Add a controller (``node_id``: a retired slot or the next one) to the running quorum; returns its node."""
    _check(cluster)
    spec = cluster.spec
    node_id = next_controller_id(spec) if node_id is None else node_id
    if node_id in spec.retired_controllers:
        grown = dataclasses.replace(
            spec, retired_controllers=tuple(r for r in spec.retired_controllers if r != node_id)
        )
    elif node_id == spec.first_controller_id + spec.controllers:
        grown = dataclasses.replace(spec, controllers=spec.controllers + 1)
    else:
        slots = sorted({*spec.retired_controllers, spec.first_controller_id + spec.controllers})
        raise UserError(f"controller {node_id} cannot be added: the free slots are {', '.join(map(str, slots))}")
    node = next(n for n in grown.nodes() if n.node_id == node_id and n.is_controller)
    cluster.nodes.ensure_ports_free([node], grown)
    _save(cluster, grown)
    try:
        shutil.rmtree(cluster.dir.data_dir(node), ignore_errors=True)  # a new disk: a new directory id
        progress(f"formatting controller {node_id} to join the quorum (--no-initial-controllers)")
        cluster.format_storage([node], cluster.java, cluster.dist)
        cluster.start([node], cluster.java, cluster.dist, timeout_s, progress)
        progress(f"adding controller {node_id} to the voters")
        _tool(cluster, ["--command-config", str(cluster.dir.config_file(node).resolve()), "add-controller"])
        _wait(
            lambda: node_id in voters(cluster), timeout_s, f"controller {node_id} was no voter {timeout_s:g}s after add"
        )
    except BaseException:
        cluster.stop_nodes([node], signal.SIGKILL, DEFAULT_STOP_TIMEOUT_S)
        _save(cluster, spec)
        raise
    return node


def remove_controller(
    cluster: Cluster,
    node_id: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
    timeout_s: float = STEP_TIMEOUT_S,
) -> NodeSpec:
    """Remove a controller (``node_id``, or the active one) from the quorum's voters, then stop it and retire its
    slot; returns its node."""
    _check(cluster)
    spec = cluster.spec
    if node_id is None:
        node_id = cluster.active_controller()
        if node_id is None:
            raise QuorumChangeFailed("no active controller to remove: the quorum has no leader")
    node = next((n for n in spec.controller_nodes() if n.node_id == node_id and not n.is_broker), None)
    if node is None:
        ids = ", ".join(str(n.node_id) for n in spec.controller_nodes())
        raise UserError(f"no controller {node_id} in the cluster at {cluster.dir.root}: its controllers are {ids}")
    now = voters(cluster)
    if node_id not in now:
        raise UserError(
            f"controller {node_id} is no voter of the quorum (its voters: {', '.join(map(str, sorted(now)))})"
        )
    if len(now) == 1:
        raise UserError(f"controller {node_id} is the quorum's only voter: add another before removing it")
    progress(f"removing controller {node_id} from the voters")
    _tool(
        cluster,
        ["remove-controller", "--controller-id", str(node_id), "--controller-directory-id", now[node_id]],
    )
    _wait(lambda: node_id not in voters(cluster), timeout_s, f"controller {node_id} was a voter {timeout_s:g}s after")
    progress(f"stopping controller {node_id}")
    cluster.stop_nodes([node], signal.SIGTERM, DEFAULT_STOP_TIMEOUT_S)
    _save(cluster, dataclasses.replace(spec, retired_controllers=tuple(sorted({*spec.retired_controllers, node_id}))))
    return node
