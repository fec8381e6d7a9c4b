"""A large synthetic history shaped like a real run, for benchmarks/bench_check.py.

Producers sending (invoke + ok, a few unknown outcomes while a broker is down), one consumer group of
three members polling batches of records, topology samples every 250 ms, a broker kill of the leader
of partition 0 with its leadership change, a log read of every partition at the end, phase markers.
Lines are built with polars string expressions, so 10 million ops take seconds, not minutes.
"""

from __future__ import annotations

import json

import polars as pl

TOPIC = "failsafe"
PARTITIONS = 6
BROKERS = [0, 1, 2]
PRODUCERS = 3
CONSUMERS = 3
GROUP = "failsafe-group"
SEND_INTERVAL_NS = 100_000  # 10k sends/s across all producers
ACK_LATENCY_NS = 2_000_000
READ_LATENCY_NS = 20_000_000
SAMPLE_INTERVAL_NS = 250_000_000
FAULT_DURATION_NS = 10_000_000_000
ELECTION_NS = 8_000_000_000  # broker.session.timeout.ms after the kill, as measured in docs/benchmarks.md
RECORDS_PER_POLL = 8
T0_NS = 1_767_225_600_000_000_000


def fmt(template: str, *values: str | pl.Expr) -> pl.Expr:
    """template with each %s replaced by a column (or expression), one string per row."""
    pieces = template.split("%s")
    assert len(pieces) == len(values) + 1, template
    parts: list[pl.Expr] = [pl.lit(pieces[0])]
    for value, piece in zip(values, pieces[1:], strict=True):
        parts += [(pl.col(value) if isinstance(value, str) else value).cast(pl.String), pl.lit(piece)]
    return pl.concat_str(parts)


def leader_of(partition: pl.Expr) -> pl.Expr:
    return partition % len(BROKERS)


