"""Scenario kinds: one contract, each kind a package of its own (kinds/<kind>/) that registers itself.

    lab       verifying clients (failsafe's or Kafka's verifiable ones) on one cluster; the checkers of
    failsafe.checkers
    dr        the lab's clients across a DR pair, MirrorMaker 2 between; checkers/dr/failover.py
    pipeline  the sales simulator and the Spark pipeline; the pipeline's run and the sink against the ledger
    txn       transactional writers and consume-transform-produce processors; checkers/txn/transactions.py
    share     share consumers (KIP-932) with the lab's clients; checkers/share/deliveries.py
    app       a user's application between the kit's producers and readers; checkers/app/each.py

A ``ScenarioKind`` says everything the engine and the CLI need: how its scenarios are parsed (once,
completely), where they run (one cluster or a DR pair), its workload, which faults it takes (by
what it ``offers``: a fault type needs some of it), the actions it declares, the checkers that
judge its runs, how a run is judged, shown and reported, and the run options it takes. Its name is
written in its own package and nowhere else: everything else asks the kind.

This package finds its subpackages and imports them; each registers its kind with ``register``.
A kind defined elsewhere (a test's toy kind) registers the same way. A new kind is one package.
"""

from __future__ import annotations

import importlib
import pkgutil

from failsafe.scenarios.kinds.registry import (
    KINDS,
    Placement,
    ScenarioKind,
    default_kind,
    kind_named,
    kind_of,
    kind_of_run,
    parse_table,
    register,
    unregister,
)


def _discover() -> None:
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
        importlib.import_module(f"{__name__}.{module}")


_discover()

__all__ = [
    "KINDS",
    "Placement",
    "ScenarioKind",
    "default_kind",
    "kind_named",
    "kind_of",
    "kind_of_run",
    "parse_table",
    "register",
    "unregister",
]
