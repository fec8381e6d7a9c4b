"""failsafe's transactional driver on Kafka's Java client: compiled at first use, refused arguments in one line, its
settings reported in the client-config op, and ``driver`` carried from the scenario into the specs."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

import failsafe.workloads.txn.java as txn_java
from failsafe.errors import ProvisionError
from failsafe.jvm.java import Java, find_java
from failsafe.jvm.kafka import KafkaDist, kafka_dist
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.kinds.txn.workload import TxnWorkload
from failsafe.scenarios.kit.workload import ClientsWorkload
from failsafe.scenarios.registry import load_scenario, parse_scenario
from failsafe.workloads.outcomes import error_name, send_outcome
from failsafe.workloads.txn.java import MAIN_CLASS, compiled_driver, driver_dir, driver_sources, txn_driver_command
from failsafe.workloads.txn.specs import CtpSpec, TxnProducerSpec, txn_spec_from_json, txn_spec_to_json
from failsafe.workloads.worker import client_config_fields

WRITER = TxnProducerSpec(
    process="writer-0",
    topics=("a", "b"),
    transactional_id="writer-0",
    bootstrap_servers="h:1",
    driver="kafka-java",
    kafka_version="4.3.1",
    count=5,
    properties={"linger.ms": "5"},
)
PROCESSOR = CtpSpec(
    process="ctp-0",
    input_topic="in",
    output_topic="out",
    group="g",
    transactional_id="ctp-0",
    bootstrap_servers="h:1",
    driver="kafka-java",
    kafka_version="4.3.1",
    batch=7,
)


MINIMAL = {
    "kind": "txn",
    "name": "tx",
    "topics": [
        {"name": "a", "partitions": 1, "replication_factor": 1},
        {"name": "in", "partitions": 1, "replication_factor": 1},
        {"name": "out", "partitions": 1, "replication_factor": 1},
    ],
    "writers": [{"name": "writer", "topics": ["a"], "count": 2}],
    "processors": [{"name": "ctp", "input": "in", "output": "out", "group": "g"}],
}


def _config(fields: dict) -> dict[str, str]:
    return {entry["name"]: entry["value"] for entry in fields["config"]}


# -- compiling and running the driver (needs a JDK and Kafka's jars)
# -----------------------------------------------------
@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Java, KafkaDist, Path]]:
    """The driver compiled into a cache of the test's own, against the resolved Kafka."""
    try:
        java, dist = find_java(), kafka_dist()
        txn_java.find_javac(java)
    except ProvisionError as e:
        pytest.skip(str(e))
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(txn_java, "cache_root", lambda: cache)
        yield java, dist, compiled_driver(java, dist)


