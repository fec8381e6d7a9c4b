"""What changed between two Kafka releases' configuration keys and default feature levels, read from their jars.

    .venv/bin/python benchmarks/kafka_config_diff.py --from 4.3.1 --to 4.4.0 --out \
        docs/benchmarks/kafka-config-diff-4.3.1-4.4.0.json

Both releases must be resolved in failsafe's cache (failsafe setup --kafka-version VERSION); their jars are found with
failsafe.jvm.kafka.kafka_dist(VERSION).libs_dir. For each release, benchmarks/kafka_versions/DumpConfigs.java is
compiled with javac into a temporary directory and run against its jars: every ConfigDef key of the broker, topic,
dynamic group, producer, consumer and admin configs, with its type, default, importance and validator. Kafka's own
FeatureCommand version-mapping gives the latest production metadata.version of the release and each feature's default
level at it (what kafka-storage format or kafka-features upgrade --release-version picks by default).

Per family the JSON holds the key counts of both releases, the keys added (with type and default) and removed, those
whose default or type changed, and those whose importance or validator changed. Defaults are what the JVM prints: a
few (ssl.protocol, ssl.enabled.protocols, the key and trust manager algorithms) depend on the JVM that runs this.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from failsafe.errors import ProvisionError  # noqa: E402
from failsafe.jvm.kafka import kafka_dist  # noqa: E402

DUMP_CONFIGS = ROOT / "benchmarks" / "kafka_versions" / "DumpConfigs.java"
FEATURE_COMMAND = ("org.apache.kafka.tools.FeatureCommand", "version-mapping")
JAVAC_TIMEOUT_S = 180
JAVA_TIMEOUT_S = 120
FIELDS = ("type", "default", "importance", "validator")


class Failed(Exception):
    """A step could not be carried out: its one-line reason."""


def run(cmd: list[str], what: str, timeout_s: int) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as e:
        raise Failed(f"{what} took more than {timeout_s} s") from e
    except OSError as e:
        raise Failed(f"{what} could not start: {e}") from e
    if proc.returncode != 0:
        lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        raise Failed(f"{what} exited {proc.returncode}: {lines[0] if lines else 'no output'}")
    return proc


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise Failed(f"{name} is not on the PATH (a JDK 17 is needed: apt-get install openjdk-17-jdk-headless)")
    return path


def kafka_commit(libs: Path, version: str) -> str | None:
    """The commitId in kafka-clients' kafka-version.properties, the same AppInfoParser logs at start."""
    try:
        with zipfile.ZipFile(libs / f"kafka-clients-{version}.jar") as jar:
            text = jar.read("kafka/kafka-version.properties").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    props = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return props.get("commitId")


def dump_configs(version: str, libs: Path, work: Path) -> tuple[dict[str, dict[str, dict[str, str]]], dict[str, str]]:
    """DumpConfigs compiled and run against the release's jars: {family: {key: {type, default, importance,
    validator}}}, and {family: why it is unavailable} for the families this release lacks."""
    classpath = str(libs / "*")
    out = work / version
    out.mkdir()
    run(
        [tool("javac"), "-nowarn", "-cp", classpath, "-d", str(out), str(DUMP_CONFIGS)],
        f"javac of DumpConfigs against Kafka {version}",
        JAVAC_TIMEOUT_S,
    )
    proc = run(
        [tool("java"), "-cp", f"{out}:{classpath}", "DumpConfigs"], f"DumpConfigs on Kafka {version}", JAVA_TIMEOUT_S
    )
    families: dict[str, dict[str, dict[str, str]]] = {}
    for line in proc.stdout.splitlines():
        family, key, *rest = line.split("\t")
        if len(rest) != len(FIELDS):
            raise Failed(f"DumpConfigs on Kafka {version} printed a line of {len(rest) + 2} fields: {line[:200]}")
        families.setdefault(family, {})[key] = dict(zip(FIELDS, rest, strict=True))
    unavailable = {}
    for line in proc.stderr.splitlines():
        if line.startswith("unavailable\t"):
            _, family, reason = line.split("\t", 2)
            unavailable[family] = reason
    if not families:
        raise Failed(f"DumpConfigs on Kafka {version} printed no key")
    return families, unavailable


def feature_levels(version: str, libs: Path) -> dict[str, Any]:
    """Kafka's FeatureCommand version-mapping at its default release version (the latest production
    metadata.version): {"metadata.version": "4.4-IV2", "metadata.version.level": 33, FEATURE: LEVEL, ...}."""
    what = f"FeatureCommand version-mapping of Kafka {version}"
    try:
        proc = run([tool("java"), "-cp", str(libs / "*"), *FEATURE_COMMAND], what, JAVA_TIMEOUT_S)
    except Failed as e:
        if "usage:" in str(e):  # argparse4j rejecting the subcommand
            raise Failed(f"{what}: this release's FeatureCommand has no version-mapping subcommand") from e
        raise
    levels: dict[str, Any] = {}
    for line in proc.stdout.splitlines():
        name, sep, value = line.strip().partition("=")
        if not sep:
            continue
        try:
            if name == "metadata.version":  # "33 (4.4-IV2)"
                level, _, rest = value.partition(" ")
                levels["metadata.version"] = rest.strip("()")
                levels["metadata.version.level"] = int(level)
            else:
                levels[name] = int(value)
        except ValueError as e:
            raise Failed(f"{what} printed a line that is not FEATURE=LEVEL: {line.strip()!r}") from e
    if "metadata.version" not in levels:
        raise Failed(f"{what} printed no metadata.version: {proc.stdout[:200]!r}")
    return levels


