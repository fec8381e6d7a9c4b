"""Class-data sharing: where the archive lives, when nodes use it, and that a spec keeps its JVM options."""

from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.cluster.spec import ClusterSpec
from failsafe.jvm.cds import archive_path, dump_option, share_options
from failsafe.jvm.java import Java
from failsafe.jvm.jvm import server_command
from failsafe.jvm.kafka import KafkaDist


@pytest.fixture
def dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KafkaDist:
    monkeypatch.setenv("FAILSAFE_CACHE", str(tmp_path / "cache"))
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13-4.3.1.jar").write_bytes(b"x" * 10)
    return KafkaDist("4.3.1", libs)


JAVA = Java(Path("/usr/bin/java"), 17)


def test_no_archive_no_option_then_the_archive_is_mapped(dist: KafkaDist) -> None:
    assert share_options(JAVA, dist) == []
    path = archive_path(JAVA, dist)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    assert share_options(JAVA, dist) == [], "an empty file is no archive"
    path.write_bytes(b"archive")
    assert share_options(JAVA, dist) == [f"-XX:SharedArchiveFile={path}"]


def test_other_jars_or_another_java_get_another_archive(dist: KafkaDist) -> None:
    before = archive_path(JAVA, dist)
    assert archive_path(Java(Path("/opt/jdk21/bin/java"), 21), dist) != before
    (dist.libs_dir / "extra.jar").write_bytes(b"y")
    assert archive_path(JAVA, dist) != before
    assert before.name.startswith("kafka-4.3.1-java17-")


def test_jvm_options_go_before_the_main_class_and_survive_the_state_file(dist: KafkaDist, tmp_path: Path) -> None:
    option = dump_option(tmp_path / "a.jsa")
    cmd = server_command(JAVA, dist, tmp_path / "server-0.properties", tmp_path, "512M", [option])
    assert cmd.index(option) < cmd.index("kafka.Kafka")
    spec = ClusterSpec(jvm_options=(option,))
    assert ClusterSpec.from_json(spec.to_json()) == spec
    legacy = {k: v for k, v in spec.to_json().items() if k != "jvm_options"}
    assert ClusterSpec.from_json(legacy).jvm_options == ()
