"""failsafe: a real Apache Kafka cluster on one machine, broken on purpose, with proof."""

from __future__ import annotations

__version__ = "0.1.0"
