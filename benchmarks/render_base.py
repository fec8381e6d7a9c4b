"""What every rendered table stands on: the raw files, the commands that make them, loading and formatting.

render_docs.py renders and checks the docs and holds the registry of tables; the tables live in it (the summary, the raw
files) and by topic in render_harness.py, render_failover.py, render_pipeline.py, render_findings.py, render_network.py,
render_campaigns.py, render_transactions.py, render_rebalance.py and render_atlas.py. Reads only JSON: no cluster, no
import of failsafe."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

RAW_DIRS = ("docs/benchmarks", "docs/findings")
PY = ".venv/bin/python"
BENCH_DIR = "/tmp/failsafe-bench-cluster"


class RenderError(Exception):
    """A raw file is missing or does not hold what its table reads."""


# -- the raw files and the commands that make them ----------------------------------------------


@dataclass(frozen=True)
class Raw:
    patterns: tuple[str, ...] | str  # globs under the repository root
    command: str  # what makes the file(s), as run from the repository root
    make_bench: bool
    note: str = ""

    @property
    def globs(self) -> tuple[str, ...]:
        return (self.patterns,) if isinstance(self.patterns, str) else self.patterns


def rounds(n: int) -> str:
    """bench_publish_modes.py's --scenarios for n rounds, each running the five faults once."""
    return ",".join(
        [
            "pipeline-restart:1,pipeline-executor-loss:1,pipeline-txn-coordinator-kill:1,"
            "pipeline-output-leader-isolated:1,pipeline-broker-failover:1"
        ]
        * n
    )


