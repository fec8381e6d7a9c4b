"""Kafka's other artifacts beside the broker's jars (jvm/kafka.py resolve_beside, used by MirrorMaker 2 and Kafka
Streams), with Maven replaced by a fake that copies what it is told to: resolved once, and a resolution that brought no
jar of the kind asked for is an error, never a cached empty directory."""

from __future__ import annotations

from pathlib import Path

import pytest

import failsafe.jvm.kafka as kafka
from failsafe.errors import ProvisionError
from failsafe.jvm.streams import resolve_streams


def _fake_maven(jars: list[str], calls: list[tuple]):
    def resolve(version, home, libs_name, label, profile_args, *, quiet):
        calls.append((version, libs_name, profile_args))
        libs = Path(home) / libs_name
        libs.mkdir(parents=True, exist_ok=True)
        for jar in jars:
            (libs / jar).write_text("")
        return libs

    return resolve


def test_kafka_streams_is_resolved_once_into_its_own_directory(tmp_path: Path, monkeypatch) -> None:
    calls: list[tuple] = []
    monkeypatch.setenv("FAILSAFE_CACHE", str(tmp_path))
    monkeypatch.setattr(kafka, "resolve_artifacts", _fake_maven(["kafka-streams-4.3.1.jar"], calls))
    first = resolve_streams("4.3.1")
    second = resolve_streams("4.3.1")
    assert first.libs_dir == second.libs_dir == tmp_path / "kafka-4.3.1" / "streams-libs"
    assert calls == [("4.3.1", "streams-libs", ("-Dkafka.artifacts=streams",))]


def test_a_resolution_without_the_jar_asked_for_is_refused_and_not_remembered(tmp_path: Path, monkeypatch) -> None:
    calls: list[tuple] = []
    monkeypatch.setenv("FAILSAFE_CACHE", str(tmp_path))
    monkeypatch.setattr(kafka, "resolve_artifacts", _fake_maven(["kafka-clients-4.3.1.jar"], calls))
    for _ in range(2):
        with pytest.raises(ProvisionError, match="no kafka-streams"):
            resolve_streams("4.3.1")
    assert len(calls) == 2
