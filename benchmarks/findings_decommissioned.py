"""Which reader stopped, and what its client logged: the runs of `findings.sh coordinator` read run by run (section 8).

A campaign run found a consumer group that stopped reading a partition for good after every broker was cut from
the controllers. librdkafka's log of the member that owned it said "Group coordinator decommissioned" and then
"no broker available for coordinator query" until it closed (librdkafka#5511). For each stored configuration
(docs/findings/LABEL.json, made by findings.sh from failsafe run --repeat), this reads every run directory and
records the partitions a group never read to the end (the availability checker's own never_caught_up), the member
that owned each one last, which members' client logs have the line, and which members' groups were still looking for
a coordinator (state query-coord) when they closed; with debug=metadata (the -debug-metadata configuration) also
which members were handed a Metadata response listing no broker, and which had no usable broker left when they
closed. The counts go into the stored file under "decommissioned_coordinator".

    .venv/bin/python benchmarks/findings_decommissioned.py --runs /tmp/failsafe-findings/runs \
        brokers-cut-from-controllers-librdkafka brokers-cut-from-controllers-java \
            brokers-cut-from-controllers-5s-librdkafka \
        brokers-cut-from-controllers-librdkafka-debug-metadata
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import polars as pl

from failsafe.checkers.liveness import never_caught_up
from failsafe.history.load import load_history
from failsafe.history.ops import Op

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.findings_runs import annotate_stored  # noqa: E402

# What librdkafka logs when it drops a broker that left the metadata while it was the group's coordinator.
MECHANISM = "Group coordinator decommissioned"
# With debug=metadata: a Metadata response that lists no broker (KRaft leaves fenced brokers out), and librdkafka
# with no broker left to ask (librdkafka#5301).
NO_BROKER = re.compile(r": 0 brokers, \d+ topics")
NO_USABLE = "no usable brokers"
BOOTSTRAP_ANSWER = re.compile(r"/bootstrap: \d+ brokers, \d+ topics")
METADATA_LINE = re.compile(r" METADATA \[[^\]]+\] [^\n]*")
STATE_CHANGE = re.compile(r'Group "[^"]+" changed state \S+ -> (\S+)')


def left_querying(log: str) -> bool:
    """The group's last state before the consumer closed was query-coord: it never found a coordinator again."""
    before_close = log.split("Closing consumer", 1)[0]
    states = STATE_CHANGE.findall(before_close)
    return bool(states) and states[-1] == "query-coord"


def owners(history, stuck: pl.DataFrame) -> list[str]:
    """The member each never-caught-up partition was last assigned to."""
    assigns = history.membership.filter(pl.col("f") == Op.ASSIGN).sort("time_ns")
    found = []
    for row in stuck.iter_rows(named=True):
        held = assigns.filter(
            (pl.col("group") == row["reader"])
            & (pl.col("topic") == row["topic"])
            & (pl.col("partition") == row["partition"])
        )
        found.append(held["process"][-1] if held.height else row["reader"])
    return sorted(set(found))


def left_without_a_broker(log: str) -> bool:
    """The last metadata line before the consumer closed says it had no usable broker to ask."""
    lines = METADATA_LINE.findall(log.split("Closing consumer", 1)[0])
    return bool(lines) and NO_USABLE in lines[-1]


def went_back_to_bootstrap(log: str) -> bool:
    """After the last Metadata response with no broker, a bootstrap server answered one (the member re-bootstrapped)."""
    told = list(NO_BROKER.finditer(log))
    return bool(told) and BOOTSTRAP_ANSWER.search(log, told[-1].end()) is not None


def record(run_dir: Path) -> dict:
    results = json.loads((run_dir / "results.json").read_text())
    history = load_history(run_dir / "history.jsonl")
    stuck = never_caught_up(history)
    consumers = {
        p.name.removesuffix(".client.log"): p.read_text(errors="replace")
        for p in (run_dir / "logs").glob("member-*.client.log")
    }
    delivery = results["checkers"]["delivery"]["counts"]
    return {
        "dir": run_dir.name,
        "verdict": results.get("verdict"),
        "partitions_never_read_to_the_end": [f"{r['topic']}-{r['partition']}" for r in stuck.iter_rows(named=True)],
        "stuck_members": owners(history, stuck),
        "members_logging_decommissioned": sorted(p for p, t in consumers.items() if MECHANISM in t),
        "members_left_in_query_coord": sorted(p for p, t in consumers.items() if left_querying(t)),
        "members_told_no_broker": sorted(p for p, t in consumers.items() if NO_BROKER.search(t)),
        "members_left_without_a_broker": sorted(p for p, t in consumers.items() if left_without_a_broker(t)),
        "members_back_to_bootstrap": sorted(p for p, t in consumers.items() if went_back_to_bootstrap(t)),
        "lost_not_in_log": delivery.get("lost-not-in-log", 0),
        "lost_in_log_not_consumed": delivery.get("lost-in-log-not-consumed", 0),
    }


def summary(records: list[dict]) -> dict:
    return {
        "runs": len(records),
        "runs_with_a_partition_never_read_to_the_end": sum(bool(r["stuck_members"]) for r in records),
        "runs_with_the_line": sum(bool(r["members_logging_decommissioned"]) for r in records),
        "stuck_members": sum(len(r["stuck_members"]) for r in records),
        "stuck_members_with_the_line": sum(
            len(set(r["stuck_members"]) & set(r["members_logging_decommissioned"])) for r in records
        ),
        "members_with_the_line_not_stuck": sum(
            len(set(r["members_logging_decommissioned"]) - set(r["stuck_members"])) for r in records
        ),
        "stuck_members_left_in_query_coord": sum(
            len(set(r["stuck_members"]) & set(r["members_left_in_query_coord"])) for r in records
        ),
        "members_left_in_query_coord_not_stuck": sum(
            len(set(r["members_left_in_query_coord"]) - set(r["stuck_members"])) for r in records
        ),
        "stuck_members_told_no_broker": sum(
            len(set(r["stuck_members"]) & set(r["members_told_no_broker"])) for r in records
        ),
        "members_told_no_broker_not_stuck": sum(
            len(set(r["members_told_no_broker"]) - set(r["stuck_members"])) for r in records
        ),
        "stuck_members_left_without_a_broker": sum(
            len(set(r["stuck_members"]) & set(r["members_left_without_a_broker"])) for r in records
        ),
        "members_left_without_a_broker_not_stuck": sum(
            len(set(r["members_left_without_a_broker"]) - set(r["stuck_members"])) for r in records
        ),
        "stuck_members_back_to_bootstrap": sum(
            len(set(r["stuck_members"]) & set(r["members_back_to_bootstrap"])) for r in records
        ),
        "members_back_to_bootstrap_not_stuck": sum(
            len(set(r["members_back_to_bootstrap"]) - set(r["stuck_members"])) for r in records
        ),
        "acknowledged_lost_not_in_log": sum(r["lost_not_in_log"] for r in records),
        "records": records,
    }


def main() -> None:
    annotate_stored(__doc__, "decommissioned_coordinator", record, summary)


if __name__ == "__main__":
    main()