RAW: tuple[Raw, ...] = (
    Raw(
        "docs/benchmarks/proxy.json",
        f"{PY} benchmarks/bench_proxy.py --dir /tmp/bench-proxy --records 300000 --rounds 4 --out "
        "docs/benchmarks/proxy.json",
        False,
        "producer-perf-test through the protocol proxies and around them, alternating on one cluster",
    ),
    Raw(
        "docs/benchmarks/protocol-runs.json",
        f"{PY} benchmarks/protocol_runs.py --dir /tmp/bench-proxy --runs 3 --out docs/benchmarks/protocol-runs.json",
        False,
        "the protocol-fault scenarios, 3 runs each",
    ),
    Raw(
        "docs/benchmarks/txn-gap.json",
        f"{PY} benchmarks/txn_gap.py --dir /tmp/bench-gap --runs 10 --out docs/benchmarks/txn-gap.json",
        False,
        "the transaction gap: txn-commit-gap per client and transaction.version, 10 runs each",
    ),
    Raw(
        "docs/benchmarks/security.json",
        f"{PY} benchmarks/bench_security.py --dir /tmp/failsafe-bench-security --rounds 4 --records 300000 --out "
        "docs/benchmarks/security.json",
        False,
        "failsafe up and producer-perf-test per security mode; broker-failover secured and plaintext, alternately",
    ),
    Raw(
        "docs/benchmarks/security-runs.json",
        f"{PY} benchmarks/security_runs.py --dir /tmp/bench-security-runs --runs 3 "
        "--out docs/benchmarks/security-runs.json",
        False,
        "the secured cluster's fault scenarios (certificates, SCRAM password, ACL), 3 runs each",
    ),
    Raw(
        "docs/benchmarks/security-producer.json",
        f"{PY} benchmarks/bench_security_producer.py --dir /tmp/bench-security-producer --records 500000 "
        "--record-size 100 --rounds 4 --out docs/benchmarks/security-producer.json",
        False,
        "failsafe's producer against producer-perf-test per security mode, alternating on one cluster each",
    ),
    Raw(
        "docs/benchmarks/security-isolation.json",
        f"{PY} benchmarks/bench_security.py --dir /tmp/failsafe-bench-isolation --rounds 4 --modes '' "
        "--scenario leader-isolated --out docs/benchmarks/security-isolation.json",
        False,
        "leader-isolated secured and plaintext, alternately",
    ),
    Raw(
        "docs/benchmarks/clock-probe.json",
        f"{PY} benchmarks/clock_probe.py --out docs/benchmarks/clock-probe.json",
        False,
        "a JVM's clocks and timed waits under libfaketime, per way of loading it",
    ),
    Raw(
        "docs/benchmarks/clock-runs.json",
        f"{PY} benchmarks/clock_runs.py --dir /tmp/bench-clock --runs 3 --out docs/benchmarks/clock-runs.json",
        False,
        "the clock-fault scenarios, 3 runs each",
    ),
    Raw(
        "docs/benchmarks/corruption.json",
        f"{PY} benchmarks/storage_faults.py corruption --dir /tmp/bench-storage --runs 1 --keep-runs "
        "/tmp/bench-storage-runs --out docs/benchmarks/corruption.json",
        False,
        "one file class corrupted at rest per cell, on a follower, the leader, the active controller or every replica",
    ),
    Raw(
        "docs/benchmarks/slow-disk.json",
        f"{PY} benchmarks/storage_faults.py slow --dir /tmp/bench-storage --runs 3 --out "
        "docs/benchmarks/slow-disk.json",
        False,
        "a slow disk on the leader or a follower against a 1 µs control, alternately",
    ),
    Raw(
        "docs/benchmarks/tiered-storage.json",
        f"{PY} benchmarks/tiered_storage.py --dir /tmp/bench-tiered --runs 2 --keep-runs /tmp/bench-tiered-runs "
        "--out docs/benchmarks/tiered-storage.json",
        False,
        "the tiered scenarios on Kafka 4.3.1 and 4.4.0, 2 runs each, alternately",
    ),
    Raw(
        "docs/benchmarks/cluster.json",
        f"{PY} benchmarks/bench_cluster.py --runs 5 --out docs/benchmarks/cluster.json",
        True,
    ),
    Raw(
        "docs/benchmarks/soundness.json",
        f"{PY} benchmarks/bench_soundness.py --seeds 5 --out /tmp/soundness-after.json; git worktree add /tmp/before "
        f"b0859b4; PYTHONPATH=/tmp/before/src {PY} benchmarks/bench_soundness.py --seeds 5 --label before --out "
        f"/tmp/soundness-before.json; {PY} benchmarks/bench_soundness.py --merge /tmp/soundness-before.json "
        "/tmp/soundness-after.json --out docs/benchmarks/soundness.json",
        False,
        "the corpus (tests/data/corpus) mutated, judged by the code before the single durability judge (commit "
        "b0859b4) and after it; checkers only, no cluster",
    ),
    Raw(
        "docs/benchmarks/bad-input-sweep.json",
        f"{PY} benchmarks/bad_input_sweep.py --out docs/benchmarks/bad-input-sweep.json",
        False,
        "every field of every catalog scenario replaced by each of 15 bad values, parsed in-process: no cluster",
    ),
    Raw(
        "docs/benchmarks/cold-catalog.json",
        f"{PY} benchmarks/cold_catalog.py --work /tmp/failsafe-cold --seed-lab 3 --out "
        f"docs/benchmarks/cold-catalog.json",
        False,
        "every catalog scenario once and the seed lab three times, each on a cluster its run starts (about 75 minutes)",
    ),
    Raw(
        "docs/benchmarks/cold-reruns.json",
        f"{PY} benchmarks/cold_catalog.py --work DIR --out FILE NAME ...",
        False,
        "share-consumer-paused twice after its pause waited for held records, rebalance-member-paused three "
        "times: merged by hand",
    ),
    Raw(
        "docs/benchmarks/cold-stale.json",
        f"{PY} benchmarks/cold_catalog.py --work /tmp/failsafe-cold-stale --out docs/benchmarks/cold-stale.json "
        + " ".join(["rebalance-member-paused"] * 5),
        False,
        "rebalance-member-paused five times, each cold, after the stale-delivery split",
    ),
    Raw(
        "docs/benchmarks/structure.json",
        f"git worktree add /tmp/before50 2e08403; {PY} benchmarks/structure_counts.py --tree /tmp/before50 --label "
        f"'before (2e08403)' --out docs/benchmarks/structure.json; {PY} benchmarks/structure_counts.py --label after "
        "--out docs/benchmarks/structure.json",
        False,
        "the structure numbers of issue 50, read from the source (nothing runs)",
    ),
    Raw("docs/benchmarks/cds.json", f"{PY} benchmarks/bench_cds.py --rounds 3 --out docs/benchmarks/cds.json", True),
    Raw(
        "docs/benchmarks/producer.json",
        f"{PY} benchmarks/bench_producer.py --dir {BENCH_DIR} --records 200000 --rounds 3 --out "
        f"docs/benchmarks/producer.json",
        True,
    ),
    Raw(
        "docs/benchmarks/check.json",
        f"{PY} benchmarks/bench_check.py --out docs/benchmarks/check.json",
        True,
        "about 6 minutes: the history is recorded twice, at 25 MB/s",
    ),
    Raw(
        "docs/benchmarks/failover.json",
        f"{PY} benchmarks/bench_failover.py --dir {BENCH_DIR} --runs 5 --out docs/benchmarks/failover.json",
        True,
    ),
    Raw(
        "docs/benchmarks/simulator.json",
        f"{PY} benchmarks/bench_simulator.py --dir {BENCH_DIR} --records 300000 --rounds 5 --out "
        f"docs/benchmarks/simulator.json",
        True,
    ),
    Raw(
        "docs/benchmarks/simulator-2-instances.json",
        f"{PY} benchmarks/bench_simulator.py --dir {BENCH_DIR} --records 300000 --rounds 3 --instances 2 --out "
        f"docs/benchmarks/simulator-2-instances.json",
        True,
    ),
    Raw(
        "docs/benchmarks/pipeline.json",
        f"{PY} benchmarks/bench_pipeline.py --dir {BENCH_DIR} --backlog 200000 --batch 50000 --live-s 60 --out "
        f"docs/benchmarks/pipeline.json",
        True,
    ),
    Raw(
        "docs/benchmarks/pipeline-state-sustained.json",
        f"{PY} benchmarks/bench_pipeline.py --dir {BENCH_DIR} --sustained 5000,10000,16000 --live-s 150 --warmup 60 "
        "--out docs/benchmarks/pipeline-state-sustained.json",
        True,
        "made before the pipeline published exactly once (its totals went through Spark's Kafka sink); remade now, it "
        "publishes exactly once, --publish's default",
    ),
    Raw(
        "docs/benchmarks/pipeline-state-store.json",
        f"{PY} benchmarks/bench_state_store.py --dir {BENCH_DIR} --out docs/benchmarks/pipeline-state-store.json",
        True,
    ),
    Raw(
        "docs/benchmarks/pipeline-profile.json",
        f"{PY} benchmarks/profile_pipeline.py --dir {BENCH_DIR} --out docs/benchmarks/pipeline-profile.json",
        True,
    ),
    Raw(
        "docs/benchmarks/pipeline-profile-115b35b.json",
        f"PYTHONPATH=WORKTREE/src {PY} benchmarks/profile_pipeline.py --dir DIR --out "
        f"docs/benchmarks/pipeline-profile-115b35b.json",
        False,
        "the pipeline of commit 115b35b (WORKTREE: a git worktree of it), before the results producer's "
        "larger batches and the one-parse "
        "object check; the before of pipeline-profile.json, made just before it in one session (2026-11-26)",
    ),
    *(
        Raw(
            f"docs/benchmarks/pipeline-profile-de8cd90-{mode}.json",
            f"PYTHONPATH=WORKTREE/src {PY} benchmarks/profile_pipeline.py --dir DIR --publish {mode} --out "
            f"docs/benchmarks/pipeline-profile-de8cd90-{mode}.json",
            False,
            "the pipeline of commit de8cd90 (WORKTREE: a git worktree of it) with this commit's profile_pipeline.py "
            "(its --publish); the before of pipeline-profile-" + mode + ".json, made in the same session (2026-11-30)",
        )
        for mode in ("exactly-once", "at-least-once")
    ),
    *(
        Raw(
            f"docs/benchmarks/pipeline-profile-{mode}.json",
            f"{PY} benchmarks/profile_pipeline.py --dir {BENCH_DIR} --publish {mode} --out "
            f"docs/benchmarks/pipeline-profile-{mode}.json",
            True,
        )
        for mode in ("exactly-once", "at-least-once")
    ),
    Raw(
        "docs/benchmarks/pipeline-scale.json",
        f"{PY} benchmarks/bench_pipeline_scale.py --dir {BENCH_DIR} --out docs/benchmarks/pipeline-scale.json",
        True,
    ),
    Raw(
        "docs/benchmarks/pipeline-live-5000-*.json",
        f"PYTHONPATH=WORKTREE/src:WORKTREE {PY} WORKTREE/benchmarks/bench_pipeline.py --dir DIR --sustained 5000 "
        "--live-s 150 --warmup 60 --out docs/benchmarks/pipeline-live-5000-NAME.json",
        False,
        "WORKTREE: a git worktree of commit 115b35b (NAME 115b35b) and of this pass's tree (NAME after), run "
        "one after the other in one "
        "session (2026-11-26), right after pipeline-state-sustained.json; remade alone a file would compare nothing",
    ),
    Raw(
        "docs/benchmarks/pipeline-partitions-*.json",
        f"PYTHONPATH=WORKTREE/src:WORKTREE {PY} WORKTREE/benchmarks/bench_pipeline.py --dir DIR --backlog 200000 "
        "--batch 50000 --live-s 0 --out docs/benchmarks/pipeline-partitions-N-rROUND.json",
        False,
        "WORKTREE: the tree with DEFAULT_SHUFFLE_PARTITIONS = N in pipeline/session.py; N = 4 and 2 in turn within "
        "a round, three rounds in one session (2026-11-26); remade alone a file would compare nothing",
    ),
    Raw(
        "docs/benchmarks/pipeline-speed-*.json",
        f"PYTHONPATH=WORKTREE/src:WORKTREE {PY} WORKTREE/benchmarks/bench_pipeline.py --dir DIR --backlog 200000 "
        "--batch 50000 --live-s 0 --out docs/benchmarks/pipeline-speed-COMMIT-rROUND.json",
        False,
        "one run per commit and round (WORKTREE: a git worktree of COMMIT), the commits in turn within a "
        "round, rounds one after the "
        "other, in one session (2026-11-26): what each change bought; remade alone a file would compare nothing",
    ),
    Raw(
        "docs/benchmarks/pipeline-driver-state.json",
        f"PYTHONPATH=WORKTREE/src:WORKTREE {PY} WORKTREE/benchmarks/bench_pipeline.py --dir DIR --backlog 200000 "
        "--batch 50000 --live-s 0 --out docs/benchmarks/pipeline-driver-state.json",
        False,
        "the driver-state pipeline of commit d7756c3 (WORKTREE: a git worktree of it), no longer in the tree; the "
        "before of a same-session comparison (2026-11-26)",
    ),
    Raw(
        "docs/benchmarks/pipeline-state-spark.json",
        f"{PY} benchmarks/bench_pipeline.py --dir DIR --backlog 200000 --batch 50000 --live-s 0 --out "
        f"docs/benchmarks/pipeline-state-spark.json",
        False,
        "the after of the same-session comparison with pipeline-driver-state.json (2026-11-26, commit 0deba24): "
        "remade alone it would compare nothing",
    ),
    Raw(
        "docs/benchmarks/pipeline-one-query-sustained.json",
        f"{PY} benchmarks/bench_pipeline.py --dir DIR --sustained 5000,8000,10000,13000,16000 --live-s 150 --warmup 60 "
        "--out docs/benchmarks/pipeline-one-query-sustained.json",
        False,
        "the driver-state pipeline (before commit 0deba24), no longer in the tree: three invocations of 2026-11-24 "
        "(5000; 8000,10000; 13000,16000) merged; superseded by pipeline-state-sustained.json",
    ),
    Raw(
        "docs/benchmarks/pipeline-one-query.json",
        f"{PY} benchmarks/bench_pipeline.py --dir DIR --backlog 200000 --batch 50000 --live-s 0 --out "
        f"docs/benchmarks/pipeline-one-query.json",
        False,
        "one half of a same-session comparison with the two-query pipeline (2026-11-24): remade alone it "
        "would compare nothing",
    ),
    Raw(
        "docs/benchmarks/pipeline-two-queries-same-session.json",
        f"PYTHONPATH=WORKTREE/src {PY} benchmarks/bench_pipeline.py --dir DIR --backlog 200000 --batch 50000 "
        "--live-s 0 --out docs/benchmarks/pipeline-two-queries-same-session.json",
        False,
        "the two-query pipeline of commit 23a8813 (WORKTREE: a git worktree of it), no longer in the tree",
    ),
    Raw(
        "docs/benchmarks/pipeline-sustained.json",
        f"{PY} benchmarks/bench_pipeline.py --dir DIR --sustained 3000,4000,5000,6000 --live-s 150 --warmup "
        f"60; the same with --sustained 8000,10000",
        False,
        "the two-query pipeline (before commit ba9b0e6), no longer in the tree: superseded by "
        "pipeline-one-query-sustained.json",
    ),
    Raw(
        "docs/benchmarks/realtime.json",
        f"{PY} benchmarks/bench_realtime.py --dir {BENCH_DIR} --rate 5000 --duration 90 --warmup 30 --out "
        f"docs/benchmarks/realtime.json",
        True,
    ),
    Raw(
        "docs/benchmarks/realtime-checkpoint-5s-10s.json",
        f"{PY} benchmarks/bench_realtime.py --dir DIR --rate 5000 --duration 90 --warmup 30 --triggers "
        f"real-time --realtime-s S",
        False,
        "three invocations (S = 5, 10, 5) merged by hand: a one-off comparison of checkpoint intervals",
    ),
    Raw(
        "docs/benchmarks/realtime-checkpoint-30s.json",
        f"{PY} benchmarks/bench_realtime.py --dir DIR --rate 5000 --duration 90 --warmup 30 --triggers real-time "
        "--realtime-s 30 --out docs/benchmarks/realtime-checkpoint-30s.json",
        False,
        "a one-off comparison of checkpoint intervals",
    ),
    Raw(
        "docs/benchmarks/console.json",
        f"{PY} benchmarks/bench_console.py --dir {BENCH_DIR} --rounds 5 --idle-s 60 --out docs/benchmarks/console.json",
        True,
    ),
    Raw(
        "docs/benchmarks/seed-lab.json",
        f"{PY} benchmarks/bench_seedlab.py --dir /tmp/failsafe-bench-lab --runs 1 --out docs/benchmarks/seed-lab.json",
        True,
    ),
    Raw(
        "docs/benchmarks/network/*.json",
        "bash benchmarks/network.sh",
        True,
        "one run of each network scenario (root, nft and setpriv needed), each run's results.json",
    ),
    Raw(
        "docs/benchmarks/dr-*.json",
        "bash benchmarks/bench_dr.sh",
        True,
        "dr-tuned, dr-defaults, dr-failback: `failsafe run --repeat` summaries on a DR pair of two 3-broker clusters",
    ),
    Raw(
        "docs/benchmarks/modes/*-failover.json",
        "N=5 bash benchmarks/modes.sh failover",
        True,
        "`failsafe run --repeat` summaries, one per mode and scenario",
    ),
    Raw(
        "docs/benchmarks/modes/migration-[0-9].json",
        "M=3 bash benchmarks/modes.sh migration",
        True,
        "each run's results.json",
    ),
    Raw(
        "docs/benchmarks/modes/migration-*-[0-9].json",
        "M=4 bash benchmarks/modes.sh migration-clients",
        True,
        "each run's results.json",
    ),
    Raw(
        (
            "docs/findings/two-brokers-down-librdkafka.json",
            "docs/findings/two-brokers-down-librdkafka-max-in-flight-1.json",
            "docs/findings/two-brokers-down-java.json",
            "docs/findings/broker-restart-*.json",
        ),
        "N=10 bash benchmarks/findings.sh duplicates",
        True,
    ),
    Raw(
        ("docs/findings/leader-pause-timeout-librdkafka*.json", "docs/findings/leader-pause-timeout-java.json"),
        "N=10 bash benchmarks/findings.sh reproduce",
        True,
    ),
    Raw(
        "docs/findings/leader-pause-timeout-duplicates-where.json",
        "N=3 bash benchmarks/findings.sh where",
        True,
        "`benchmarks/findings_duplicates.py` over the runs' histories",
    ),
    Raw("docs/findings/stall-*.json", "N=10 bash benchmarks/findings.sh stalls", True),
    Raw(
        "docs/findings/app-python-*.json",
        "N=10 bash benchmarks/findings.sh apps-python",
        False,
        "the Python app examples through their own faults, 10 runs each (about 20 minutes)",
    ),
    Raw(
        "docs/benchmarks/app-overhead.json",
        f"{PY} benchmarks/bench_app_overhead.py --dir /tmp/bench-overhead --records 30000 --rounds 3 --out "
        "docs/benchmarks/app-overhead.json",
        False,
        "the transactional example fed and read by Kafka's perf tools and by failsafe's clients (about 3 minutes)",
    ),
    Raw(
        "docs/findings/app-cells/*.json",
        "N=3 bash benchmarks/findings.sh apps-cells, twice (the runs add up in DIR/runs); N=3 bash "
        "benchmarks/findings.sh apps-cells-restart",
        False,
        "the app examples' pairs under one fault a cell, 3 runs each a time (about 80 minutes a time), and the "
        "transactional service's cells with restart = on-failure (about 13 minutes)",
    ),
    Raw(
        "docs/findings/app-streams-*.json",
        "N=5 bash benchmarks/findings.sh apps-streams",
        False,
        "the Kafka Streams examples through their own faults, 5 runs each (about 35 minutes)",
    ),
    Raw("docs/findings/two-brokers-down-librdkafka-loaded.json", "N=10 bash benchmarks/findings.sh loaded", True),
    Raw("docs/findings/two-brokers-down-zookeeper-*.json", "N=5 bash benchmarks/findings.sh zookeeper", True),
    Raw(
        "docs/findings/two-brokers-down-kraft-chaos32-librdkafka.json",
        "N=5 bash benchmarks/findings.sh zookeeper-control",
        True,
    ),
    Raw("docs/findings/cold-coordinator-librdkafka.json", "N=10 bash benchmarks/findings.sh cold", True),
    Raw("docs/findings/warm-coordinator-librdkafka.json", "N=10 bash benchmarks/findings.sh cold", True),
    Raw("docs/findings/cold-coordinator-librdkafka-kafka-3.9.2.json", "N=10 bash benchmarks/findings.sh cold", True),
    Raw(
        "docs/findings/brokers-cut-from-controllers-*.json",
        "N=10 bash benchmarks/findings.sh coordinator",
        True,
        "`failsafe run --repeat` summaries with each run's readers and client-log lines "
        "(benchmarks/findings_decommissioned.py)",
    ),
    Raw(
        "docs/findings/txn-hang-*.json",
        'N=10 KILL_BATCHES="10 30 40" N_TV2=5 N_JAVA=5 N_SHORT=5 N_TXN_KILL=10 N_PAUSE=5 bash '
        "benchmarks/findings.sh txn-hang",
        True,
        "`failsafe run --repeat` summaries with each run's hung processes and where they were "
        "(benchmarks/findings_txn_hang.py)",
    ),
    Raw(
        "docs/findings/txn-pause-*.json",
        "N=3 N_CONTROL=3 bash benchmarks/findings.sh txn-fence",
        True,
        "`failsafe run --repeat` summaries with writer-0's transaction errors, client-log words and next commit per "
        "run (benchmarks/findings_txn_fence.py)",
    ),
    Raw(
        "docs/benchmarks/interrupted-shrink-client-matrix-r002.json",
        "failsafe shrink (anything-goes run 2, --tries 2)",
        False,
        "the verdicts of an interrupted shrink's 10 judged attempts, read from its run directories; not "
        "repeatable as it ran (inline undos)",
    ),
    Raw(
        "docs/benchmarks/shrink-*.json",
        "bash benchmarks/campaigns.sh shrink",
        False,
        "failsafe shrink's shrink.json of a stored campaign run, run directories cut to their names "
        "(benchmarks/store_shrink.py)",
    ),
    Raw(
        "docs/benchmarks/transactions-throughput.json",
        f"{PY} benchmarks/bench_transactions.py --dir {BENCH_DIR} --seconds 15 --rounds 2 --versions 2,1 "
        "--out docs/benchmarks/transactions-throughput.json",
        True,
    ),
    Raw(
        "docs/benchmarks/transactions-failover.json",
        f"{PY} benchmarks/bench_txn_failover.py --dir {BENCH_DIR} --runs 5 --versions 2,1 --clients "
        "librdkafka,kafka-java --out docs/benchmarks/transactions-failover.json",
        True,
    ),
    Raw(
        "docs/benchmarks/rebalance-3.json",
        f"{PY} benchmarks/bench_rebalance.py --dir {BENCH_DIR} --runs 5 --out docs/benchmarks/rebalance-3.json",
        True,
        "stored from that grid (5 runs per cell) before the joining and rolling faults existed, with its kill cells "
        "of Kafka's Java consumer run again after the verifiable worker's kill fix (--faults killed --clients "
        "kafka-java, merged by --summarize FILE --replace-cells), every run checked again by the processing gap "
        "measured until the group settled (--summarize FILE --recheck killed,closed,paused,coordinator), then the "
        "cells of --faults joining,rolling added (checked again with a join ending at the next consumer event: "
        "--recheck joining,rolling) and the frozen member's cells of Kafka's Java consumer (--faults paused "
        "--clients kafka-java) added, each by --replace-cells; then the rolling cells run again once each restart "
        "waited for the group to settle (--faults rolling, --replace-cells, read with each run's fault start times "
        "and write acknowledgement times: --reread rolling); the file's replaced list names each command",
    ),
    Raw(
        "docs/benchmarks/rebalance-30.json",
        f"{PY} benchmarks/bench_rebalance.py --dir {BENCH_DIR} --runs 5 --members 30 --partitions 60 --keys 240 "
        "--faults closed,killed --clients librdkafka --out docs/benchmarks/rebalance-30.json",
        True,
        "stored from --faults closed; the killed cells (--faults killed, read with --reread killed) and one run of "
        "Kafka's Java consumer closed (--runs 1 --faults closed --protocols classic-range --clients kafka-java) "
        "added by --summarize FILE --replace-cells; the file's replaced list names each command",
    ),
    Raw(
        "docs/benchmarks/rebalance-900.json",
        f"{PY} benchmarks/bench_rebalance.py --dir {BENCH_DIR} --runs 5 --members 10 --partitions 900 --keys 3600 "
        "--rate 1800 --faults joining --protocols classic-range,classic-cooperative-sticky,consumer-uniform "
        "--clients librdkafka,kafka-java --out docs/benchmarks/rebalance-900.json",
        True,
    ),
    Raw(
        "docs/benchmarks/share.json",
        f"{PY} benchmarks/bench_share.py --dir {BENCH_DIR} --runs 5 --records 200000 --rounds 0 --out "
        f"docs/benchmarks/share.json",
        True,
        "stored from --rounds 3: its throughput rounds were measured before the share consumer recorded a share-ack "
        "invoke ahead of each commit, and are superseded by share-throughput.json",
    ),
    Raw(
        "docs/benchmarks/share-throughput-r1.json",
        f"{PY} benchmarks/bench_share.py --dir {BENCH_DIR} --runs 0 --records 200000 --rounds 3 --out "
        f"docs/benchmarks/share-throughput-r1.json",
        False,
        "the same rounds an hour before share-throughput.json's, before the rounds recorded the machine's load",
    ),
    Raw(
        "docs/benchmarks/power-loss.json",
        f"{PY} benchmarks/bench_power_loss.py --dir /tmp/failsafe-power --runs 10 --keep-runs "
        "/tmp/failsafe-power-runs --out docs/benchmarks/power-loss.json power-loss-single-broker:default,flush1 "
        "power-loss-all-brokers:default,flush1 last-replica-standing:default last-replica-standing:elr0",
        True,
        "about 50 minutes: four clusters on disk layers, one after the other",
    ),
    Raw(
        "docs/benchmarks/power-loss-kept.json",
        f"{PY} benchmarks/bench_power_loss.py --dir /tmp/failsafe-power --runs 5 --keep-runs /tmp/failsafe-power-runs "
        "--out docs/benchmarks/power-loss-kept.json power-loss-rack:default controller-power-loss:default "
        "disk-full:default disk-error:default",
        True,
        "the scenarios that lose nothing acknowledged, 5 runs each",
    ),
    Raw(
        "docs/benchmarks/power-loss-zookeeper.json",
        f"{PY} benchmarks/bench_power_loss.py --dir /tmp/failsafe-power --runs 5 --fresh --keep-runs "
        "/tmp/failsafe-power-runs --out docs/benchmarks/power-loss-zookeeper.json controller-power-loss:zookeeper",
        True,
        "a new ZooKeeper-mode cluster per run: ZooKeeper may not start again after its power cut",
    ),
    Raw(
        "docs/benchmarks/disk-faults-seen.json",
        f"{PY} benchmarks/examine_disk_faults.py docs/benchmarks/power-loss-kept.json --out "
        f"docs/benchmarks/disk-faults-seen.json",
        True,
        "reads the run directories power-loss-kept.json names (--keep-runs)",
    ),
    Raw(
        "docs/benchmarks/power-loss-elections.json",
        f"{PY} benchmarks/examine_power_elections.py docs/benchmarks/power-loss.json --scenario last-replica-standing "
        "--out docs/benchmarks/power-loss-elections.json",
        True,
        "reads the run directories power-loss.json names (--keep-runs)",
    ),
    Raw(
        "docs/benchmarks/disk-throughput.json",
        f"{PY} benchmarks/bench_disk_throughput.py --dir /tmp/failsafe-disk-bench --rounds 3 --records 100000 "
        f"--out docs/benchmarks/disk-throughput.json",
        True,
    ),
    Raw(
        "docs/benchmarks/share-throughput.json",
        f"{PY} benchmarks/bench_share.py --dir {BENCH_DIR} --runs 0 --records 200000 --rounds 3 --out "
        f"docs/benchmarks/share-throughput.json",
        True,
    ),
    Raw(
        "docs/benchmarks/share-java.json",
        f"{PY} benchmarks/bench_share.py --dir {BENCH_DIR} --runs 5 --rounds 0 --driver kafka-verifiable "
        "--scenarios share-consumer-killed,share-consumer-paused --out docs/benchmarks/share-java.json",
        True,
    ),
    Raw(
        "docs/benchmarks/share-java-paused-examined.json",
        f"{PY} benchmarks/examine_share_paused.py docs/benchmarks/share-java.json --out "
        f"docs/benchmarks/share-java-paused-examined.json",
        False,
        "read from the run directories of share-java.json's share-consumer-paused rows, which must still exist",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-modes.json",
        f"{PY} benchmarks/bench_publish_modes.py --dir /tmp/bench-pub --runs 3 --scenarios "
        "pipeline-restart:3,pipeline-executor-loss:3,pipeline-txn-coordinator-kill:1,pipeline-output-leader-isolated:1,"
        "pipeline-broker-failover:1 --out docs/benchmarks/pipeline-publish-modes.json",
        False,
        "the pipeline's publish modes alternately through five faults (about 2 min a run: 18 runs)",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-coordinator.json",
        f"{PY} benchmarks/bench_publish_modes.py --dir /tmp/bench-pub --runs 2 --scenarios "
        "pipeline-txn-coordinator-kill:2 --out docs/benchmarks/pipeline-publish-coordinator.json",
        False,
        "pipeline-txn-coordinator-kill again after the marker's read retried NOT_COORDINATOR",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-modes-5.json",
        f"{PY} benchmarks/bench_publish_modes.py --dir {BENCH_DIR} --keep-runs /tmp/failsafe-publish-modes-5 "
        "--scenarios " + rounds(5) + " --out docs/benchmarks/pipeline-publish-modes-5.json",
        False,
        "about 80 minutes: five rounds, each running the five faults once in each mode (the pipeline of 19c6a55, "
        "producers kept per Python worker); the last 7 runs, made while another benchmark ran by mistake on the same "
        "cluster, are under set_aside, out of rows and summary",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-modes-6.json",
        f"{PY} benchmarks/bench_publish_modes.py --dir {BENCH_DIR} --keep-runs /tmp/failsafe-publish-modes-6 "
        "--scenarios " + rounds(6) + " --out docs/benchmarks/pipeline-publish-modes-6.json",
        False,
        "83 minutes: six more rounds of the five faults in each mode on aa81f28 (the pipeline of "
        "pipeline-publish-modes-5.json); the cluster was down at the start, so each run started it and stopped it",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-modes-extra.json",
        f"{PY} benchmarks/bench_publish_modes.py --dir {BENCH_DIR} --keep-runs /tmp/failsafe-publish-modes-extra "
        "--scenarios pipeline-broker-failover:1 --out docs/benchmarks/pipeline-publish-modes-extra.json",
        False,
        "one more run of pipeline-broker-failover in each mode: its at-least-once run in pipeline-publish-modes-6.json "
        "could not be carried out (exit 5: the catalogue unacknowledged in its setup); made after publish_products "
        "sends again through a new producer what one left unacknowledged",
    ),
    Raw(
        "docs/benchmarks/pipeline-pinned.json",
        f"{PY} benchmarks/bench_pipeline_pinned.py --dir {BENCH_DIR} --out docs/benchmarks/pipeline-pinned.json",
        True,
        "about 20 minutes: two rounds of both placements, each a standalone cluster, the ceiling query and the "
        "pipeline in each mode",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-sustained.json",
        f"{PY} benchmarks/bench_pipeline.py --dir {BENCH_DIR} --sustained 5000,10000,16000 --live-s 150 --warmup 60 "
        "--publish exactly-once,at-least-once --out docs/benchmarks/pipeline-publish-sustained.json",
        True,
        "about 30 minutes: a live run of 150 s at each rate in each publish mode, the modes taking turns",
    ),
    Raw(
        "docs/benchmarks/publish-steps.json",
        f"{PY} benchmarks/time_publish_steps.py --dir {BENCH_DIR} --out docs/benchmarks/publish-steps.json",
        True,
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-timed-kill.json",
        f"{PY} benchmarks/bench_publish_modes.py --dir {BENCH_DIR} --runs 5 --scenarios "
        "pipeline-kill-while-publishing:5 --out docs/benchmarks/pipeline-publish-timed-kill.json",
        False,
        "about 15 minutes: the driver killed 700 ms into a batch's publishing job, five runs per mode; "
        "killed_in_batch and killed_batch_ran_again added from its kept runs by the same command with --keep-runs "
        "DIR --examine",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-cost-de8cd90.json",
        f"PYTHONPATH=WORKTREE/src {PY} benchmarks/bench_pipeline.py --dir DIR --backlog 200000 --batch 50000 "
        "--live-rate 5000 --live-s 150 --warmup 60 --publish exactly-once,at-least-once --rounds 1 "
        "--out docs/benchmarks/pipeline-publish-cost-de8cd90.json",
        False,
        "the pipeline of commit de8cd90 (WORKTREE: a git worktree of it); the before of pipeline-publish-cost.json, "
        "made just before it in one session (2026-11-30)",
    ),
    Raw(
        "docs/benchmarks/pipeline-publish-cost.json",
        f"{PY} benchmarks/bench_pipeline.py --dir {BENCH_DIR} --backlog 200000 --batch 50000 --live-rate 5000 "
        "--live-s 150 --warmup 60 --publish exactly-once,at-least-once --rounds 1 --out "
        "docs/benchmarks/pipeline-publish-cost.json",
        False,
        "the backlog and a live run in each publish mode, one after the other (one round), just after "
        "pipeline-publish-cost-de8cd90.json",
    ),
    Raw(
        "docs/benchmarks/pipeline-sink-duplicates.json",
        f"{PY} benchmarks/bench_sink_duplicates.py --dir {BENCH_DIR} --runs 10 --out "
        f"docs/benchmarks/pipeline-sink-duplicates.json",
        True,
    ),
    Raw(
        "docs/benchmarks/interrupted-campaign-txn-kafka-java-tv2-02bc6e1-before.json",
        "TXN_RUNS=50 TXN_CLIENTS=kafka-java TXN_VERSIONS=2 bash benchmarks/campaigns.sh txn (at commit 77fa4f2)",
        False,
        "the first two runs of the kafka-java campaign at transaction.version 2 before the Java fence fix "
        "(02bc6e1), stopped by hand: "
        "run 0 could not be carried out (ctp-0 fenced with no zombie); kept as the before of that fix",
    ),
    Raw(
        "docs/benchmarks/earlier-campaign-txn-librdkafka-tv1-77fa4f2.json",
        "TXN_RUNS=50 TXN_CLIENTS=librdkafka TXN_VERSIONS=1 bash benchmarks/campaigns.sh txn (at commit 77fa4f2)",
        False,
        "the librdkafka campaign at transaction.version 1 on the workload before the fixes it and the Java campaign "
        "led to (a superseded worker re-initialising, the Java fence); its runs 10, 17 and 36 hung the processor; "
        "kept as the before of the campaign run again",
    ),
    Raw(
        "docs/benchmarks/campaign-txn-*.json",
        "TXN_RUNS=50 bash benchmarks/campaigns.sh txn",
        False,
        "one campaign per client (librdkafka, kafka-java) and transaction.version (2, 1), seed 2913, each "
        "campaign.json with run "
        "directories cut to their names (benchmarks/store_campaign.py); about 2 h, not part of make bench",
    ),
    Raw(
        "docs/benchmarks/profiles-load.json",
        f"{PY} benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles "
        f"--runs 3 --out docs/benchmarks/profiles-load.json load:defaults load:fast-failover",
        True,
        "no fault, 2 x 2,000 1 KB records/s for 60 s: did the controller fence a broker or a leader shrink an ISR",
    ),
    Raw(
        "docs/benchmarks/profiles-pause.json",
        f"{PY} benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles "
        f"--runs 5 --out docs/benchmarks/profiles-pause.json pause-0.5:fast-failover pause-1.5:fast-failover "
        f"pause-3:fast-failover pause-3:defaults",
        True,
        "the leader SIGSTOPped 0.5, 1.5 and 3 s under fast-failover, 3 s under Kafka's defaults",
    ),
    Raw(
        "docs/benchmarks/profiles-kill.json",
        f"{PY} benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles "
        f"--runs 20 --out docs/benchmarks/profiles-kill.json kill:defaults kill:fast-failover",
        True,
        "kill -9 of a leader, 20 runs per profile in one session (about 30 minutes)",
    ),
    Raw(
        "docs/benchmarks/profiles-java.json",
        f"{PY} benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles "
        f"--runs 5 --out docs/benchmarks/profiles-java.json kill:fast-failover:java kill:defaults:java",
        True,
        "the same kill with Kafka's Java producer (VerifiableProducer), 5 runs per profile",
    ),
    Raw(
        "docs/benchmarks/hosts.json",
        f"{PY} benchmarks/bench_hosts.py --dir /tmp/failsafe-hosts --rounds 2 --kills 3 --runs 5 --out "
        f"docs/benchmarks/hosts.json",
        True,
        "3 brokers and a controller on 3 test hosts over SSH (network namespaces with an sshd each) against this "
        "machine: up, kill, broker-failover, with commands in the shells kept open on each host",
    ),
    Raw(
        "docs/benchmarks/lifecycle-rolling-upgrade.json",
        "N=5 bash benchmarks/lifecycle.sh upgrade",
        False,
        "the rolling upgrade 4.3.1 -> 4.4.0 under load, each run on a cluster of its own; each step's cost by "
        "benchmarks/lifecycle_steps.py; about 15 min",
    ),
    Raw(
        "docs/benchmarks/lifecycle-rolling-upgrade-from-3.9.json",
        "N=3 bash benchmarks/lifecycle.sh upgrade39",
        False,
        "the rolling upgrade 3.9.2 (KRaft) -> 4.4.0 under load, each run on a cluster of its own; each step's cost by "
        "benchmarks/lifecycle_steps.py; about 8 min",
    ),
    Raw(
        "docs/benchmarks/lifecycle-rolling-upgrade-rollback.json",
        "N=3 bash benchmarks/lifecycle.sh rollback",
        False,
        "every node rolled onto 4.4.0 and back onto 4.3.1 before finalizing, under load; about 12 min",
    ),
    Raw(
        "docs/benchmarks/lifecycle-quorum.json",
        "N=5 bash benchmarks/lifecycle.sh quorum",
        False,
        "a dynamic quorum's scenarios (a controller added and removed; the active one removed and added back on a "
        "new disk) under load, N runs each; each change's cost by benchmarks/lifecycle_steps.py --quorum",
    ),
    Raw(
        "docs/benchmarks/kafka-config-diff-4.3.1-4.4.0.json",
        f"{PY} benchmarks/kafka_config_diff.py --from 4.3.1 --to 4.4.0 --out "
        "docs/benchmarks/kafka-config-diff-4.3.1-4.4.0.json",
        False,
        "every ConfigDef key of the broker, topic, group, producer, consumer and admin configs of both releases' jars, "
        "and Kafka's own version-mapping of the feature levels; no cluster, about 30 s",
    ),
    Raw(
        "docs/benchmarks/lifecycle-flips.json",
        "N=2 bash benchmarks/lifecycle.sh flips",
        False,
        "txn-version-flip and elr-flip-last-replica N runs each, and the ELR flip's control (the same run, its flip to "
        "the level the feature already has) N runs; about 10 min",
    ),
    Raw(
        "docs/benchmarks/lifecycle-reassign.json",
        "N=5 bash benchmarks/lifecycle.sh reassign",
        False,
        "reassign-under-load, reassign-destination-killed and reassign-source-killed N runs each, each on a cluster of "
        "its own (a broker added, broker 0's replicas moved to it, throttled); about 20 min",
    ),
    Raw(
        "docs/benchmarks/lifecycle-reassign-control.json",
        "N=3 bash benchmarks/lifecycle.sh reassign-control",
        False,
        "reassign-under-load N runs with a throttle no move reaches (1e9 B/s): the control of the throttled move's "
        "write stalls; about 4 min",
    ),
    Raw(
        "docs/benchmarks/lifecycle-flips-group.json",
        "N=2 bash benchmarks/lifecycle.sh flips-group",
        False,
        "group-version-flip N runs and its control (the first flip to 1, the level the feature has) N runs; about "
        "6 min",
    ),
    Raw(
        "docs/benchmarks/cluster-versions.json",
        f"{PY} benchmarks/bench_cluster.py --versions 4.3.1,4.4.0 --runs 5 --out docs/benchmarks/cluster-versions.json",
        False,
        "failsafe up on each release, one after the other in each round: made and restarted to ready, memory, a "
        "leader's kill -9; about 8 min",
    ),
    Raw(
        "docs/benchmarks/compare-4.3.1-4.4.0.json",
        "CELLS='fault=kill,sigterm,pause,controller-kill,leader-isolated;profile=defaults;client=librdkafka' N=5 bash "
        "benchmarks/lifecycle.sh compare",
        False,
        "failsafe compare --kafka 4.3.1,4.4.0 over five faults of the atlas's default profile; about 35 min",
    ),
    Raw(
        "docs/benchmarks/hosts-before-shells.json",
        "git show dd535e3:docs/benchmarks/hosts.json > docs/benchmarks/hosts-before-shells.json",
        False,
        "the same bench at dd535e3 (--runs 3, its fault lags added from its runs by --examine), when every command "
        "opened an SSH session of its own: kept to compare",
    ),
    Raw(
        "docs/benchmarks/ssh-commands.json",
        f"{PY} benchmarks/bench_ssh_commands.py --dir /tmp/failsafe-ssh --commands 50 --out "
        f"docs/benchmarks/ssh-commands.json",
        True,
        "one command on an idle test host: in a session of its own against in an open shell",
    ),
    Raw(
        "docs/benchmarks/atlas-fit.json",
        f"{PY} benchmarks/fit_atlas.py docs/benchmarks/atlas.json --out docs/benchmarks/atlas-fit.json",
        False,
        "the stored atlas's wall times against the estimate's overheads (atlas/grid.py), fitted to its runs",
    ),
    Raw(
        "docs/benchmarks/atlas.json",
        ".venv/bin/failsafe atlas --out /tmp/failsafe-atlas && cp /tmp/failsafe-atlas/atlas.json "
        "docs/benchmarks/atlas.json",
        False,
        "the failover atlas's default grid (26 cells, 5 runs each), every cell with its runs' measures and "
        "p50/p95, run "
        "directories relative to the atlas directory; the quorum-loss cells run again after a fix (docs/atlas.md)",
    ),
    Raw(
        ("docs/benchmarks/campaign-safe.json", "docs/benchmarks/campaign-anything-goes.json"),
        "bash benchmarks/campaigns.sh",
        False,
        "each campaign's campaign.json with run directories cut to their names "
        "(benchmarks/store_campaign.py); about 75 min, not part of make bench",
    ),
)


