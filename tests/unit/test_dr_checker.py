"""The DR checker on hand-written histories across two clusters: a failover primary -> backup, and a failback.

Histories are built from frames directly (History(...)); times are milliseconds after T_BASE. The
default story: producer@primary writes v0..v3 (topic t, partition 0, offsets 0..3); the primary is
lost at 100 ms; MirrorMaker copied them to primary.t on the backup; the group g reads on the
primary, then on the backup; producer@backup writes w0 to the backup's own t.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.dr.failover import check
from failsafe.history.model import FRAME_SCHEMAS, History, empty_frame

T_BASE = 1_000_000_000_000
MS = 1_000_000


def at(ms: float) -> int:
    return T_BASE + int(ms * MS)


def history(sends=(), reads=(), log=(), faults=(), events=()) -> History:
    frames = {name: empty_frame(name) for name in FRAME_SCHEMAS}
    given_rows = {"sends": sends, "reads": reads, "log": log, "faults": faults, "events": events}
    for name, rows in given_rows.items():
        if rows:
            schema = FRAME_SCHEMAS[name]
            frames[name] = pl.DataFrame([{column: row.get(column) for column in schema} for row in rows], schema=schema)
    return History(**frames, op_count=0)


def send(
    process: str,
    send_id: int,
    value: str,
    offset: int | None,
    ms: float,
    *,
    partition: int = 0,
    topic: str = "t",
    outcome: str = "ok",
) -> dict:
    return {
        "id": send_id,
        "process": process,
        "topic": topic,
        "value": value,
        "partition": partition,
        "offset": offset,
        "outcome": outcome,
        "invoke_ns": at(ms),
        "complete_ns": at(ms + 1),
    }


def read(
    process: str, value: str, offset: int, ms: float, *, topic: str = "t", partition: int = 0, group: str | None = "g"
) -> dict:
    return {
        "process": process,
        "group": group,
        "time_ns": at(ms),
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "value": value,
    }


def logged(topic: str, values: list[str], partition: int = 0) -> list[dict]:
    return [
        {"topic": topic, "partition": partition, "offset": offset, "value": value}
        for offset, value in enumerate(values)
    ]


def loss(ms: float, target: str = "cluster") -> dict:
    return {"fault_id": 1, "fault": "cluster-loss", "target": target, "start_ns": at(ms), "ok": True}


def switch(ms: float) -> dict:
    return {"time_ns": at(ms), "process": "runner", "f": "dr-switch"}


SOURCE_SENDS = [send("producer@primary", i, f"v{i}", i, 10 * (i + 1)) for i in range(4)]
TARGET_SENDS = [send("producer@backup", 1, "w0", 0, 150)]
ON_PRIMARY = [read("member-0@primary", "v0", 0, 15), read("member-0@primary", "v1", 1, 25)]
ON_BACKUP = [read("member-0@backup", f"v{i}", i, 200 + i, topic="primary.t") for i in (1, 2, 3)] + [
    read("member-0@backup", "w0", 0, 210)
]
LOG = logged("primary.t", ["v0", "v1", "v2", "v3"]) + logged("t", ["w0"])


def failover(
    sends=SOURCE_SENDS + TARGET_SENDS, reads=ON_PRIMARY + ON_BACKUP, log=LOG, faults=None, events=()
) -> History:
    return history(sends, reads, log, [loss(100)] if faults is None else faults, events)


def test_a_clean_failover_is_valid_and_measured() -> None:
    r = check(failover())
    assert r["valid"] is True and r["violations"] == []
    assert (r["source"], r["target"], r["t0_ns"], r["t0_kind"]) == ("primary", "backup", at(100), "fault")
    assert r["counts"] == {
        "acknowledged-on-source": 4,
        "rpo-records": 0,
        "mirrored": 4,
        "mirror-duplicates": 0,
        "mirror-reordered": 0,
        "consumed-twice": 1,
        "consumed-twice-after-move": 1,
        "skipped": 0,
        "skipped-allowed": 0,
        "acknowledged-on-target": 1,
        "target-unread": 0,
        "target-unread-allowed": 0,
        "groups-not-caught-up": 0,
        "never-recovered": 0,
    }
    assert r["rpo_records"] == 0 and r["rpo_seconds"] == 0.0 and r["rpo_by_partition"] == []
    assert r["rto_first_read_s"] == pytest.approx(0.101)
    assert r["rto_caught_up_s"] == pytest.approx(0.103)  # primary.t's last offset, 3, read at 203 ms
    group = {
        "first_read_s": pytest.approx(0.101),
        "caught_up_s": pytest.approx(0.103),
        "consumed_twice": 1,
        "skipped": 0,
    }
    assert r["groups"] == {"g": group}
    twice = r["examples"]["consumed-twice-after-move"][0]
    assert (twice["group"], twice["value"], twice["reads"]) == ("g", "v1", 2)
    assert twice["processes"] == ["member-0@primary", "member-0@backup"] and twice["topics"] == ["t", "primary.t"]
    assert twice["times_ns"] == [at(25), at(201)]


def test_rpo_and_reads_twice_leave_it_valid() -> None:
    lost = [send("producer@primary", 10, "v4", 4, 50), send("producer@primary", 11, "x0", 0, 60, partition=1)]
    replayed = [read("member-0@backup", "v0", 0, 199, topic="primary.t")]  # read on the primary, again on the backup
    r = check(failover(sends=SOURCE_SENDS + lost + TARGET_SENDS, reads=ON_PRIMARY + replayed + ON_BACKUP))
    assert r["valid"] is True
    assert r["counts"]["acknowledged-on-source"] == 6
    assert r["counts"]["rpo-records"] == r["rpo_records"] == 2
    assert r["rpo_seconds"] == pytest.approx(0.049)  # T0 100 ms, the oldest write missing acknowledged at 51 ms
    assert r["rpo_by_partition"] == [
        {"topic": "t", "partition": 0, "records": 1, "seconds": pytest.approx(0.049)},
        {"topic": "t", "partition": 1, "records": 1, "seconds": pytest.approx(0.039)},
    ]
    assert [e["value"] for e in r["examples"]["rpo-records"]] == ["v4", "x0"]
    assert set(r["examples"]["rpo-records"][0]) == {
        "id",
        "process",
        "topic",
        "partition",
        "offset",
        "value",
        "complete_ns",
    }
    assert (r["counts"]["consumed-twice"], r["counts"]["consumed-twice-after-move"]) == (2, 2)
    assert r["groups"]["g"]["consumed_twice"] == 2
    assert r["rto_first_read_s"] == pytest.approx(0.099) and r["rto_caught_up_s"] == pytest.approx(0.103)


def test_a_value_read_twice_on_the_target_is_consumed_twice_but_not_after_the_move() -> None:
    again = [read("member-1@backup", "v3", 3, 220, topic="primary.t")]
    r = check(failover(reads=ON_PRIMARY + ON_BACKUP + again))
    assert r["valid"] is True
    assert (r["counts"]["consumed-twice"], r["counts"]["consumed-twice-after-move"]) == (2, 1)


def test_a_mirror_out_of_the_source_order_is_mirror_reordered() -> None:
    log = logged("primary.t", ["v0", "v2", "v1", "v3"]) + logged("t", ["w0"])
    r = check(failover(log=log))
    assert r["valid"] is False and r["violations"] == ["mirror-reordered"]
    assert r["counts"]["mirror-reordered"] == 1
    example = r["examples"]["mirror-reordered"][0]
    assert (
        example["topic"],
        example["offset"],
        example["value"],
        example["source_offset"],
        example["previous_source_offset"],
    ) == ("primary.t", 2, "v1", 1, 2)


def test_a_mirror_sending_again_is_duplicates_not_reordered() -> None:
    log = logged("primary.t", ["v0", "v1", "v2", "v1", "v2", "v3"]) + logged("t", ["w0"])
    copies = enumerate(["v1", "v2", "v1", "v2", "v3"], 1)
    reads = ON_PRIMARY + [read("member-0@backup", v, o, 200 + o, topic="primary.t") for o, v in copies]
    r = check(failover(log=log, reads=reads + [read("member-0@backup", "w0", 0, 210)]))
    assert r["valid"] is True
    assert (r["counts"]["mirror-duplicates"], r["counts"]["mirror-reordered"], r["counts"]["mirrored"]) == (2, 0, 4)
    assert r["examples"]["mirror-duplicates"][0] == {
        "topic": "primary.t",
        "partition": 0,
        "value": "v1",
        "offset": [1, 3],
    }
    assert r["rto_caught_up_s"] == pytest.approx(0.105)


def test_a_mirrored_write_the_group_never_read_is_skipped() -> None:
    # the group restarts on the backup past v2, which it had not read on the primary
    reads = ON_PRIMARY + [
        read("member-0@backup", "v3", 3, 200, topic="primary.t"),
        read("member-0@backup", "w0", 0, 210),
    ]
    r = check(failover(reads=reads))
    assert r["valid"] is False and r["violations"] == ["skipped"]
    assert r["counts"]["skipped"] == 1 and r["groups"]["g"]["skipped"] == 1
    assert r["examples"]["skipped"][0]["value"] == "v2" and r["examples"]["skipped"][0]["group"] == "g"


def test_a_skipped_write_counts_against_its_writer_and_only_an_acks_all_one_is_never_allowed() -> None:
    reads = ON_PRIMARY + [
        read("member-0@backup", "v3", 3, 200, topic="primary.t"),
        read("member-0@backup", "w0", 0, 210),
    ]
    declared = pl.DataFrame(
        [
            {
                "time_ns": 0,
                "process": "producer@primary",
                "role": "producer",
                "topics": ["t"],
                "group": None,
                "may_lose": True,
                "matches": r"producer(-s\d+)?@[^@]+",
            }
        ],
        schema=FRAME_SCHEMAS["declared"],
    )

    def clients(acks: str) -> pl.DataFrame:
        return pl.DataFrame(
            [
                {
                    "process": "producer@primary",
                    "time_ns": 0,
                    "client": "librdkafka",
                    "client_version": "2.12.0",
                    "config": [{"name": "acks", "value": acks}],
                    "log": None,
                }
            ],
            schema=FRAME_SCHEMAS["clients"],
        )

    lossy = check(replace(failover(reads=reads), declared=declared, clients=clients("1")))
    assert lossy["valid"] is True and lossy["counts"]["skipped"] == lossy["counts"]["skipped-allowed"] == 1
    r = check(replace(failover(reads=reads), declared=declared, clients=clients("all")))
    assert r["valid"] is False and r["violations"] == ["skipped"] and r["counts"]["skipped-allowed"] == 0
    with pytest.raises(CheckerOptionError):
        check(failover(reads=reads), {"lossy_writers": [".*"]})


def test_every_group_must_read_every_mirrored_write() -> None:
    other = [read("audit@primary", f"v{i}", i, 30 + i, group="audit") for i in range(3)]
    r = check(failover(reads=ON_PRIMARY + ON_BACKUP + other))
    assert r["valid"] is False and set(r["violations"]) == {"skipped", "groups-not-caught-up"}
    assert r["counts"]["skipped"] == 1 and r["groups"]["audit"]["skipped"] == 1 and r["groups"]["g"]["skipped"] == 0


def test_a_write_acknowledged_on_the_target_and_never_read_is_target_unread() -> None:
    r = check(failover(reads=ON_PRIMARY + ON_BACKUP[:-1]))
    assert r["valid"] is False and r["violations"] == ["target-unread"]
    assert r["counts"]["target-unread"] == 1 and r["examples"]["target-unread"][0]["value"] == "w0"


def test_a_group_that_never_reads_on_the_target_never_caught_up() -> None:
    read_all = [read("member-0@primary", f"v{i}", i, 15 + 10 * i) for i in range(4)]
    r = check(failover(sends=SOURCE_SENDS, reads=read_all))
    assert r["valid"] is False and r["violations"] == ["groups-not-caught-up"]
    assert r["counts"]["groups-not-caught-up"] == 1 and r["counts"]["skipped"] == 0
    assert r["rto_first_read_s"] is None and r["rto_caught_up_s"] is None
    assert r["groups"]["g"]["caught_up_s"] is None
    assert r["examples"]["groups-not-caught-up"] == [{"group": "g", "missing": []}]


def test_a_group_short_of_a_partitions_end_on_the_target_never_caught_up() -> None:
    # a second mirrored partition, primary.t 1: reached by reading its last value, y1, on either cluster
    log = LOG + logged("primary.t", ["y0", "y1"], partition=1)
    sends = (
        SOURCE_SENDS
        + TARGET_SENDS
        + [send("producer@primary", 20 + i, f"y{i}", i, 11 + i, partition=1) for i in (0, 1)]
    )
    reads = ON_PRIMARY + ON_BACKUP + [read("member-0@primary", f"y{i}", i, 13 + i, partition=1) for i in (0, 1)]
    assert (
        check(failover(sends=sends, log=log, reads=reads))["valid"] is True
    )  # y1, the end of partition 1, read on the primary
    reads = reads[:-1] + [read("member-0@backup", "y1", 1, 205, topic="primary.t", partition=1)]
    assert check(failover(sends=sends, log=log, reads=reads))["rto_caught_up_s"] == pytest.approx(0.105)
    log = log + [{"topic": "primary.t", "partition": 1, "offset": 2, "value": "y2"}]
    sends = sends + [send("producer@primary", 22, "y2", 2, 13, partition=1)]
    r = check(failover(sends=sends, log=log, reads=reads))
    assert r["valid"] is False and set(r["violations"]) == {"skipped", "groups-not-caught-up"}
    assert r["examples"]["groups-not-caught-up"] == [
        {"group": "g", "missing": [{"topic": "primary.t", "partition": 1, "end": 2}]}
    ]


def test_a_planned_move_is_timed_by_its_dr_switch() -> None:
    r = check(failover(faults=(), events=(switch(90),)))
    assert r["valid"] is True and (r["t0_ns"], r["t0_kind"]) == (at(90), "dr-switch")
    assert r["rto_first_read_s"] == pytest.approx(0.111)


def test_a_fault_naming_the_source_is_the_move_and_one_on_the_target_is_not() -> None:
    r = check(failover(faults=(loss(100, target="primary"),)))
    assert (r["t0_ns"], r["t0_kind"]) == (at(100), "fault")
    r = check(failover(faults=(loss(95, target="backup"),), events=(switch(100),)))
    assert (r["t0_ns"], r["t0_kind"]) == (at(100), "dr-switch")


def test_without_a_move_the_verdict_is_unknown() -> None:
    r = check(failover(faults=()))
    assert r["valid"] == "unknown" and r["counts"] == {} and r["violations"] == []
    assert r["t0_ns"] is None and "never moved" in r["reason"]


def test_without_a_mirror_or_source_writes_the_verdict_is_unknown() -> None:
    r = check(failover(log=logged("t", ["w0"])))
    assert r["valid"] == "unknown" and "mirrored" in r["reason"]
    r = check(failover(sends=[send("producer@primary", 0, "v0", None, 10, outcome="fail")] + TARGET_SENDS))
    assert r["valid"] == "unknown" and "acknowledged" in r["reason"]


def test_a_failback_is_checked_from_the_backup_to_the_primary() -> None:
    # failover at 100 ms (loss of the primary and a dr-switch), then the planned failback at 300 ms
    sends = SOURCE_SENDS + [send("producer@backup", i, f"w{i}", i, 150 + 10 * i) for i in range(3)]
    sends += [send("producer-s2@primary", 1, "x0", 4, 400)]
    reads = ON_PRIMARY + [read("member-0@backup", "w0", 0, 160), read("member-0@backup", "w1", 1, 170)]
    reads += [read("member-0-s2@primary", w, o, 410 + o, topic="backup.t") for o, w in ((1, "w1"), (2, "w2"))]
    reads += [read("member-0-s2@primary", "x0", 4, 420)]
    log = logged("t", ["v0", "v1", "v2", "v3", "x0"]) + logged("backup.t", ["w0", "w1", "w2"])
    h = history(sends, reads, log, faults=[loss(100)], events=[switch(100), switch(300)])
    r = check(h, {"clusters": ["backup", "primary"]})
    assert r["valid"] is True
    assert (r["source"], r["target"], r["t0_ns"], r["t0_kind"]) == ("backup", "primary", at(300), "dr-switch")
    counts = r["counts"]
    assert (
        counts["acknowledged-on-source"],
        counts["rpo-records"],
        counts["mirrored"],
        counts["acknowledged-on-target"],
    ) == (3, 0, 3, 1)
    assert (counts["consumed-twice"], counts["consumed-twice-after-move"], counts["skipped"]) == (1, 1, 0)
    assert r["rto_first_read_s"] == pytest.approx(0.111) and r["rto_caught_up_s"] == pytest.approx(0.112)
    # the same history judged as the failover: the primary's mirror is not in this log
    assert check(h)["valid"] == "unknown"


def test_the_clusters_option_is_read_strictly() -> None:
    with pytest.raises(CheckerOptionError):
        check(failover(), {"clusters": ["primary"]})
    with pytest.raises(CheckerOptionError):
        check(failover(), {"clusters": ["primary", "primary"]})
    with pytest.raises(CheckerOptionError):
        check(failover(), {"cluster": ["primary", "backup"]})
    assert check(failover(), {"clusters": None})["valid"] is True


@settings(max_examples=40, deadline=None)
@given(mirrored=st.lists(st.booleans(), min_size=1, max_size=12).filter(any))
def test_rpo_is_the_acknowledged_writes_the_mirror_lacks(mirrored: list[bool]) -> None:
    sends = [send("producer@primary", i, f"v{i}", i, 10 + i) for i in range(len(mirrored))]
    kept = [f"v{i}" for i, there in enumerate(mirrored) if there]
    reads = [read("member-0@backup", v, o, 200 + o, topic="primary.t") for o, v in enumerate(kept)]
    r = check(history(sends, reads, logged("primary.t", kept), [loss(100)]))
    lost = [i for i, there in enumerate(mirrored) if not there]
    assert r["valid"] is True and r["counts"]["rpo-records"] == len(lost) and r["counts"]["mirrored"] == len(kept)
    assert r["rpo_seconds"] == pytest.approx((100 - (11 + lost[0])) / 1000 if lost else 0.0)
    assert r["rto_caught_up_s"] == pytest.approx((100 + len(kept) - 1) / 1000)
