"""Bad input is refused in one line, before anything starts (issue 49): a corpus of malformed scenarios, options and
stored runs, several of each shape. Each must be refused with exit 2 (a ScenarioError when parsed in-process), one line
naming the field, and nothing made: no cluster directory, no run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.registry import parse_scenario, read_scenario
from tests.helpers import assert_one_line_error, run_cli

BASE = {
    "name": "bad",
    "topics": [{"name": "t", "partitions": 3, "replication_factor": 1}],
    "producers": [{"name": "p", "topic": "t"}],
    "consumers": [{"name": "c", "topics": ["t"], "group": "g"}],
}
SHARE = {
    **BASE,
    "kind": "share",
    "consumers": [],
    "share_consumers": [{"name": "s", "topics": ["t"], "group": "q"}],
    "phases": {"drain_timeout_s": 60},
}


def changed(base: dict, path: str, value: object) -> dict:
    """``base`` with the field at ``path`` (dots, [N]) set to ``value``."""
    data = json.loads(json.dumps(base))
    node: object = data
    steps = [int(s) if s.isdigit() else s for s in path.replace("[", ".").replace("]", "").split(".")]
    for step in steps[:-1]:
        node = node.setdefault(step, {}) if isinstance(node, dict) else node[step]  # type: ignore[index,union-attr]
    node[steps[-1]] = value  # type: ignore[index]
    return data


NAN, INF = float("nan"), float("inf")
# (case, scenario table, what the one line must name)
SCENARIOS = [
    ("nan chaos", changed(BASE, "phases.chaos_s", NAN), "phases.chaos_s"),
    ("inf chaos", changed(BASE, "phases.chaos_s", INF), "phases.chaos_s"),
    ("inf rate", changed(BASE, "producers.0.rate_per_s", INF), "producers[0].rate_per_s"),
    (
        "nan fault time",
        {**BASE, "faults": [{"fault": "kill", "role": "leader", "partition": "t-0", "at_s": NAN}]},
        "faults[0].at_s",
    ),
    ("negative count", changed(BASE, "producers.0.count", -1), "producers[0].count"),
    ("negative drain", changed(BASE, "phases.drain_timeout_s", -5), "phases.drain_timeout_s"),
    ("negative partitions", changed(BASE, "topics.0.partitions", -3), "topics[0].partitions"),
    ("negative session", changed(BASE, "consumers.0.session_timeout_ms", -1), "consumers[0].session_timeout_ms"),
    ("string rate", changed(BASE, "producers.0.rate_per_s", "100"), "producers[0].rate_per_s"),
    ("string chaos", changed(BASE, "phases.chaos_s", "20"), "phases.chaos_s"),
    ("partitions beyond 2^31", changed(BASE, "topics.0.partitions", 2**31), "topics[0].partitions"),
    ("count beyond 2^31", changed(BASE, "consumers.0.count", 2**40), "consumers[0].count"),
    ("empty producer name", changed(BASE, "producers.0.name", ""), "producers[0].name"),
    ("slash in a consumer name", changed(BASE, "consumers.0.name", "../c"), "consumers[0].name"),
    ("empty group", changed(BASE, "consumers.0.group", ""), "consumers[0].group"),
    ("two topics of one name", {**BASE, "topics": [BASE["topics"][0], BASE["topics"][0]]}, "two topics are named 't'"),
    ("empty topic name", changed(BASE, "topics.0.name", ""), "topics[0].name"),
    ("topic ..", changed(BASE, "topics.0.name", ".."), "topics[0].name"),
    ("topic of 250 characters", changed(BASE, "topics.0.name", "a" * 250), "topics[0].name"),
    ("internal topic", changed(BASE, "topics.0.name", "__consumer_offsets"), "internal topics"),
    ("topic with a slash", changed(BASE, "topics.0.name", "a/b"), "topics[0].name"),
    ("share in ZooKeeper mode", changed(SHARE, "cluster.mode", "zookeeper"), "cluster.mode"),
    ("escaping name", changed(BASE, "name", "../../escape"), "scenario.name"),
    ("hidden name", changed(BASE, "name", ".hidden"), "scenario.name"),
    ("a million producers", changed(BASE, "producers.0.count", 10**6), "producers[0].count"),
    ("a million consumers", changed(BASE, "consumers.0.count", 10**6), "consumers[0].count"),
    ("negative racks", changed(BASE, "cluster.racks", -2), "cluster.racks"),
    ("a million brokers", changed(BASE, "cluster.brokers", 10**6), "cluster.brokers"),
    ("more racks than brokers", changed(BASE, "cluster.racks", 5), "cluster.racks"),
    ("a million share consumers", changed(SHARE, "share_consumers.0.count", 10**6), "share_consumers[0].count"),
    (
        "txn writer count",
        {**BASE, "kind": "txn", "writers": [{"name": "w", "topics": ["t"], "count": 10**6}]},
        "writers[0].count",
    ),
    (
        "txn empty processor group",
        {
            **BASE,
            "kind": "txn",
            "topics": [*BASE["topics"], {"name": "o", "partitions": 1, "replication_factor": 1}],
            "processors": [{"name": "x", "input": "t", "output": "o", "group": ""}],
        },
        "processors[0].group",
    ),
]


@pytest.mark.parametrize(("data", "field"), [pytest.param(d, f, id=c) for c, d, f in SCENARIOS])
def test_a_malformed_scenario_is_refused_naming_its_field(data: dict, field: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(data)
    message = str(refused.value)
    assert field in message and "\n" not in message, message


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 5000 + "]" * 5000,
        "name = 'x'\n" + "".join(f"[{'a.' * 3000}b]\n" for _ in range(1)),
        "x = " + "{a = " * 3000 + "1" + "}" * 3000,
    ],
)
def test_toml_nested_too_deep_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError):
        read_scenario(str(path)).parse()


@pytest.mark.parametrize("override", ["a" + ".a" * 5000 + "=1", "phases.chaos_s=" + "[" * 5000 + "]" * 5000])
def test_a_set_nested_too_deep_is_refused(override: str) -> None:
    with pytest.raises(ScenarioError):
        read_scenario("pubsub").parse((override,))


@pytest.mark.parametrize(
    ("case", "data", "field"),
    [SCENARIOS[0], SCENARIOS[10], SCENARIOS[15], SCENARIOS[19], SCENARIOS[22], SCENARIOS[24], SCENARIOS[26]],
)
def test_failsafe_run_refuses_before_anything_is_made(tmp_path: Path, case: str, data: dict, field: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(_toml(data))
    cluster, runs = tmp_path / "cluster", tmp_path / "runs"
    assert_one_line_error(run_cli("run", str(path), "--dir", str(cluster), "--runs", str(runs)), field)
    assert not cluster.exists() and not runs.exists(), f"{case}: something was made before the refusal"


@pytest.mark.parametrize("runs", ["/proc/failsafe-runs", "/etc/hostname/runs"])
def test_a_runs_directory_failsafe_cannot_write_in_is_refused_before_the_cluster(tmp_path: Path, runs: str) -> None:
    assert_one_line_error(run_cli("run", "pubsub", "--dir", str(tmp_path / "c"), "--runs", runs), "--runs", runs)
    assert not (tmp_path / "c").exists()


def test_failsafe_run_refuses_a_deep_set_and_up_a_version_that_is_none(tmp_path: Path) -> None:
    assert_one_line_error(
        run_cli("run", "pubsub", "--dir", str(tmp_path / "c"), "--set", "a" + ".a" * 3000 + "=1"), "--set"
    )
    assert_one_line_error(
        run_cli("up", "--kafka-version", "abc", "--dir", str(tmp_path / "c")), "--kafka-version", "'abc'"
    )
    assert not (tmp_path / "c").exists()


RUN = {
    "run": 0,
    "seed": 1,
    "name": "acks-all-s1-r000",
    "dir": "/nowhere",
    "verdict": "VALID",
    "wall_s": 1.0,
    "phase_seconds": {},
}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "is not a campaign.json"),
        ("", "is not a campaign.json"),
        ("[]", "expected an object"),
        (json.dumps({"campaign": {}, "runs": "x"}), "expected an object"),
        (
            json.dumps({"campaign": {}, "runs": [{k: v for k, v in RUN.items() if k != "dir"}]}),
            "runs[0] has no valid 'dir'",
        ),
        (json.dumps({"campaign": {}, "runs": [{**RUN, "run": "0"}]}), "runs[0] has no valid 'run'"),
    ],
)
def test_check_of_a_damaged_campaign_is_one_line(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "campaign.json").write_text(text)
    assert_one_line_error(run_cli("check", str(tmp_path)), "campaign.json", fragment)


@pytest.mark.parametrize(
    ("schedule", "results", "fragment"),
    [
        ('name = "x"\n[[faults]]\nfault = "kill"\nat_s = 1\n', "[]", "not a results.json"),
        ('name = "x"\n[[faults]]\nfault = "kill"\nat_s = 1\n', "{oops", "not a results.json"),
        (
            'name = "x"\n[[faults]\n',
            json.dumps({"valid": False, "checkers": {"delivery": {"valid": False, "violations": ["lost"]}}}),
            "schedule.toml",
        ),
        (
            'name = "x"\n[[faults]]\nfault = "kill"\n',
            json.dumps({"valid": False, "checkers": {"delivery": {"valid": False, "violations": ["lost"]}}}),
            "faults[0] has no valid 'at_s'",
        ),
    ],
)
def test_shrink_of_a_damaged_run_is_one_line(tmp_path: Path, schedule: str, results: str, fragment: str) -> None:
    (tmp_path / "schedule.toml").write_text(schedule)
    (tmp_path / "results.json").write_text(results)
    assert_one_line_error(run_cli("shrink", str(tmp_path), "--dir", str(tmp_path / "cluster")), fragment)
    assert not (tmp_path / "cluster").exists()


def _toml(data: dict) -> str:
    """A scenario table as TOML (the few shapes the corpus uses: scalars, lists, tables, arrays of tables)."""
    lines: list[str] = []

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return "nan" if v != v else ("inf" if v > 0 else "-inf") if v in (float("inf"), float("-inf")) else repr(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        raise TypeError(v)

    for k, v in data.items():
        if not isinstance(v, dict) and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v)):
            lines.append(f"{k} = {value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            lines += [f"[{k}]", *(f"{json.dumps(a)} = {value(b)}" for a, b in v.items())]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                lines += [f"[[{k}]]", *(f"{json.dumps(a)} = {value(b)}" for a, b in item.items())]
    return "\n".join(lines) + "\n"
