"""The one registry of fault types: each module of failsafe.faults (or a plug-in elsewhere) registers its own here."""

from __future__ import annotations

from failsafe.faults.base import FaultError, FaultType
from failsafe.registry import Registry

FAULT_TYPES: Registry[FaultType] = Registry("fault type", FaultError, lambda t: t.summary)


def register(fault_type: FaultType) -> FaultType:
    """Add ``fault_type`` to the registry; a second type of the same name is refused."""
    return FAULT_TYPES.register(fault_type.name, fault_type)


unregister = FAULT_TYPES.unregister
fault_type = FAULT_TYPES.named


def allowed(offers: frozenset[str] | set[str]) -> list[str]:
    """The fault types a scenario kind offering ``offers`` takes: those that need nothing more."""
    return [name for name, t in FAULT_TYPES.items() if t.needs <= set(offers)]