def history_lines(ops: int) -> tuple[pl.Series, dict]:
    """The lines of a history of about `ops` ops, in the order a run would append them, and what they hold."""
    # sends are 2 ops each, polls one per RECORDS_PER_POLL records
    n_sends = int(ops / (2 + 1 / RECORDS_PER_POLL))
    fault_start_ns = T0_NS + n_sends // 2 * SEND_INTERVAL_NS
    fault_stop_ns = fault_start_ns + FAULT_DURATION_NS
    election_ns = fault_start_ns + ELECTION_NS
    killed = 0  # leads partitions 0 and 3

    sends = pl.DataFrame({"id": pl.int_range(0, n_sends, eager=True)}).with_columns(
        (pl.lit("producer-") + (pl.col("id") % PRODUCERS).cast(pl.String)).alias("process"),
        (pl.col("id") % PARTITIONS).alias("partition"),
        (pl.lit("k") + (pl.col("id") % 1000).cast(pl.String)).alias("key"),
        (pl.lit("v") + pl.col("id").cast(pl.String)).alias("value"),
        (T0_NS + pl.col("id") * SEND_INTERVAL_NS).alias("invoke_ns"),
    )
    stalled = (
        (leader_of(pl.col("partition")) == killed)
        & (pl.col("invoke_ns") >= fault_start_ns - ACK_LATENCY_NS)
        & (pl.col("invoke_ns") < election_ns)
    )
    sends = sends.with_columns(
        # acknowledged in invoke order once the new leader is elected
        pl.when(stalled)
        .then(pl.lit(election_ns) + (pl.col("invoke_ns") - fault_start_ns + ACK_LATENCY_NS) // 10_000)
        .otherwise(pl.col("invoke_ns") + ACK_LATENCY_NS)
        .alias("complete_ns"),
        # a few sends stalled by the kill time out: outcome unknown, and not in the log
        (stalled & (pl.col("id") % 97 == 0)).alias("timed_out"),
    )
    # offsets in the order the partition's leader appended them: the order of acknowledgement
    acked = sends.filter(~pl.col("timed_out")).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over("partition", order_by=["complete_ns", "id"]).alias("offset")
    )
    timed_out = sends.filter(pl.col("timed_out"))

    head = '{"time_ns":%s,"process":"%s","type":"%s","f":"send","id":%s,"topic":"' + TOPIC + '","key":"%s","value":"%s"'
    invokes = sends.select(
        pl.col("invoke_ns").alias("t"),
        fmt(head + "}", "invoke_ns", "process", pl.lit("invoke"), "id", "key", "value").alias("line"),
    )
    oks = acked.select(
        pl.col("complete_ns").alias("t"),
        fmt(
            head + ',"partition":%s,"offset":%s}',
            "complete_ns",
            "process",
            pl.lit("ok"),
            "id",
            "key",
            "value",
            "partition",
            "offset",
        ).alias("line"),
    )
    infos = timed_out.select(
        pl.col("complete_ns").alias("t"),
        fmt(
            head + ',"partition":%s,"error":"_MSG_TIMED_OUT"}',
            "complete_ns",
            "process",
            pl.lit("info"),
            "id",
            "key",
            "value",
            "partition",
        ).alias("line"),
    )

    records = acked.select(
        "partition",
        "offset",
        "complete_ns",
        fmt(
            '{"topic":"' + TOPIC + '","partition":%s,"offset":%s,"key":"%s","value":"%s"}',
            "partition",
            "offset",
            "key",
            "value",
        ).alias("record"),
    )
    records = records.sort("partition", "offset").with_columns(
        (pl.col("offset") // RECORDS_PER_POLL).alias("batch"),
        (pl.lit("consumer-") + (pl.col("partition") % CONSUMERS).cast(pl.String)).alias("process"),
    )
    polls = records.group_by("process", "partition", "batch", maintain_order=True).agg(
        (pl.col("complete_ns").max() + READ_LATENCY_NS).alias("t"), pl.col("record").str.join(",").alias("records")
    )
    poll_lines = polls.select(
        "t",
        fmt(
            '{"time_ns":%s,"process":"%s","type":"ok","f":"poll","group":"' + GROUP + '","records":[%s]}',
            "t",
            "process",
            "records",
        ).alias("line"),
    )
    end_ns = int(poll_lines["t"].max()) + 1_000_000_000
    log_lines = records.group_by("partition").agg(pl.col("record").str.join(",").alias("records"))
    log_lines = log_lines.select(
        pl.lit(end_ns).alias("t"),
        fmt(
            '{"time_ns":%s,"process":"log-reader","type":"ok","f":"log-read","records":[%s]}', pl.lit(end_ns), "records"
        ).alias("line"),
    )

    samples = pl.DataFrame({"t": pl.int_range(T0_NS, end_ns, SAMPLE_INTERVAL_NS, eager=True)})
    partition_json = []
    for partition in range(PARTITIONS):
        leader = partition % len(BROKERS)
        replicas = [leader, *(b for b in BROKERS if b != leader)]
        moved = replicas[1]
        partition_json.append((partition, leader, replicas, moved))

    def sample_expr() -> pl.Expr:
        parts = []
        for partition, leader, replicas, moved in partition_json:
            down = (pl.col("t") >= election_ns) & (pl.col("t") < fault_stop_ns)
            led_by_killed = leader == killed
            now_leader = (
                pl.when(down & led_by_killed).then(pl.lit(moved)).otherwise(pl.lit(leader))
                if led_by_killed
                else pl.lit(leader)
            )
            isr_down = json.dumps([b for b in replicas if b != killed])
            isr = pl.when(down).then(pl.lit(isr_down)).otherwise(pl.lit(json.dumps(replicas)))
            parts.append(
                fmt(
                    '{"topic":"'
                    + TOPIC
                    + '","partition":'
                    + str(partition)
                    + ',"leader":%s,"replicas":'
                    + json.dumps(replicas)
                    + ',"isr":%s}',
                    now_leader,
                    isr,
                )
            )
        return pl.concat_str(parts, separator=",")

    topology_lines = samples.select(
        "t",
        fmt(
            '{"time_ns":%s,"process":"topology","type":"info","f":"topology","partitions":[%s],"brokers":[0,1,2],"controller":3}',
            "t",
            sample_expr(),
        ).alias("line"),
    )
    extra = [
        (T0_NS - 2_000_000_000, {"process": "runner", "type": "info", "f": "phase", "phase": "warm-up"}),
        (
            T0_NS - 1_000_000_000,
            {
                "process": "consumer-0",
                "type": "info",
                "f": "assign",
                "group": GROUP,
                "partitions": [{"topic": TOPIC, "partition": 0}, {"topic": TOPIC, "partition": 3}],
            },
        ),
        (
            T0_NS - 1_000_000_000,
            {
                "process": "consumer-1",
                "type": "info",
                "f": "assign",
                "group": GROUP,
                "partitions": [{"topic": TOPIC, "partition": 1}, {"topic": TOPIC, "partition": 4}],
            },
        ),
        (
            T0_NS - 1_000_000_000,
            {
                "process": "consumer-2",
                "type": "info",
                "f": "assign",
                "group": GROUP,
                "partitions": [{"topic": TOPIC, "partition": 2}, {"topic": TOPIC, "partition": 5}],
            },
        ),
        (fault_start_ns - 1, {"process": "runner", "type": "info", "f": "phase", "phase": "chaos"}),
        (
            fault_start_ns,
            {
                "process": "nemesis",
                "type": "info",
                "f": "fault-start",
                "fault_id": 1,
                "fault": "kill",
                "target": "broker",
                "nodes": [killed],
                "role": f"leader of {TOPIC}-0",
            },
        ),
        (fault_stop_ns, {"process": "nemesis", "type": "info", "f": "fault-stop", "fault_id": 1, "ok": True}),
        (end_ns - 1, {"process": "runner", "type": "info", "f": "phase", "phase": "check"}),
    ]
    extra_lines = pl.DataFrame(
        {"t": [t for t, _ in extra], "line": [json.dumps({"time_ns": t, **op}) for t, op in extra]}
    )

    lines = pl.concat([invokes, oks, infos, poll_lines, log_lines, topology_lines, extra_lines]).sort(
        "t", maintain_order=True
    )
    sizes = {
        "ops": lines.height,
        "sends": n_sends,
        "records_read": records.height,
        "polls": poll_lines.height,
        "topology_samples": topology_lines.height,
        "file_mb": round((lines["line"].str.len_bytes().sum() + lines.height) / 2**20, 1),
    }
    return lines["line"], sizes
