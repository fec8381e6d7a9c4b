"""Faults on the transactional clients (writers and consume-transform-produce processors), each with a transaction open.

The workload waits until the client's pipe shows a transaction begun with a write in it, then acts. The
signal lands a moment after the pipe said so: usually before the commit, sometimes during it or in the
next transaction; the history records however that transaction ended.

    kill-txn-client    SIGKILL; the undo starts a new instance with the same ``transactional.id``, whose
                       ``init_transactions`` fences the old epoch and aborts what was left open: a crash and
                       a restart under exactly-once.
    zombie-txn-client  SIGSTOP (a process frozen, as by a long GC pause), and at once a new instance with the
                       same ``transactional.id`` takes over; the undo lets the frozen one go on (SIGCONT). It is
                       then a zombie: Kafka must fence it, and it records the error and stops.
"""

from __future__ import annotations

from dataclasses import dataclass

from failsafe.faults.base import AppliedFault, FaultContext, FaultSpec, FaultTargets, FaultType, Target
from failsafe.faults.draw import Arena, Draw
from failsafe.faults.registry import register
from failsafe.history.ops import Family

KILL_TXN_CLIENT = "kill-txn-client"
ZOMBIE_TXN_CLIENT = "zombie-txn-client"
# What a kind offers when its scenarios have transactional writers or consume-transform-produce workers (by NAME-INDEX).
TXN_CLIENTS = "txn-clients"


@dataclass(frozen=True)
class TxnClientChoice:
    """The transactional writer or consume-transform-produce worker, as NAME-INDEX (``writer-0``)."""

    client: str


def _check_client(params: TxnClientChoice, ctx: FaultContext) -> None:
    ctx.require_client("client", params.client, TXN_CLIENTS, "a transactional client")


def kill_txn_client(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    name = spec.params.client
    targets.clients.kill_client(name)
    return AppliedFault(
        KILL_TXN_CLIENT, Target.TXN_CLIENT, [name], "transactional client", lambda: targets.clients.restart_client(name)
    )


def zombie_txn_client(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    name = spec.params.client
    targets.clients.pause_client(name)  # type: ignore[attr-defined]
    targets.clients.restart_client(name)
    return AppliedFault(
        ZOMBIE_TXN_CLIENT,
        Target.TXN_CLIENT,
        [name],
        "transactional client, frozen and replaced",
        lambda: targets.clients.resume_client(name),
    )  # type: ignore[attr-defined]


def draw_txn_client(rng, arena: Arena) -> Draw:
    return Draw({"client": rng.choice(arena.txn_clients)})


register(
    FaultType(
        KILL_TXN_CLIENT,
        Family.CLIENT,
        "SIGKILL of a transactional client with a transaction open, between a write and its commit",
        frozenset({TXN_CLIENTS}),
        kill_txn_client,
        "started again with the same transactional.id (fencing the old one)",
        TxnClientChoice,
        _check_client,
        draw=draw_txn_client,
    )
)
register(
    FaultType(
        ZOMBIE_TXN_CLIENT,
        Family.CLIENT,
        "a transactional client frozen (SIGSTOP) with a transaction open and replaced by a "
        "new instance with its transactional.id",
        frozenset({TXN_CLIENTS}),
        zombie_txn_client,
        "SIGCONT: the frozen one goes on, a zombie Kafka must fence",
        TxnClientChoice,
        _check_client,
        draw=draw_txn_client,
    )
)
