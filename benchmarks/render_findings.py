"""The tables of the findings in docs/findings.md and docs/failover.md (render_docs.py renders and checks them)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import (
    RAW,
    RenderError,
    command_of,
    dr_ms,
    dr_records,
    load,
    num,
    secs,
    source,
    spread_ms,
    table,
)

FINDINGS_ANOMALIES = (
    "delivery.duplicate-acknowledged",
    "delivery.duplicate-unacknowledged",
    "delivery.lost",
    "order.nonmonotonic-send",
)
FINDINGS_DUPLICATES = (
    ("leader-pause-timeout-librdkafka", ""),
    ("leader-pause-timeout-librdkafka-max-in-flight-1", ""),
    ("leader-pause-timeout-java", ""),
    ("two-brokers-down-librdkafka", ""),
    ("two-brokers-down-librdkafka-max-in-flight-1", ""),
    ("two-brokers-down-java", ""),
    ("broker-restart-librdkafka", ""),
    ("broker-restart-librdkafka-max-in-flight-1", ""),
    ("broker-restart-java", ""),
    ("two-brokers-down-librdkafka-loaded", " (both cores kept busy by two spinning processes)"),
)


def _anomaly(stats: dict, name: str) -> str:
    entry = stats["anomalies"].get(name)
    return "0" if entry is None else f"{entry['runs']} ({num(entry['total'])})"


def t_findings_duplicates(root: Path) -> str:
    rows, rels = [], []
    for label, what in FINDINGS_DUPLICATES:
        rel = f"docs/findings/{label}.json"
        stats = load(root, rel)
        rels.append(rel)
        rows.append([label + what, str(stats["runs"]), *(_anomaly(stats, a) for a in FINDINGS_ANOMALIES)])
    header = ["configuration", "runs", *(f"runs with {a} (count)" for a in FINDINGS_ANOMALIES)]
    commands = sorted({command_of(root, rel) for rel in rels}, key=lambda c: [r.command for r in RAW].index(c))
    return (
        table(header, rows)
        + "\n\nRendered from `docs/findings/LABEL.json` (LABEL: the first column); made by "
        + "; ".join(f"`{c}`" for c in commands)
        + "."
    )


FINDINGS_STALLS = (
    ("stall-rf3-acks-all-librdkafka", "RF 3, acks=all, librdkafka", "— (none: RF 3 on 3 brokers)"),
    ("stall-rf3-acks-all-java", "RF 3, acks=all, Java producer", "—"),
    ("stall-rf3-acks-1-librdkafka", "RF 3, acks=1, librdkafka", "—"),
    ("stall-rf2-acks-all-librdkafka", "RF 2, `min.insync.replicas` 1, acks=all, librdkafka", None),
    ("stall-rf2-acks-all-java", "RF 2, `min.insync.replicas` 1, acks=all, Java producer", None),
)


def t_findings_stalls(root: Path) -> str:
    rows = []
    for label, what, unreplicated in FINDINGS_STALLS:
        stats = load(root, f"docs/findings/{label}.json")
        times = stats["times"]
        rows.append(
            [
                f"{what} (`{label}`)",
                str(stats["runs"]),
                spread_ms(times["availability.stall_by_group.led"]),
                spread_ms(times["availability.stall_by_group.follower"]),
                unreplicated
                if unreplicated is not None
                else spread_ms(times["availability.stall_by_group.unreplicated"]),
            ]
        )
    header = [
        "settings (broker-failover: kill -9 the leader of partition 0, 13 partitions, 200 writes/s)",
        "runs",
        "`led` max stall ms, median (range, n)",
        "`follower` max stall ms",
        "`unreplicated` max stall ms",
    ]
    rel = f"docs/findings/{FINDINGS_STALLS[0][0]}.json"
    return table(header, rows) + f"\n\nRendered from `docs/findings/LABEL.json`; made by `{command_of(root, rel)}`."


FINDINGS_STALLS_OTHER = ("broker-restart-librdkafka", "two-brokers-down-librdkafka", "leader-pause-timeout-librdkafka")


def t_findings_stalls_other(root: Path) -> str:
    rows = []
    for label in FINDINGS_STALLS_OTHER:
        stats = load(root, f"docs/findings/{label}.json")
        times = stats["times"]
        rows.append(
            [
                f"`{label}`",
                str(stats["runs"]),
                secs(times["availability.stall_by_group.led"]["median"]),
                secs(times["availability.stall_by_group.follower"]["median"]),
            ]
        )
    header = ["configuration", "runs", "`led` max stall, median", "`follower` max stall, median"]
    return table(header, rows) + "\n\nRendered from `docs/findings/LABEL.json` (section 1's runs)."


FINDINGS_ZOOKEEPER = (
    ("two-brokers-down-zookeeper-librdkafka", "ZooKeeper (3.9.2), librdkafka"),
    ("two-brokers-down-zookeeper-java", "ZooKeeper (3.9.2), Java producer"),
    ("two-brokers-down-kraft-chaos32-librdkafka", "KRaft (4.3.1), librdkafka, chaos 32 s"),
)


def t_findings_zookeeper(root: Path) -> str:
    rows, rels = [], []
    for label, what in FINDINGS_ZOOKEEPER:
        rel = f"docs/findings/{label}.json"
        stats = load(root, rel)
        rels.append(rel)
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(stats["verdicts"].items()))
        rows.append(
            [
                f"{what} (`{label}`)",
                str(stats["runs"]),
                verdicts,
                _anomaly(stats, "delivery.duplicate-acknowledged"),
                _anomaly(stats, "delivery.duplicate-unacknowledged"),
                _anomaly(stats, "delivery.lost"),
                secs(stats["times"]["availability.stall_by_group.follower"]["median"]),
            ]
        )
    header = [
        "configuration",
        "runs",
        "verdicts",
        "runs with delivery.duplicate-acknowledged (values)",
        "runs with delivery.duplicate-unacknowledged (values)",
        "runs with delivery.lost",
        "longest stall of a partition the dead brokers only followed (median)",
    ]
    commands = []
    for rel in rels:
        if command_of(root, rel) not in commands:
            commands.append(command_of(root, rel))
    return (
        table(header, rows)
        + "\n\nRendered from `docs/findings/LABEL.json`; made by "
        + "; ".join(f"`{c}`" for c in commands)
        + "."
    )


WHERE_REL = "docs/findings/leader-pause-timeout-duplicates-where.json"


def t_findings_where(root: Path) -> str:
    d = load(root, WHERE_REL)
    gaps = d["offsets_between_first_and_last_copy"]
    rows = [
        [
            str(d["runs"]),
            num(d["values_written_more_than_once"]),
            num(d["sent_during_a_broker_fault"]),
            f"{num(d['acknowledged_at_the_later_copy'])} of {num(d['acknowledged'])}",
            "—" if gaps is None else f"{num(gaps['min'])} / {num(gaps['median'])} / {num(gaps['max'])}",
        ]
    ]
    header = [
        "leader-pause-timeout runs (librdkafka)",
        "values written more than once",
        "of them sent while the broker was frozen",
        "acknowledged at the later copy",
        "offsets between the first and last copy: min / median / max",
    ]
    return table(header, rows) + source(root, WHERE_REL)


DR_FLUSH = (
    ("docs/benchmarks/dr-failback-flush-60s.json", "60000 (Connect's default)"),
    ("docs/benchmarks/dr-failback.json", "1000 (the catalog's)"),
)


def t_findings_dr_flush(root: Path) -> str:
    rows = []
    for rel, flush in DR_FLUSH:
        d = load(root, rel)
        t = d["times"]
        rows.append(
            [
                flush,
                str(d["runs"]),
                ", ".join(f"{n} {v}" for v, n in sorted(d["verdicts"].items())),
                dr_records(t.get("dr.consumed-twice (records)"), d["runs"]),
                dr_records(t.get("dr.rpo-records (records)"), d["runs"]),
                dr_ms(t["dr.rto_first_read_ms"]),
                dr_ms(t["dr.rto_caught_up_ms"]),
            ]
        )
    header = [
        "Connect's `offset.flush.interval.ms`",
        "dr-failback runs (3+3 brokers)",
        "verdicts",
        "records read twice after the move",
        "records lost (RPO)",
        "RTO, first read on the primary",
        "RTO, group caught up",
    ]
    return table(header, rows) + source(root, *(rel for rel, _ in DR_FLUSH))


COLD_COORDINATOR = (
    (
        "docs/findings/cold-coordinator-librdkafka.json",
        "a fresh cluster for each run (cold group coordinator)",
        "4.3.1",
    ),
    ("docs/findings/warm-coordinator-librdkafka.json", "one cluster, after a first run not counted (warm)", "4.3.1"),
    (
        "docs/findings/cold-coordinator-librdkafka-kafka-3.9.2.json",
        "a fresh cluster for each run (cold group coordinator)",
        "3.9.2",
    ),
)


DECOMMISSIONED = (
    (
        "docs/findings/brokers-cut-from-controllers-librdkafka.json",
        "librdkafka 2.16.0",
        "20 s (brokers fenced after 9 s)",
    ),
    (
        "docs/findings/brokers-cut-from-controllers-java.json",
        "Kafka's Java consumer 4.3.1",
        "20 s (brokers fenced after 9 s)",
    ),
    ("docs/findings/brokers-cut-from-controllers-5s-librdkafka.json", "librdkafka 2.16.0", "5 s (no broker fenced)"),
)


def t_findings_decommissioned(root: Path) -> str:
    rows = []
    for rel, client, split in DECOMMISSIONED:
        d = load(root, rel)["decommissioned_coordinator"]
        librdkafka = client.startswith("librdkafka")
        rows.append(
            [
                client,
                split,
                str(d["runs"]),
                str(d["runs_with_a_partition_never_read_to_the_end"]),
                f"{d['stuck_members_left_in_query_coord']} of {d['stuck_members']}" if librdkafka else "—",
                str(d["members_left_in_query_coord_not_stuck"]) if librdkafka else "—",
                str(d["runs_with_the_line"]) if librdkafka else "—",
                num(d["acknowledged_lost_not_in_log"]),
            ]
        )
    header = [
        "group members",
        "brokers cut from the controllers for",
        "runs",
        "runs with a partition the group never read to the end",
        "stuck members still looking for a coordinator at close",
        "members left looking that read to the end all the same",
        'runs with "Group coordinator decommissioned"',
        "acknowledged writes not in the log",
    ]
    return table(header, rows) + source(root, *(rel for rel, _, _ in DECOMMISSIONED))


NO_BROKER_REL = "docs/findings/brokers-cut-from-controllers-librdkafka-debug-metadata.json"


def t_findings_no_broker(root: Path) -> str:
    d = load(root, NO_BROKER_REL)["decommissioned_coordinator"]
    rows = [
        [
            str(d["runs"]),
            str(d["runs_with_a_partition_never_read_to_the_end"]),
            f"{d['stuck_members_told_no_broker']} of {d['stuck_members']}",
            str(d["members_told_no_broker_not_stuck"]),
            f"{d['stuck_members_left_without_a_broker']} of {d['stuck_members']}",
            str(d["members_left_without_a_broker_not_stuck"]),
            f"{d['members_back_to_bootstrap_not_stuck']} of {d['members_told_no_broker_not_stuck']}",
            f"{d['stuck_members_back_to_bootstrap']} of {d['stuck_members_told_no_broker']}",
        ]
    ]
    header = [
        "librdkafka runs with debug=cgrp,metadata,broker (20 s split)",
        "runs with a partition never read to the end",
        "stuck members handed a Metadata response with 0 brokers",
        "members handed one that read to the end",
        "stuck members with no usable broker when they closed",
        "members that read to the end with none",
        "members handed one that read on and then got metadata from a bootstrap server",
        "stuck members that did",
    ]
    return table(header, rows) + source(root, NO_BROKER_REL)


def t_findings_cold(root: Path) -> str:
    rows = []
    for rel, how, version in COLD_COORDINATOR:
        c = load(root, rel)["cold_coordinator"]
        if c["kafka_version"] != version:
            raise RenderError(f"{rel}: Kafka {c['kafka_version']}, expected {version}")
        rows.append(
            [
                how,
                f"Kafka {version} (KRaft, 3 controllers)",
                str(c["runs"]),
                str(c["runs_with_a_reader_never_caught_up"]),
                str(c["runs_with_the_request_level_error"]),
                f"{c['stuck_readers_with_the_error']} of {c['stuck_readers']}",
                str(c["readers_with_the_error_not_stuck"]),
            ]
        )
    header = [
        "cluster",
        "Kafka",
        "runs",
        "runs with a reader that never caught up",
        "runs whose client logs have the request-level NOT_COORDINATOR",
        "stuck readers whose log has it",
        "readers with it that read on",
    ]
    return table(header, rows) + source(root, *(rel for rel, _, _ in COLD_COORDINATOR))


TXN_HANG = "docs/findings/txn-hang-*.json"
HANG_TARGETS = {"txn": "ctp-0's transaction coordinator", "group": "the processor group's coordinator"}
HANG_FAULTS = {"kill": "killed", "pause": "paused (SIGSTOP)"}


def _hang_row(label: str, d: dict) -> list[str]:
    return [
        label,
        d.get("driver", "librdkafka"),
        str(d["transaction_version"]),
        str(d["runs"]),
        ", ".join(f"{v} {n}" for v, n in sorted(d["verdicts"].items())),
        str(d["runs_with_the_processor_hung"]),
        "; ".join(f"`{w}` ({n})" for w, n in d["where"].items()) or "—",
        str(d["runs_with_another_process_hung"]),
        # The Java client's log names its coordinator in other words: not read.
        str(d["runs_restarting_the_processors_txn_coordinator"])
        if d.get("driver", "librdkafka") == "librdkafka"
        else "—",
        str(d["runs_where_the_processors_group_timed_out_on_that_broker"])
        if d.get("driver", "librdkafka") == "librdkafka"
        else "—",
        str(d.get("runs_with_the_processor_told_fenced", "—")),
        ", ".join(
            f"{began:g}" + (" r" if rebalanced else "")
            for began, rebalanced in sorted(d.get("hung_txn_began_s", []), key=lambda b: b[0] or 0)
        )
        or "—",
    ]


def _hang_total(batches: list[dict]) -> dict:
    """The batches of one schedule summed (verdicts, hung runs and where they hung)."""
    total = {
        **batches[0],
        "runs": 0,
        "verdicts": {},
        "where": {},
        "runs_with_the_processor_hung": 0,
        "runs_with_another_process_hung": 0,
        "runs_restarting_the_processors_txn_coordinator": 0,
    }
    for d in batches:
        for key in (
            "runs",
            "runs_with_the_processor_hung",
            "runs_with_another_process_hung",
            "runs_restarting_the_processors_txn_coordinator",
            "runs_where_the_processors_group_timed_out_on_that_broker",
            "runs_with_the_processor_told_fenced",
        ):
            total[key] += d[key]
        for field in ("verdicts", "where"):
            for name, n in d[field].items():
                total[field][name] = total[field].get(name, 0) + n
    total["hung_txn_began_s"] = [b for d in batches for b in d.get("hung_txn_began_s", [])]
    return total


def t_findings_txn_hang(root: Path) -> str:
    rels = sorted(
        (str(p.relative_to(root)) for p in root.glob(TXN_HANG)),
        key=lambda r: (
            "-pause-" in r,
            "-kill-" in r,
            "-4s-" in r,
            "-5s-" in r,
            "kafka-java" in r,
            "tv2" in r,
            "group" in r,
            r,
        ),
    )
    if not rels:
        raise RenderError(f"no {TXN_HANG}: run bash benchmarks/findings.sh txn-hang (docs/benchmarks.md, Raw data)")
    # Files of one schedule (its batches, -batchN) side by side, then their sum.
    schedules: dict[tuple, list[tuple[str, dict]]] = {}
    for rel in rels:
        d = load(root, rel)["txn_hang"]
        schedules.setdefault(
            (d["target"], d["fault"], d.get("duration_s"), d["transaction_version"], d.get("driver", "librdkafka")), []
        ).append((rel, d))
    rows = []
    for (target, fault, duration_s, _, _), files in schedules.items():
        how = f"{HANG_TARGETS[target]}, " + (
            "restarted" if fault == "restart" else f"{HANG_FAULTS[fault]} for {duration_s:g} s"
        )
        if len(files) == 1:
            rows.append(_hang_row(how, files[0][1]))
            continue
        for n, (_, d) in enumerate(files, 1):
            day = d["records"][0]["dir"][:8] if d["records"] else "?"
            rows.append(_hang_row(f"{how}: batch {n} ({day[:4]}-{day[4:6]}-{day[6:]})", d))
        rows.append(_hang_row(f"**{how}: all {len(files)} batches**", _hang_total([d for _, d in files])))
    header = [
        "broker (5 s into the chaos phase)",
        "writers' and processor's client",
        "transaction.version",
        "runs",
        "verdicts",
        "runs where ctp-0 hung (ignored SIGTERM)",
        "where its main thread was (runs)",
        "runs where another process did",
        "runs where ctp-0's log named that broker its transaction coordinator at some point",
        "runs where ctp-0's log shows its group's session timing out on that broker, its group coordinator (a "
        "blocked ctp-0 logs nothing more)",
        "runs where ctp-0 was told it was fenced (no other ctp-0 ran)",
        "when ctp-0 began the transaction it hung in, s after the fault began (r: after its group gave it "
        "partitions again)",
    ]
    return table(header, rows) + source(root, *rels)


# findings.sh txn-fence: label, client, pause, transaction.timeout.ms (all at transaction.version 2).
TXN_FENCE = (
    ("txn-pause-15s-librdkafka", "librdkafka", "15 s", "10 s"),
    ("txn-pause-5s-librdkafka", "librdkafka", "5 s", "10 s"),
    ("txn-pause-15s-timeout-60s-librdkafka", "librdkafka", "15 s", "60 s"),
    ("txn-pause-15s-java", "kafka-java", "15 s", "10 s"),
    ("txn-pause-5s-java", "kafka-java", "5 s", "10 s"),
    ("txn-pause-15s-timeout-60s-java", "kafka-java", "15 s", "60 s"),
)


def t_findings_txn_fence(root: Path) -> str:
    rows, rels = [], []
    for label, client, pause, timeout in TXN_FENCE:
        rel = f"docs/findings/{label}.json"
        d = load(root, rel)["txn_fence"]
        rels.append(rel)
        wait = d["first_new_commit_ms_median"]
        rows.append(
            [
                f"`{label}`",
                client,
                pause,
                timeout,
                str(d["runs"]),
                ", ".join(f"{v} {n}" for v, n in sorted(d["verdicts"].items())),
                str(d["runs_told_fenced"]),
                str(d["runs_told_invalid_epoch"]),
                str(d["runs_where_writer_stopped"]),
                f"{d['runs_committing_again']}" + ("" if wait is None else f" (median {secs(wait)} to a new one)"),
                str(d["unknown_outcomes"]),
                "; ".join(f"`{e}` {n}" for e, n in d["errors"].items()) or "—",
            ]
        )
    header = [
        "configuration",
        "writer-0's client",
        "coordinator frozen for",
        "transaction.timeout.ms",
        "runs",
        "verdicts",
        "runs where writer-0 was told it was fenced",
        "runs told INVALID_PRODUCER_EPOCH",
        "runs where writer-0 stopped",
        "runs where it committed a new transaction after the pause was in force (median time)",
        "transactions of unknown outcome",
        "errors its transactions ended with (count)",
    ]
    return table(header, rows) + source(root, *rels)