def raw_files(root: Path) -> list[Path]:
    return sorted(p for d in RAW_DIRS for p in (root / d).rglob("*.json"))


def raw_entry(root: Path, path: Path) -> list[Raw]:
    rel = path.relative_to(root).as_posix()
    return [
        raw for raw in RAW if any(rel.count("/") == g.count("/") and fnmatch.fnmatchcase(rel, g) for g in raw.globs)
    ]


def raw_index(root: Path) -> dict[Path, list[Raw]]:
    """Every raw file with the RAW entries that say how it is made (exactly one, when all is well)."""
    return {path: raw_entry(root, path) for path in raw_files(root)}


def command_of(root: Path, rel: str) -> str:
    entries = raw_entry(root, root / rel)
    if len(entries) != 1:
        raise RenderError(f"{rel}: {len(entries)} entries in RAW, expected one")
    return entries[0].command


def load(root: Path, rel: str) -> dict:
    path = root / rel
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as e:
        raise RenderError(f"{rel}: missing") from e
    except json.JSONDecodeError as e:
        raise RenderError(f"{rel}: not JSON ({e})") from e


# -- formatting ----------------------------------------------------------------------------------


def num(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def secs(ms: float, digits: int = 1) -> str:
    return f"{ms / 1000:.{digits}f} s"


def spread_s(spread: dict, digits: int = 1) -> str:
    """A `--repeat` spread in ms as `median s (min-max, n)`."""
    return (
        f"**{secs(spread['median'], digits)}** "
        f"({spread['min'] / 1000:.{digits}f}-{spread['max'] / 1000:.{digits}f}, n={spread['n']})"
    )


def spread_ms(spread: dict) -> str:
    return f"{num(spread['median'])} ({num(spread['min'])}–{num(spread['max'])}, n={spread['n']})"


def dr_records(spread: dict | None, runs: int) -> str:
    if spread is None:
        return "not measured"
    if spread["max"] == 0:
        return f"0 in all {runs}"
    return f"{num(spread['median'])} ({num(spread['min'])}-{num(spread['max'])})"


def dr_ms(spread: dict) -> str:
    if spread["median"] >= 1000:
        return f"{spread['median'] / 1000:.2f} s ({spread['min'] / 1000:.2f}-{spread['max'] / 1000:.2f} s)"
    return f"{spread['median']:.0f} ms ({spread['min']:.0f}-{spread['max']:.0f} ms)"


def table(header: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def source(root: Path, *rels: str) -> str:
    """The line under a table: which files it was rendered from and the commands that make them."""
    commands: list[str] = []
    for rel in rels:
        command = command_of(root, rel)
        if command not in commands:
            commands.append(command)
    files = ", ".join(f"`{rel}`" for rel in rels)
    return f"\n\nRendered from {files}; made by " + "; ".join(f"`{c}`" for c in commands) + "."


def verdicts_of(runs: list[dict]) -> str:
    """How many runs got each verdict (a run that wrote none: its exit code), as "3 VALID, 1 INVALID"."""
    counts: dict[str, int] = {}
    for r in runs:
        key = r.get("verdict") or f"exit {r['exit']}"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
