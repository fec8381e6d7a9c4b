"""The app kind's scenario schema (scenarios/kinds/app/schema.py): the shipped examples parse, the contract's two forms
reach the checker, and a contract that cannot be judged is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.registry import load_scenario, parse_scenario

EXAMPLES = sorted((Path(__file__).parents[2] / "examples/apps").glob("*.toml"))


def _app(contract: dict, keys: int = 16) -> dict:
    return {
        "name": "app-test",
        "kind": "app",
        "topics": [{"name": t, "partitions": 2, "replication_factor": 1} for t in ("in", "out")],
        "producers": [{"name": "input", "topic": "in", "keys": keys}],
        "apps": [{"name": "svc", "command": ["{python}", "svc.py"], "input": ["in"], "output": ["out"], "group": "g"}],
        "contract": contract,
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_shipped_app_example_parses(path: Path) -> None:
    scenario = load_scenario(str(path))
    assert scenario.kind == "app" and scenario.apps


def test_the_streams_count_example_asks_for_totals_of_its_output() -> None:
    scenario = load_scenario("examples/apps/streams-count-broker-kill.toml")
    options = scenario.checker_options()["app"]
    assert (options["form"], options["total"], options["output_topics"]) == ("totals", "value", ["streams-counts"])


def test_a_totals_contract_reaches_the_checker_and_each_is_the_default() -> None:
    assert parse_scenario(_app({})).checker_options()["app"]["form"] == "each"
    options = parse_scenario(_app({"form": "totals", "total": "json:count"})).checker_options()["app"]
    assert (options["form"], options["total"]) == ("totals", "json:count")


@pytest.mark.parametrize(
    ("contract", "keys", "words"),
    [
        ({"form": "sums"}, 16, "contract.form"),
        ({"form": "totals"}, 0, "write no keys"),
        ({"form": "totals", "total": "header:n"}, 16, "contract.total"),
        ({"delivery": "exactly-twice"}, 16, "contract.delivery"),
    ],
)
def test_a_contract_that_cannot_be_judged_is_refused(contract: dict, keys: int, words: str) -> None:
    with pytest.raises(ScenarioError, match=words.replace(".", r"\.")):
        parse_scenario(_app(contract, keys))


def test_the_output_readers_reach_the_checker_by_isolation_level() -> None:
    data = _app({})
    data["consumers"] = [
        {"name": "clean", "topics": ["out"], "group": "c1"},
        {"name": "dirty", "topics": ["out"], "group": "c2", "properties": {"isolation.level": "read_uncommitted"}},
        {"name": "input-reader", "topics": ["in"], "group": "c3"},
    ]
    options = parse_scenario(data).checker_options()["app"]
    assert (options["committed_readers"], options["uncommitted_readers"]) == (["clean-0"], ["dirty-0"])


def _with_faults(*faults: dict) -> dict:
    return {**_app({"identity": "header:failsafe-id"}), "faults": list(faults)}


def test_a_rolling_restart_step_and_the_instances_transaction_coordinator_are_faults_of_an_app() -> None:
    scenario = parse_scenario(
        _with_faults(
            {"fault": "restart-app", "app": "svc-0", "at_s": 1, "duration_s": 1, "settled_within_s": 20},
            {"fault": "kill", "role": "txn-coordinator", "transactional_id": "svc-0", "at_s": 5, "duration_s": 1},
        )
    )
    assert [f.fault for f in scenario.faults] == ["restart-app", "kill"]
    assert scenario.faults[0].params.settled_within_s == 20
    assert scenario.checker_options()["app"]["identity"] == "header:failsafe-id"


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ({"fault": "restart-app", "app": "svc-0", "at_s": 1, "settled_within_s": -1}, "settled_within_s"),
        ({"fault": "restart-app", "app": "svc-9", "at_s": 1}, "svc-9"),
        ({"fault": "kill", "role": "txn-coordinator", "transactional_id": "other", "at_s": 1}, "transactional_id"),
    ],
)
def test_an_app_fault_that_names_nothing_of_the_scenario_is_refused(fault: dict, words: str) -> None:
    with pytest.raises(ScenarioError, match=words):
        parse_scenario(_with_faults(fault))


def test_the_output_topics_are_stamped_by_the_broker_unless_the_scenario_says_otherwise() -> None:
    data = _app({})
    topics = {t.name: t.configs for t in parse_scenario(data).topics}
    assert topics["out"] == {"message.timestamp.type": "LogAppendTime"} and topics["in"] == {}
    data["topics"][1]["configs"] = {"message.timestamp.type": "CreateTime"}
    assert {t.name: t.configs for t in parse_scenario(data).topics}["out"] == {"message.timestamp.type": "CreateTime"}


def test_an_app_on_a_host_is_a_client_host_the_engine_checks_and_its_files_are_kept() -> None:
    data = _app({})
    data["apps"][0] |= {"host": "h3", "files": ["examples/apps/eos_ctp.py"]}
    scenario = parse_scenario(data)
    assert scenario.client_hosts() == {"svc": "h3"}
    assert scenario.apps[0].files == ("examples/apps/eos_ctp.py",)
    assert parse_scenario(_app({})).client_hosts() == {}


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"files": ["examples/apps/eos_ctp.py"]}, "set host"),
        ({"host": "h3", "files": ["/etc/hostname"]}, "relative"),
        ({"host": "h3", "files": ["../outside.py"]}, "without '..'"),
        ({"host": "h3", "files": ["examples/apps/no-such-app.py"]}, "no such file"),
        ({"host": "h3", "files": "examples/apps/eos_ctp.py"}, "list of paths"),
        ({"host": "not a host!"}, "apps\\[0\\].host"),
    ],
)
def test_an_app_placement_that_cannot_be_carried_out_is_refused(fields: dict, words: str) -> None:
    data = _app({})
    data["apps"][0] |= fields
    with pytest.raises(ScenarioError, match=words):
        parse_scenario(data)
