"""Kafka from Maven Central: the pinned 4.x and the 3.9.x line resolve and their tools run."""

from __future__ import annotations

import pytest

from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, cache_root
from tests.helpers import run_cli

pytestmark = pytest.mark.cluster

LEGACY_KAFKA_VERSION = "3.9.2"
# The newest release, beside the default (the Makefile's NEXT_KAFKA_VERSION); its MirrorMaker 2 is 4.3.1's, as Maven
# Central has no connect-mirror 4.4.0 (jvm/mirror.py).
NEXT_KAFKA_VERSION = "4.4.0"


@pytest.mark.parametrize("version", [DEFAULT_KAFKA_VERSION, LEGACY_KAFKA_VERSION, NEXT_KAFKA_VERSION])
def test_setup_resolves_kafka_and_its_tools_report_the_version(version: str) -> None:
    setup = run_cli("setup", "--kafka-version", version, timeout_s=600)
    assert setup.returncode == 0, setup.stderr
    if version == NEXT_KAFKA_VERSION:
        assert "MirrorMaker 2 4.3.1 jars" in " ".join(setup.stdout.split()), setup.stdout
    libs = cache_root() / f"kafka-{version}" / "libs"
    assert (libs / f"kafka_2.13-{version}.jar").is_file()
    assert (libs / f"kafka-tools-{version}.jar").is_file()
    logging_jar = "log4j-core-" if version.startswith("4.") else "reload4j-"
    assert any(p.name.startswith(logging_jar) for p in libs.iterdir())
    tool = run_cli("kafka", "--kafka-version", version, "topics", "--version")
    assert tool.returncode == 0, tool.stderr
    assert tool.stdout.strip().startswith(version)
    assert "SLF4J" not in tool.stderr  # a logging binding was found
