"""The exit-code contract, each code produced by a real `failsafe` command (README, "Exit codes").

0 VALID, 1 INVALID, 3 UNKNOWN and 4 KNOWN by `failsafe check` of stored runs written by hand; 2 by bad
input; 5 by `failsafe run` on a directory whose broker port another process holds (nothing starts).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import orjson
import pytest

from tests.helpers import free_port_block, run_cli
from tests.unit.test_checker_builders import assign, client_config, declared, fault, finished, poll, read, rec, send

SCENARIO = {
    "kind": "lab",
    "name": "stored",
    "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}],
    "producers": [{"name": "p0", "topic": "t"}],
    "consumers": [{"name": "c", "topics": ["t"], "group": "g"}],
}
KNOWN = {
    "anomaly": "delivery.duplicate-acknowledged",
    "client": "librdkafka",
    "reference": "https://github.com/confluentinc/librdkafka/issues/4953",
    "when": {"enable.idempotence": "true"},
}
PRODUCER = client_config("p0", acks="all", enable_idempotence="true")
# What makes a hand-written run complete: SCENARIO's clients declared, every phase ended.
COMPLETE = finished(declared("p0"), declared("c-0", "consumer", group="g"))


def _run_dir(tmp_path: Path, ops: list, scenario: dict = SCENARIO) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "scenario.json").write_text(json.dumps(scenario))
    flat = [o for op in ops for o in (op if isinstance(op, list) else [op])]
    (run / "history.jsonl").write_bytes(b"".join(orjson.dumps(op) + b"\n" for op in flat))
    return run


def _check(run: Path) -> int:
    result = run_cli("check", str(run))
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode


def test_valid_is_0(tmp_path: Path) -> None:
    assert (
        _check(
            _run_dir(
                tmp_path,
                [
                    PRODUCER,
                    send("p0", 1, "v1", 0),
                    assign("c-0", [0]),
                    poll("c-0", [rec(0, "v1")], ms=5),
                    read(0, [rec(0, "v1")]),
                    COMPLETE,
                ],
            )
        )
        == 0
    )


def test_invalid_is_1(tmp_path: Path) -> None:
    lost = [
        PRODUCER,
        send("p0", 1, "v1", 0),
        send("p0", 2, "v2", 1),
        assign("c-0", [0]),
        poll("c-0", [rec(0, "v1")], ms=5),
        read(0, [rec(0, "v1")]),
        COMPLETE,
    ]
    assert _check(_run_dir(tmp_path, lost)) == 1


def test_unknown_is_3(tmp_path: Path) -> None:
    # A broker fault and acknowledged writes, but no topology sample: availability cannot decide.
    undecided = [
        PRODUCER,
        send("p0", 1, "v1", 0),
        fault(1, start_ms=10, stop_ms=20, nodes=[0]),
        assign("c-0", [0]),
        poll("c-0", [rec(0, "v1")], ms=5),
        read(0, [rec(0, "v1")]),
        COMPLETE,
    ]
    assert _check(_run_dir(tmp_path, undecided)) == 3


def test_a_run_that_did_not_finish_is_3_whatever_it_found(tmp_path: Path) -> None:
    """Hole 3: a history cut before the final read, or empty, is UNKNOWN, never VALID; so is one cut after a
    violation."""
    cut = [PRODUCER, send("p0", 1, "v1", 0), assign("c-0", [0]), poll("c-0", [rec(0, "v1")], ms=5)]
    assert _check(_run_dir(tmp_path / "cut", cut)) == 3
    assert _check(_run_dir(tmp_path / "empty", [])) == 3
    lost = [
        PRODUCER,
        send("p0", 1, "v1", 0),
        send("p0", 2, "v2", 1),
        assign("c-0", [0]),
        poll("c-0", [rec(0, "v1")], ms=5),
        read(0, [rec(0, "v1")]),
        COMPLETE[:-1],
    ]
    run = _run_dir(tmp_path / "lost", lost)
    assert _check(run) == 3
    results = json.loads((run / "results.json").read_text())
    assert (
        "final-read phase never ended" in results["incomplete"] and results["checkers"]["durability"]["valid"] is False
    )


def test_known_is_4(tmp_path: Path) -> None:
    # v1 written twice, both copies read; the entry is of librdkafka's idempotent producer, which p0 ran as.
    twice = [
        PRODUCER,
        send("p0", 1, "v1", 1),
        assign("c-0", [0]),
        poll("c-0", [rec(0, "v1"), rec(1, "v1")], ms=5),
        read(0, [rec(0, "v1"), rec(1, "v1")]),
        COMPLETE,
    ]
    run = _run_dir(tmp_path, twice, {**SCENARIO, "known": [KNOWN]})
    assert _check(run) == 4
    assert json.loads((run / "results.json").read_text())["verdict"] == "KNOWN"


@pytest.mark.parametrize(
    "args", [["run", "no-such-scenario"], ["check", "/nonexistent/run"], ["run", "pubsub", "--repeat", "0"]]
)
def test_usage_and_bad_input_are_2(args: list[str]) -> None:
    result = run_cli(*args)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_a_corrupt_scenario_json_is_2_not_a_traceback(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, [PRODUCER])
    (run / "scenario.json").write_text("{not json")
    result = run_cli("check", str(run))
    assert (
        result.returncode == 2 and "scenario.json is unreadable" in result.stderr and "Traceback" not in result.stderr
    )


def test_a_run_failsafe_cannot_carry_out_is_5(tmp_path: Path) -> None:
    base = free_port_block(3)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base))
        squatter.listen()
        result = run_cli("run", "pubsub", "--dir", str(tmp_path / "cluster"), "--base-port", str(base))
    assert result.returncode == 5, result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("failsafe:")]
    assert (
        f"port {base}" in line
        and "already in use" in line
        and "(details: " in line
        and "Traceback" not in result.stderr
    )
    log = Path(line.rsplit("(details: ", 1)[1].rstrip(")"))
    assert "PortInUse" in log.read_text(), "the traceback is kept in the log file the line names"


def test_the_contract_is_in_failsafe_help() -> None:
    text = run_cli("--help").stdout
    for line in (
        "0  VALID",
        "1  INVALID",
        "2  usage",
        "3  UNKNOWN",
        "4  KNOWN",
        "5  failsafe could not carry the run out",
    ):
        assert line in text


def test_a_run_stored_with_retired_options_is_judged_not_refused(tmp_path: Path) -> None:
    """Runs stored before loss was allowed by writer ([checkers.delivery] allow_loss) or before options stopped excusing
    (idempotent_producers, allow, lossy_writers): their scenario still parses, the options are dropped, and a history
    recorded before runs recorded their phase ends is UNKNOWN."""
    legacy = {
        **SCENARIO,
        "producers": [{"name": "p0", "topic": "t", "acks": "1"}, {"name": "p1", "topic": "t", "acks": "all"}],
        "checkers": {
            "delivery": {"allow_loss": True},
            "semantics": {"allow_loss": True},
            "order": {"idempotent_producers": []},
        },
    }
    acks1 = client_config("p0", acks="1")
    lost_by_acks1 = [
        acks1,
        PRODUCER | {"process": "p1"},
        send("p0", 1, "a1", 0),
        send("p0", 2, "a2", 1),
        assign("c-0", [0]),
        poll("c-0", [rec(0, "a1")], ms=5),
    ]
    assert _check(_run_dir(tmp_path / "one", lost_by_acks1, legacy)) == 3
    # Recorded today: the acks=1 writer declared may_lose may lose, the acks=all one never.
    today = [
        acks1,
        PRODUCER | {"process": "p1"},
        read(0, [rec(0, "a1"), rec(1, "b1")]),
        assign("c-0", [0]),
        poll("c-0", [rec(0, "a1"), rec(1, "b1")], ms=5),
        finished(declared("p0", may_lose=True), declared("p1"), declared("c-0", "consumer", group="g")),
    ]
    assert (
        _check(
            _run_dir(
                tmp_path / "acks1",
                [*today, send("p0", 1, "a1", 0), send("p0", 2, "a2", 2), send("p1", 3, "b1", 1)],
                legacy,
            )
        )
        == 0
    )
    assert (
        _check(
            _run_dir(
                tmp_path / "all",
                [*today, send("p0", 1, "a1", 0), send("p1", 3, "b1", 1), send("p1", 4, "b2", 2)],
                legacy,
            )
        )
        == 1
    )


def test_a_results_json_of_the_wrong_shape_is_judged_again(tmp_path: Path) -> None:
    run = _run_dir(
        tmp_path,
        [
            PRODUCER,
            send("p0", 1, "v1", 0),
            assign("c-0", [0]),
            poll("c-0", [rec(0, "v1")], ms=5),
            read(0, [rec(0, "v1")]),
            COMPLETE,
        ],
    )
    (run / "results.json").write_text(json.dumps({"valid": True, "checkers": ["not", "a", "table"]}))
    result = run_cli("explain", str(run))
    assert result.returncode == 0 and "Traceback" not in result.stderr and "no anomaly to explain" in result.stdout


def test_a_scenario_file_that_is_not_utf8_is_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'name = "x\xff"\n')
    result = run_cli("run", str(bad))
    assert (
        result.returncode == 2
        and "cannot be read as a UTF-8 TOML file" in result.stderr
        and "Traceback" not in result.stderr
    )
