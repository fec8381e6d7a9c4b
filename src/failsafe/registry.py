"""The one registry helper: fault types (faults/registry.py) and scenario kinds (scenarios/kinds/registry.py) are each a
``Registry`` of plug-ins by name. Imports nothing of failsafe's. (checkers/run.py keeps a plain dict: the checkers
import nothing but the history.)

A registry is a dict (read it as one: ``REGISTRY[name]``, ``.items()``, ``in``) whose ``register`` refuses a second
plug-in of a name already taken, and whose ``named`` answers a name it does not hold with one clear error that lists
the names it does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Registry(dict[str, T]):
    def __init__(self, noun: str, error: Callable[[str], Exception], describe: Callable[[T], str] = str) -> None:
        """``noun``: what it holds ("fault type"); ``error``: the exception ``named`` raises; ``describe``: a plug-in
        in the refusal of a second one of its name."""
        super().__init__()
        self.noun = noun
        self._error = error
        self._describe = describe

    def register(self, name: str, item: T) -> T:
        """Add ``item`` under ``name``; a second plug-in of a name already taken is refused (the same one again is
        not)."""
        known = self.get(name)
        if known is not None and known is not item:
            raise ValueError(f"a {self.noun} named {name!r} is already registered ({self._describe(known)})")
        self[name] = item
        return item

    def unregister(self, name: str) -> None:
        """Remove a plug-in (tests that register toys of their own)."""
        self.pop(name, None)

    def named(self, name: str) -> T:
        try:
            return self[name]
        except KeyError:
            raise self._error(f"no {self.noun} {name!r}: the {self.noun}s are {', '.join(sorted(self))}") from None
