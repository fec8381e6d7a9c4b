"""Faults as plug-ins: one registry of fault types, each declared in its own module (docs/lab.md lists them).

    base.py     FaultType (name, family, needs, fields, validation, fit, start, undo), FaultSpec, AppliedFault
    nodes.py    brokers and controllers: kill, terminate, pause, restart, quorum-loss, cluster-loss
    clients.py  the workload's processes: kill-consumer, close-consumer, kill-driver, kill-spark-worker
    network.py  links: partition, lossy-link, isolate, cut-clients (nftables rules in the cluster's own table)
    sides.py    a network fault's sides, as written and as resolved when it starts
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

FAULT_TYPES: dict[str, FaultType] = {}


def register(fault_type: FaultType) -> FaultType:
    """Add ``fault_type`` to the registry; a second type of the same name is refused."""
    known = FAULT_TYPES.get(fault_type.name)
    if known is not None and known is not fault_type:
        raise ValueError(f"a fault type named {fault_type.name!r} is already registered ({known.summary})")
    FAULT_TYPES[fault_type.name] = fault_type
    return fault_type


def unregister(name: str) -> None:
    """Remove a fault type (tests that register toys of their own)."""
    FAULT_TYPES.pop(name, None)


def fault_type(name: str) -> FaultType:
    try:
        return FAULT_TYPES[name]
    except KeyError:
        raise FaultError(f"no fault type {name!r}: the fault types are {', '.join(sorted(FAULT_TYPES))}") from None


def allowed(offers: frozenset[str] | set[str]) -> list[str]:
    """The fault types a scenario kind offering ``offers`` takes: those that need nothing more."""
    return [name for name, t in FAULT_TYPES.items() if t.needs <= set(offers)]


def _discover() -> None:
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if module != "base":
            importlib.import_module(f"{__name__}.{module}")


_discover()

__all__ = ["FAULT_TYPES", "AppliedFault", "ClientTargets", "FaultContext", "FaultError", "FaultSpec", "FaultStart", "FaultTargets",
           "FaultType", "Need", "NoFields", "Target", "allowed", "fault_type", "register", "unregister"]
