"""Spark's interval strings ("2 minutes", "1 hour 30 minutes") as microseconds, checked before Spark starts."""

from __future__ import annotations

import re

_UNITS_US = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 7 * 86_400_000_000,
}
_INTERVAL_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", re.IGNORECASE)


def interval_us(text: str) -> int:
    """A delay as Spark writes it for ``withWatermark`` ("2 minutes", "1 hour 30 minutes", "10 seconds") in
    microseconds."""
    total, position = 0.0, 0
    while position < len(text):
        match = _INTERVAL_PART.match(text, position)
        unit = match.group(2).lower().removesuffix("s") if match else ""
        if unit not in _UNITS_US:
            raise ValueError(
                f"{text!r} is not a delay such as '2 minutes' or '1 hour 30 minutes' "
                f"(units: {', '.join(f'{unit}s' for unit in _UNITS_US)})"
            )
        total += float(match.group(1)) * _UNITS_US[unit]
        position = match.end()
    if not text.strip():
        raise ValueError("the watermark delay is empty: give one such as '2 minutes'")
    return int(total)
