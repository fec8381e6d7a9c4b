"""The one registry of fault types: each module of failsafe.faults (or a plug-in elsewhere) registers its own here."""

from __future__ import annotations

from failsafe.faults.base import FaultError, FaultType

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
