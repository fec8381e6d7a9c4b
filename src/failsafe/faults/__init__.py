"""Faults as plug-ins: one registry of fault types, each declared in its own module (docs/lab.md lists them).

    registry.py the fault types by name: register, fault_type, allowed (what a kind offering some needs takes)
    base.py     FaultType (name, family, needs, fields, validation, fit, start, undo), FaultSpec, AppliedFault
    nodes.py    brokers and controllers: kill, terminate, pause, restart, quorum-loss, cluster-loss
    clients.py  the workload's processes: kill-consumer, close-consumer, restart-consumer, pause-consumer, kill-driver,
    kill-spark-worker
    apps.py     the instances of a user's application (the app kind): kill-app, terminate-app, pause-app
    disk.py     disks of nodes on disk layers: power-loss (unsynced writes gone), disk-full (ENOSPC), disk-error (EIO)
    network.py  links: partition, lossy-link, isolate, cut-clients (nftables rules in the cluster's own table)
    sides.py    a network fault's sides, as written and as resolved when it starts
    security.py a secured cluster's credentials and rights: scram-password-change, acl-removed
    certificates.py  a broker's certificate changed while it serves: certificate-rotated, certificate-expired
    leash.py    the watchdog that deletes a run's network rules if failsafe dies before its heal

Every module of this package that declares fault types registers them with ``register`` when it is
imported, and this package imports them all: a new fault type is one new module (or one more
declaration in a module of its family), and nothing else changes. A fault type defined outside
failsafe registers itself the same way.
"""

from __future__ import annotations

import importlib
import pkgutil

from failsafe.faults.base import (
    AppliedFault,
    ClientTargets,
    FaultContext,
    FaultError,
    FaultSpec,
    FaultStart,
    FaultTargets,
    FaultType,
    Need,
    NoFields,
    Target,
)
from failsafe.faults.registry import FAULT_TYPES, allowed, fault_type, register, unregister


def _discover() -> None:
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if module not in ("base", "registry"):
            importlib.import_module(f"{__name__}.{module}")


_discover()

__all__ = [
    "FAULT_TYPES",
    "AppliedFault",
    "ClientTargets",
    "FaultContext",
    "FaultError",
    "FaultSpec",
    "FaultStart",
    "FaultTargets",
    "FaultType",
    "Need",
    "NoFields",
    "Target",
    "allowed",
    "fault_type",
    "register",
    "unregister",
]
