"""Which node is the active controller, sampled through a run and recorded at each change.

The KRaft quorum's leader (from the controllers' quorum-state files) or, in ZooKeeper mode, the
broker in /controller: the cluster says which (Cluster.active_controller). The history gets one
``controller`` op when the run starts and one at every change, so "time to a new controller" is
read from the history alone (checkers/measure/faults.py).
"""

from __future__ import annotations

import threading

from failsafe.cluster.site import RunSite
from failsafe.history.ops import Op, op
from failsafe.history.recorder import Recorder

POLL_S = 0.2


class ControllerWatch:
    def __init__(self, cluster: RunSite, recorder: Recorder, poll_s: float = POLL_S) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0

    def start(self) -> ControllerWatch:
        self._thread = threading.Thread(target=self._run, name="controller-watch", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        last: object = object()
        while not self._stop.is_set():
            try:
                current = self.cluster.active_controller()
            except Exception:  # noqa: BLE001 - a sample that fails is no sample; the run goes on
                self.errors += 1
                current = None
            if current != last:
                # Written even when None (no controller known): the op's field says so.
                self.recorder.record({**op(Op.CONTROLLER), "controller": current})
                last = current
            # Pacing the sampling of an external condition, not a synchronising sleep.
            self._stop.wait(self.poll_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
