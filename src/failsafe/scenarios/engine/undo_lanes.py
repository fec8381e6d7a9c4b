"""Scheduled undos run beside the schedule, not in its way.

An undo can take long: a stopped broker's restart waits until the broker is ready, and a broker cut
from the controllers cannot register until that partition heals (it exits after
``initial.broker.registration.timeout.ms``, 60 s by default). Run inline, such an undo held back
every fault after it: a campaign's 3.6 s split, due to heal during that wait, was in force for
73 s, and the run's schedule was no longer the one it had written. Each scheduled undo therefore runs on its own
thread (a node's or a link's; a client's stays on the thread that drives the workload); the heal
waits for all of them before it retries what failed, so no fault is ever undone twice at once. An
error that is not an undo's own (a bug) is raised again on the engine's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class UndoLanes:
    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []

    def submit(self, name: str, undo: Callable[[], object]) -> None:
        thread = threading.Thread(target=self._run, args=(undo,), name=f"undo-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self, undo: Callable[[], object]) -> None:
        try:
            undo()
        except BaseException as e:  # handed to the engine's thread by raise_errors
            self._errors.append(e)

    def busy(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def raise_errors(self) -> None:
        """Raise the first error an undo thread ended with (once)."""
        if self._errors:
            error, self._errors = self._errors[0], []
            raise error
