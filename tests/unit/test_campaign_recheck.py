"""failsafe check CAMPAIGN_DIR: every stored run judged again from its history, campaign.json and index.html
rewritten."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from failsafe.campaigns.record import run_record
from failsafe.campaigns.schedule import Planned, Schedule, scenario_data, write_schedule
from failsafe.campaigns.stats import CAMPAIGN_FILE, ERROR, write_campaign
from failsafe.scenarios.registry import parse_scenario
from failsafe.scenarios.store.rundir import RunDir
from tests.helpers import run_cli
from tests.unit.test_checker_builders import assign, client_config, declared, finished, log_read, poll, rec, send

KNOWN = {
    "anomaly": "delivery.duplicate-acknowledged",
    "client": "librdkafka",
    "reference": "https://kafka.apache.org/documentation/#semantics",
    "when": {"enable.idempotence": "false"},
}
BASE = {
    "topics": [{"name": "failsafe", "partitions": 1, "replication_factor": 1}],
    "producers": [
        {"name": "plain", "topic": "failsafe", "acks": "all", "idempotence": False},
        {"name": "idem", "topic": "failsafe", "acks": "all"},
    ],
    "consumers": [{"name": "m", "topics": ["failsafe"], "group": "g"}],
    "known": [KNOWN],
}
SCHEDULE = Schedule(5.0, (Planned("kill", 1.0, 2.0, {"node": 0}),))
# The plain producer's write is in the log twice: at-least-once, known; the idempotent producer's is not.
OPS = [
    client_config("plain", enable_idempotence="false"),
    client_config("idem", enable_idempotence="true"),
    *send("plain", 1, "plain:1", 1, ms=1),
    *send("idem", 1, "idem:1", 2, ms=2),
    assign("m-0", [0]),
    poll("m-0", [rec(0, "plain:1"), rec(1, "plain:1"), rec(2, "idem:1")], ms=10),
    log_read([rec(0, "plain:1"), rec(1, "plain:1"), rec(2, "idem:1")]),
    *finished(declared("plain"), declared("idem"), declared("m-0", "consumer", group="g")),
]


def _stored_campaign(tmp_path: Path) -> Path:
    directory = tmp_path / "campaign"
    data = scenario_data(BASE, SCHEDULE, "matrix-s1-r000", "run 0")
    rd = RunDir.create(directory, parse_scenario(data, "matrix-s1-r000"))
    write_schedule(rd.path / "schedule.toml", data, "run 0")
    rd.history_path.write_bytes(b"".join(orjson.dumps(op) + b"\n" for op in OPS))
    # As an older failsafe judged it: the known entry matched against every producer, so the idempotent one kept it
    # INVALID.
    old = {
        "checkers": {
            "delivery": {
                "valid": False,
                "counts": {"duplicate-acknowledged": 1},
                "violations": ["duplicate-acknowledged"],
            }
        },
        "expectations": [],
        "valid": False,
        "verdict": "INVALID",
        "unexplained": ["delivery.duplicate-acknowledged"],
    }
    records = [
        run_record(
            0,
            1,
            "matrix-s1-r000",
            SCHEDULE,
            run_dir=str(rd.path),
            results=old,
            history=None,
            wall_s=12.5,
            phase_seconds={"chaos": 5.0},
        ),
        run_record(
            1,
            1,
            "matrix-s1-r001",
            SCHEDULE,
            run_dir=str(directory / "gone"),
            results=None,
            history=None,
            wall_s=3.0,
            phase_seconds={},
            error="WorkloadFailed: a consumer group never got its partitions",
        ),
    ]
    write_campaign(directory / CAMPAIGN_FILE, {"seed": 1, "workload": "matrix", "runs": 2}, records)
    return directory


def test_a_stored_campaign_is_judged_again_from_its_histories(tmp_path: Path) -> None:
    directory = _stored_campaign(tmp_path)
    result = run_cli("check", str(directory))
    assert result.returncode == 5, result.stderr  # run 1 could not be carried out, and nothing is INVALID any more
    assert "KNOWN   (was INVALID)" in result.stdout
    data = json.loads((directory / CAMPAIGN_FILE).read_text())
    first, second = data["runs"]
    assert first["verdict"] == "KNOWN" and first["known"][0]["anomaly"] == "delivery.duplicate-acknowledged"
    assert first["wall_s"] == 12.5 and first["phase_seconds"] == {"chaos": 5.0}, (
        "the times it was measured with are kept"
    )
    assert second["verdict"] == ERROR and second["error"].startswith("WorkloadFailed")
    assert data["summary"]["verdicts"]["KNOWN"] == 1 and data["summary"]["verdicts"]["INVALID"] == 0
    assert "rechecked_at" in data["campaign"] and (directory / "index.html").is_file()
    assert json.loads((Path(first["dir"]) / "results.json").read_text())["verdict"] == "KNOWN"
