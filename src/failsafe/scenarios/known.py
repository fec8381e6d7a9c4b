"""Known anomalies: a run whose only violations are ones its scenario declares known gets KNOWN, never VALID.

A scenario's ``[[known]]`` entry names a violation (``delivery.duplicate-acknowledged``), the client
library it is known of, the producer properties under which it is known, and the upstream
reference that explains it. A run is KNOWN when it is invalid, no expectation failed, every
invalid checker names its violations, and each of them matches an entry whose condition every
producer of the run meets. A lost acknowledged write never matches (the schema refuses such an
entry and ``classify`` checks again), and neither does a violation of a client or configuration
outside the entry's condition: those runs stay INVALID.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from failsafe.checkers.common import Verdict
from failsafe.checkers.run import combine_validity
from failsafe.scenarios.schema import CLIENT_OF_DRIVER, NEVER_KNOWN_PREFIX, KnownAnomaly, ProducerGroup, Scenario
from failsafe.workloads.specs import ProducerSpec
from failsafe.workloads.verifiable import VerifiableProducerSpec


def producer_settings(group: ProducerGroup) -> dict[str, str]:
    """The properties a producer group sets, in its client's names and as strings (what ``when`` compares with)."""
    fields = {"process": group.name, "topic": group.topic, "acks": group.acks, "idempotence": group.idempotence, "retries": group.retries,
              "linger_ms": group.linger_ms, "delivery_timeout_ms": group.delivery_timeout_ms, "properties": group.properties}
    if CLIENT_OF_DRIVER.get(group.driver) == "kafka-java":
        config: dict[str, object] = {**VerifiableProducerSpec(**fields).java_properties(), "acks": group.acks}
    else:
        config = ProducerSpec(**fields).producer_config()
    for name in ("bootstrap.servers", "client.id"):
        config.pop(name, None)
    return {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in config.items()}


def condition_holds(entry: KnownAnomaly, producers: tuple[ProducerGroup, ...]) -> bool:
    """Every producer is of the entry's client and sets every property of ``when`` to its value."""
    if not producers:
        return False
    for group in producers:
        if CLIENT_OF_DRIVER.get(group.driver) != entry.client:
            return False
        settings = producer_settings(group)
        if any(settings.get(name) != value for name, value in entry.when.items()):
            return False
    return True


def classify(results: dict[str, Any], scenario: Scenario | None) -> dict[str, Any]:
    """``verdict`` (and ``known`` / ``unexplained`` when the run was invalid) added to a lab run's results."""
    verdict = Verdict.of(results.get("valid"))
    results["verdict"] = verdict.value
    if verdict is not Verdict.INVALID or scenario is None:
        return results
    checkers: Mapping[str, Mapping] = results.get("checkers") or {}
    violations = [(name, v) for name, c in checkers.items() if c.get("valid") is False for v in (c.get("violations") or [f"{name}-invalid"])]
    failed_expectations = [e.get("name") for e in results.get("expectations") or [] if e.get("valid") is False]
    matched: list[dict[str, Any]] = []
    unexplained: list[str] = [f"expectation {name}" for name in failed_expectations]
    for checker, violation in violations:
        anomaly = f"{checker}.{violation}"
        entry = next((k for k in scenario.known if k.anomaly == anomaly and condition_holds(k, scenario.producers)), None)
        if entry is None or anomaly.startswith(NEVER_KNOWN_PREFIX):
            unexplained.append(anomaly)
            continue
        count = (checkers[checker].get("counts") or {}).get(violation)
        matched.append({"anomaly": anomaly, "count": count, "client": entry.client, "when": entry.when, "reference": entry.reference,
                        "description": entry.description})
    if matched:
        results["known"] = matched
    if unexplained:
        results["unexplained"] = unexplained
        return results
    # Every violation is known: what the run is, is what its other checkers say.
    rest = [c.get("valid", "unknown") for c in checkers.values() if c.get("valid") is not False]
    rest += [e.get("valid", "unknown") for e in results.get("expectations") or []]
    results["verdict"] = (Verdict.KNOWN if combine_validity(rest + [True]) is True else Verdict.UNKNOWN).value
    return results