def _driver(compiled: tuple[Java, KafkaDist, Path], *args: str) -> subprocess.CompletedProcess:
    java, dist, classes = compiled
    cmd = [str(java.executable), "-cp", f"{classes}:{dist.classpath}", MAIN_CLASS, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_the_driver_is_compiled_once_into_the_cache_keyed_by_its_sources_and_kafka_version(
    compiled, monkeypatch
) -> None:
    java, dist, classes = compiled
    assert (classes / "failsafe" / "txn" / "TxnDriver.class").is_file()
    assert {f"{name.removesuffix('.java')}.class" for name in driver_sources()} <= {
        p.name for p in (classes / "failsafe" / "txn").iterdir()
    }
    assert classes.parent.name.startswith(f"kafka-{dist.version}-")
    assert (
        driver_dir(dist, {"TxnDriver.java": b"other source"})
        != driver_dir(dist)
        != driver_dir(replace(dist, version="3.9.2"))
    )
    monkeypatch.setattr(txn_java, "cache_root", lambda: classes.parent.parent.parent)

    def no_javac(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(txn_java, "run_to_end", no_javac)
    assert compiled_driver(java, dist) == classes


def test_the_driver_is_every_java_file_of_its_package_directory() -> None:
    sources = driver_sources()
    on_disk = sorted(p.name for p in Path(txn_java.__file__).parent.joinpath(*txn_java.SOURCE_DIR).glob("*.java"))
    assert list(sources) == on_disk and "TxnDriver.java" in sources and len(sources) > 1
    assert all(b"\npackage failsafe.txn;\n" in text for text in sources.values())
    assert MAIN_CLASS == "failsafe.txn.TxnDriver"


def test_the_cache_key_hashes_every_source_file_in_a_stable_order() -> None:
    dist = KafkaDist("4.3.1", Path("/k/libs"))
    sources = driver_sources()
    key = driver_dir(dist, sources)
    assert driver_dir(dist) == key == driver_dir(dist, dict(reversed(list(sources.items()))))
    assert all(driver_dir(dist, {**sources, name: text + b"\n"}) != key for name, text in sources.items())
    assert driver_dir(dist, {**sources, "Extra.java": b""}) != key
    # A file's bytes moved into its neighbour is another driver.
    assert driver_dir(dist, {"A.java": b"xy", "B.java": b""}) != driver_dir(dist, {"A.java": b"x", "B.java": b"y"})


def test_help_is_one_line(compiled) -> None:
    done = _driver(compiled, "--help")
    assert (
        done.returncode == 0
        and done.stdout.count("\n") == 1
        and done.stdout.startswith("usage: TxnDriver writer|processor")
    )


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "no mode given"),
        (("bogus",), "unknown mode bogus"),
        (("writer", "--process"), "--process needs a value"),
        (("writer", "--process", "w", "--colour", "red"), "unknown option --colour"),
        (("writer", "--process", "w"), "--producer-property bootstrap.servers=... is required"),
        (
            (
                "writer",
                "--process",
                "w",
                "--producer-property",
                "bootstrap.servers=h:1",
                "--producer-property",
                "transactional.id=w",
            ),
            "writer: --topic is required",
        ),
        (
            (
                "processor",
                "--process",
                "p",
                "--producer-property",
                "bootstrap.servers=h:1",
                "--producer-property",
                "transactional.id=p",
            ),
            "processor: --input, --output and --group are required",
        ),
        (("writer", "--process", "w", "--rate-per-s", "fast"), "--rate-per-s fast: not a number"),
    ],
)
def test_bad_arguments_are_one_line_on_stderr(compiled, args: tuple[str, ...], message: str) -> None:
    done = _driver(compiled, *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_a_source_javac_refuses_is_one_line_naming_its_first_error(compiled, monkeypatch, tmp_path: Path) -> None:
    java, dist, _ = compiled
    monkeypatch.setattr(txn_java, "cache_root", lambda: tmp_path)
    sources = {**driver_sources(), "Session.java": b"package failsafe.txn; final class Session { int x = ; }\n"}
    monkeypatch.setattr(txn_java, "driver_sources", lambda: sources)
    with pytest.raises(ProvisionError) as e:
        compiled_driver(java, dist)
    message = str(e.value)
    assert (
        "\n" not in message
        and "javac could not compile failsafe's txn driver" in message
        and "Session.java" in message
        and "error" in message
    )
    assert list((tmp_path / txn_java.CACHE_DIR).iterdir()) == []  # nothing half-made left in the cache


def test_without_javac_the_error_is_one_line(monkeypatch, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(txn_java.shutil, "which", lambda name: None)
    with pytest.raises(ProvisionError) as e:
        txn_java.find_javac(Java(tmp_path / "bin" / "java", 17))
    assert "\n" not in str(e.value) and str(e.value).startswith("no javac found") and "JDK" in str(e.value)


def test_the_drivers_send_errors_are_the_verifiable_tools_names_and_outcomes() -> None:
    from confluent_kafka import KafkaError

    from failsafe.workloads.verifiable.events import JAVA_EXCEPTION_ERRORS

    source = driver_sources()["Errors.java"].decode()
    pairs = re.findall(r'"(\w+Exception)", "([A-Z_]+)"', source[source.index("String[] names") :])
    definite = set(
        re.findall(r'"(\w+Exception)"', source[source.index("DEFINITE_SEND_FAILURES =") : source.index("static {")])
    )
    expected = {name: error_name(KafkaError(code)) for name, code in JAVA_EXCEPTION_ERRORS.items()}
    assert dict(pairs) == expected
    assert definite == {
        name for name, code in JAVA_EXCEPTION_ERRORS.items() if send_outcome(KafkaError(code)) == "fail"
    }


# -- what the worker reports and runs ---------------------------------------------------------------------------------
def test_a_java_writer_reports_the_java_client_its_kafka_version_and_settings() -> None:
    fields = client_config_fields(replace(WRITER, client_log="/r/logs/writer-0.client.log"))
    assert (
        fields["client"] == "kafka-java"
        and fields["client_version"] == "4.3.1"
        and fields["log"] == "logs/writer-0.client.log"
    )
    config = _config(fields)
    assert "bootstrap.servers" not in config and "debug" not in config  # librdkafka's debug contexts are not Java's
    assert (
        config["transactional.id"] == "writer-0" and config["acks"] == "all" and config["enable.idempotence"] == "true"
    )
    assert (
        config["transaction.timeout.ms"] == "10000" and config["linger.ms"] == "5" and config["max.block.ms"] == "10000"
    )


def test_a_java_processor_reports_its_consumer_read_committed_with_its_producer() -> None:
    config = _config(client_config_fields(PROCESSOR))
    assert (
        config["isolation.level"] == "read_committed"
        and config["group.id"] == "g"
        and config["max.poll.records"] == "7"
    )
    assert (
        config["enable.auto.commit"] == "false"
        and config["client.id"] == "ctp-0"
        and config["transactional.id"] == "ctp-0"
    )


def test_a_librdkafka_spec_is_still_librdkafka() -> None:
    assert client_config_fields(replace(WRITER, driver="librdkafka"))["client"] == "librdkafka"


def test_specs_keep_driver_and_kafka_version_through_json() -> None:
    assert txn_spec_from_json(txn_spec_to_json(WRITER)) == WRITER
    assert txn_spec_from_json(txn_spec_to_json(PROCESSOR)) == PROCESSOR
    assert TxnProducerSpec(process="w", topics=("a",), transactional_id="w").driver == "librdkafka"


def test_the_writers_command_line(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(txn_java, "cache_root", lambda: tmp_path)
    cmd = txn_driver_command(
        replace(WRITER, client_log="/r/logs/writer-0.client.log"),
        Java(Path("/j/bin/java"), 17),
        KafkaDist("4.3.1", Path("/k/libs")),
        Path("/c/classes"),
    )
    assert (
        cmd[0] == "/j/bin/java"
        and cmd[cmd.index("-cp") + 1] == "/c/classes:/k/libs/*"
        and cmd[cmd.index(MAIN_CLASS) + 1] == "writer"
    )
    args = cmd[cmd.index(MAIN_CLASS) + 2 :]
    pairs = list(zip(args[::2], args[1::2], strict=True))
    assert (
        ("--topic", "a") in pairs
        and ("--topic", "b") in pairs
        and ("--count", "5") in pairs
        and ("--process", "writer-0") in pairs
    )
    assert ("--producer-property", "transactional.id=writer-0") in pairs and (
        "--producer-property",
        "linger.ms=5",
    ) in pairs
    # The Java client's log goes to the worker's client log, through a log4j2 file of failsafe's.
    assert "-Dfailsafe.client.log=/r/logs/writer-0.client.log" in cmd
    [config] = [a.split("=", 1)[1] for a in cmd if a.startswith("-Dlog4j2.configurationFile=")]
    assert "${sys:failsafe.client.log}" in Path(config).read_text()
    assert "--superseded-file" not in cmd
    marked = txn_driver_command(
        replace(WRITER, superseded_file="/r/superseded/writer-0"),
        Java(Path("/j/bin/java"), 17),
        KafkaDist("4.3.1", Path("/k/libs")),
        Path("/c/classes"),
    )
    assert marked[marked.index("--superseded-file") + 1] == "/r/superseded/writer-0"


def test_the_processors_command_line_and_kafka_39s_logging(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(txn_java, "cache_root", lambda: tmp_path)
    spec = replace(PROCESSOR, kafka_version="3.9.2", client_log="/r/logs/ctp-0.client.log")
    cmd = txn_driver_command(
        spec, Java(Path("/j/bin/java"), 17), KafkaDist("3.9.2", Path("/k/libs")), Path("/c/classes")
    )
    args = cmd[cmd.index(MAIN_CLASS) + 1 :]
    assert args[0] == "processor"
    pairs = list(zip(args[1::2], args[2::2], strict=True))
    assert (
        ("--input", "in") in pairs
        and ("--output", "out") in pairs
        and ("--group", "g") in pairs
        and ("--batch", "7") in pairs
    )
    assert ("--consumer-property", "isolation.level=read_committed") in pairs and (
        "--consumer-property",
        "client.id=ctp-0-in",
    ) in pairs
    [config] = [a.split("file:", 1)[1] for a in cmd if a.startswith("-Dlog4j.configuration=")]
    assert "${failsafe.client.log}" in Path(config).read_text()


# -- the scenario's driver --------------------------------------------------------------------------------------------
def test_the_driver_is_librdkafka_unless_the_scenario_says_kafka_java() -> None:
    s = parse_scenario(MINIMAL)
    assert [w.driver for w in s.writers] == ["librdkafka"] and [p.driver for p in s.processors] == ["librdkafka"]
    java = load_scenario("txn-zombie-fencing", ("writers[*].driver=kafka-java", "processors[*].driver=kafka-java"))
    assert [w.driver for w in java.writers] == ["kafka-java"] and [p.driver for p in java.processors] == ["kafka-java"]


@pytest.mark.parametrize("where", ["writers", "processors"])
def test_an_unknown_driver_is_refused_naming_the_field(where: str) -> None:
    data = {**MINIMAL, where: [{**MINIMAL[where][0], "driver": "java"}]}
    with pytest.raises(ScenarioError, match=rf"tx\.{where}\[0\]\.driver: 'java' is not one of librdkafka, kafka-java"):
        parse_scenario(data)


def test_the_workload_gives_each_spec_its_driver_and_the_clusters_kafka_version(monkeypatch) -> None:
    scenario = parse_scenario({**MINIMAL, "writers": [{**MINIMAL["writers"][0], "driver": "kafka-java"}]})
    workload = TxnWorkload(scenario)
    started = []
    monkeypatch.setattr(workload, "_start_txn", lambda spec, name=None: started.append(spec))
    monkeypatch.setattr(ClientsWorkload, "start", lambda self, ctx: None)
    workload.start(SimpleNamespace(bootstrap_servers="h:1", kafka_version="4.2.0", wait=lambda *args: None))
    assert {(s.process, s.driver, s.kafka_version) for s in started} == {
        ("writer-0", "kafka-java", "4.2.0"),
        ("writer-1", "kafka-java", "4.2.0"),
        ("ctp-0", "librdkafka", "4.2.0"),
    }
