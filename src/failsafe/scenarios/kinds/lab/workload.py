"""The lab's workload: the kit's verifying producers and consumers as worker processes (scenarios/kit/workload.py)."""

from __future__ import annotations

from failsafe.scenarios.kit.workload import ClientsWorkload


class LabWorkload(ClientsWorkload):
    """The kit's workload as it is."""