def diff_family(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> dict[str, Any]:
    both = sorted(old.keys() & new.keys())
    return {
        "count_from": len(old),
        "count_to": len(new),
        "added": [{"key": k, "type": new[k]["type"], "default": new[k]["default"]} for k in sorted(new.keys() - old)],
        "removed": [{"key": k, "type": old[k]["type"], "default": old[k]["default"]} for k in sorted(old.keys() - new)],
        "default_changed": [
            {"key": k, "from": old[k]["default"], "to": new[k]["default"]}
            for k in both
            if old[k]["default"] != new[k]["default"]
        ],
        "type_changed": [
            {"key": k, "from": old[k]["type"], "to": new[k]["type"]} for k in both if old[k]["type"] != new[k]["type"]
        ],
        "importance_or_validator_changed": [
            {"key": k, "field": f, "from": old[k][f], "to": new[k][f]}
            for k in both
            for f in ("importance", "validator")
            if old[k][f] != new[k][f]
        ],
    }


def compare(old_version: str, new_version: str, command: str) -> dict[str, Any]:
    dists = {}
    for version in (old_version, new_version):
        dist = kafka_dist(version)
        if not any(dist.libs_dir.glob(f"kafka-clients-{version}.jar")):
            raise ProvisionError(f"Kafka {version}: no kafka-clients-{version}.jar in {dist.libs_dir}")
        dists[version] = dist
    configs, unavailable, features, releases = {}, {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="kafka-config-diff-") as work:
        for version, dist in dists.items():
            configs[version], unavailable[version] = dump_configs(version, dist.libs_dir, Path(work))
            features[version] = feature_levels(version, dist.libs_dir)
            releases[version] = {
                "libs": str(dist.libs_dir),
                "commit": kafka_commit(dist.libs_dir, version),
                "families_unavailable": unavailable[version],
            }
    java = run([tool("java"), "-version"], "java -version", JAVA_TIMEOUT_S).stderr.splitlines()
    old, new = configs[old_version], configs[new_version]
    families: dict[str, Any] = {}
    for family in list(old) + [f for f in new if f not in old]:
        if family in old and family in new:
            families[family] = diff_family(old[family], new[family])
        else:
            families[family] = {
                "count_from": len(old.get(family, {})) or None,
                "count_to": len(new.get(family, {})) or None,
                "unavailable_in": [v for v in (old_version, new_version) if family not in configs[v]],
            }
    return {
        "what": (
            "Kafka's ConfigDef keys (broker, topic, dynamic group, producer, consumer, admin) of two releases, read "
            "from their jars by benchmarks/kafka_versions/DumpConfigs.java, compared key by key; and each release's "
            "latest production metadata.version with every feature's default level at it, as Kafka's own tool "
            f"prints them (kafka-features version-mapping: java -cp 'LIBS/*' {' '.join(FEATURE_COMMAND)})"
        ),
        "command": command,
        "from": old_version,
        "to": new_version,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "java": java[0] if java else None,
        "releases": releases,
        "families": families,
        "features": {"from": features[old_version], "to": features[new_version]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="old", required=True, metavar="VERSION", help="the older release, e.g. 4.3.1")
    parser.add_argument("--to", dest="new", required=True, metavar="VERSION", help="the newer release, e.g. 4.4.0")
    parser.add_argument("--out", type=Path, help="where to write the JSON (default: print it)")
    args = parser.parse_args()
    command = ".venv/bin/python benchmarks/kafka_config_diff.py " + shlex.join(sys.argv[1:])
    try:
        summary = compare(args.old, args.new, command)
    except ProvisionError as e:
        print(f"kafka_config_diff: {e}", file=sys.stderr)
        return 2
    except Failed as e:
        print(f"kafka_config_diff: {e}", file=sys.stderr)
        return 1
    text = json.dumps(summary, indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
        return 0
    args.out.write_text(text)
    for family, d in summary["families"].items():
        changed = len(d.get("default_changed", [])) + len(d.get("type_changed", []))
        print(
            f"{family:<9} {d['count_from']} -> {d['count_to']} keys: +{len(d.get('added', []))} "
            f"-{len(d.get('removed', []))}, {changed} default/type changed"
        )
    print(f"features {args.old}: {summary['features']['from']}")
    print(f"features {args.new}: {summary['features']['to']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
