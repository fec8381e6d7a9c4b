"""Waiting on observable conditions, never on sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_POLL_INTERVAL_S = 0.1


class WaitTimeout(TimeoutError):
    """The condition did not hold in time; the last error it raised, if any, is the cause."""


def wait_until(
    condition: Callable[[], T],
    timeout_s: float,
    err_msg: str,
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``condition`` until it returns something truthy and return that.

    Exceptions of the types in ``retry_on`` count as "not yet"; the last one becomes the
    cause of the ``WaitTimeout`` so the user sees why the condition never held.
    """
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while True:
        try:
            result = condition()
            if result:
                return result
        except retry_on as e:
            last_error = e
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(err_msg) from last_error
        # The poll interval paces the check of an external condition; it is not a sync sleep.
        time.sleep(min(poll_interval_s, remaining))
