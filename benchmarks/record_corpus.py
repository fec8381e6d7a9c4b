"""Record the soundness suite's corpus: real runs of every scenario kind and fault family, kept small, under
tests/data/corpus.

Each entry is run the way a newcomer runs it (``failsafe run`` or ``failsafe campaign`` on a cluster directory of its
own, which the command starts and stops), with shorter phases and lower rates than the catalog's so the corpus stays a
few MB. What is kept of each run: scenario.json, history.jsonl (gzipped), and what its kind's judge reads besides (the
pipeline's ledger and sink), with ``corpus.json``: the command, the verdict the run got, and when it was recorded.

    .venv/bin/python benchmarks/record_corpus.py --work /tmp/failsafe-corpus            # every entry
    .venv/bin/python benchmarks/record_corpus.py --work /tmp/failsafe-corpus txn-coordinator-kill

tests/unit/test_mutation_suite.py mutates these runs; a kind with no entry here fails that suite.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus"
FAILSAFE = str(Path(sys.executable).with_name("failsafe"))
# Smaller than the catalog's: fewer writes, shorter stretches, the same faults.
QUIET = ("--set", "producers[*].rate_per_s=40")


@dataclass(frozen=True)
class Entry:
    name: str  # the corpus directory
    family: str  # the fault family the run exercises
    args: tuple[str, ...]  # the failsafe command, without --dir and --runs / --out
    campaign: bool = False
    extra: tuple[str, ...] = ()  # what the kind's judge reads besides the history (directories of the run)


ENTRIES = (
    Entry("lab-broker-failover", "process", ("run", "broker-failover", *QUIET, "--set", "phases.chaos_s=12")),
    Entry(
        "lab-leader-isolated",
        "network",
        (
            "run",
            "leader-isolated",
            *QUIET,
            "--set",
            "phases.chaos_s=16",
            "--set",
            "faults[0].duration_s=10",
            "--set",
            "phases.recover_s=4",
        ),
    ),
    Entry("txn-coordinator-kill", "process", ("run", "txn-coordinator-kill", *QUIET, "--set", "phases.chaos_s=12")),
    # Protocol faults at each broker's proxy: Produce answers dropped (a producer without idempotence duplicates),
    # and a commit held past its client's commit timeout, then released to the coordinator.
    Entry("lab-produce-response-lost", "protocol", ("run", "produce-response-lost", *QUIET)),
    Entry("txn-commit-held", "protocol", ("run", "txn-commit-held", "--set", "writers[0].rate_per_s=10")),
    # Clock faults: every broker's clock a minute ahead of a topic's 10-minute retention (nothing deleted).
    Entry("lab-clock-jump", "clock", ("run", "retention-clock-jump", *QUIET, "--set", "faults[0].offset_s=60")),
    Entry("share-consumer-killed", "client", ("run", "share-consumer-killed", *QUIET)),
    Entry("dr-failover", "region", ("run", "dr-failover", *QUIET)),
    # The app kind: the shipped exactly-once example (its command is relative to the repository's root, where this
    # runs it) through a broker kill and an instance kill.
    Entry("app-eos-kills", "client", ("run", "examples/apps/eos-broker-and-instance-kill.toml", *QUIET)),
    # Its totals contract: the Kafka Streams count example (a state store, exactly_once_v2) through the same faults.
    Entry("app-streams-count", "client", ("run", "examples/apps/streams-count-broker-kill.toml", *QUIET)),
    # Every replica's segment corrupted at rest: acknowledged writes lost (INVALID), the brokers' own lines recorded.
    Entry("corrupt-replicas-segment", "disk", ("run", "corrupt-replicas-segment", *QUIET)),
    # The remote-store fault on a tiered cluster: the store fails its writes, then its reads; the final read reads the
    # oldest writes from the remote tier.
    Entry("tiered-remote-store-failing", "disk", ("run", "tiered-remote-store-failing", *QUIET)),
    Entry(
        "power-loss-single-broker", "disk", ("run", "power-loss-single-broker", "--set", "producers[*].rate_per_s=60")
    ),
    Entry(
        "pipeline-broker-failover",
        "process",
        (
            "run",
            "pipeline-broker-failover",
            "--set",
            "simulator.rate_per_s=60",
            "--set",
            "faults[0].duration_s=10",
            "--set",
            "phases.chaos_s=14",
        ),
        extra=("ledger", "output"),
    ),
    # The cluster's life: a broker added and a move to it, its destination killed mid-move (a window of family
    # reassignment beside a kill), throttled lower than the catalog's so the quieter writers still leave a move to kill.
    Entry(
        "lab-reassign-destination-killed",
        "reassignment",
        (
            "run",
            "reassign-destination-killed",
            *QUIET,
            "--set",
            "phases.warmup_s=6",
            "--set",
            "actions[1].throttle=12000",
        ),
    ),
    # A rolling upgrade (4.3.1 -> 4.4.0, each roll a window of family upgrade) and a dynamic quorum's leader removed and
    # added back (family quorum-change), at the catalog's phases.
    # A secured cluster's own faults (family security): a right taken away during a controller failover, whose refused
    # sends are failed sends, and a broker's certificate rotated under load and the broker restarted with it.
    Entry("lab-acl-removed", "security", ("run", "acl-removed-during-controller-failover", *QUIET)),
    Entry("lab-certificate-rotation", "security", ("run", "certificate-rotation", *QUIET)),
    Entry("lab-rolling-upgrade", "upgrade", ("run", "rolling-upgrade", *QUIET)),
    Entry("lab-quorum-remove-active-controller", "quorum-change", ("run", "quorum-remove-active-controller", *QUIET)),
    Entry(
        "campaign-acks-all",
        "campaign",
        ("campaign", "--workload", "acks-all", "--runs", "1", "--seed", "48", "--duration-s", "8"),
        campaign=True,
    ),
)


def record(entry: Entry, work: Path) -> dict:
    where = work / entry.name
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    out = ["--out", str(where / "runs")] if entry.campaign else ["--runs", str(where / "runs")]
    command = [FAILSAFE, *entry.args, "--dir", str(where / "cluster"), *out]
    print(f"{entry.name}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    (where / "output.log").write_text(done.stdout + done.stderr)
    histories = sorted((where / "runs").rglob("history.jsonl"))
    if len(histories) != 1:
        raise SystemExit(
            f"{entry.name}: exit {done.returncode}, {len(histories)} histories (one expected): see "
            f"{where / 'output.log'}"
        )
    run = histories[0].parent
    results = json.loads((run / "results.json").read_text())
    return {
        "run": run,
        "exit_code": done.returncode,
        "verdict": results.get("verdict"),
        "wall_s": round(time.monotonic() - started, 1),
        "command": ["failsafe", *entry.args],
    }


def pack(entry: Entry, recorded: dict) -> Path:
    run: Path = recorded["run"]
    target = CORPUS / entry.name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(run / "scenario.json", target / "scenario.json")
    with (
        (run / "history.jsonl").open("rb") as source,
        gzip.open(target / "history.jsonl.gz", "wb", compresslevel=9) as gz,
    ):
        shutil.copyfileobj(source, gz)
    for name in entry.extra:
        shutil.copytree(run / name, target / name)
    meta = {
        "name": entry.name,
        "family": entry.family,
        "kind": json.loads((run / "scenario.json").read_text()).get("kind", "lab"),
        "verdict": recorded["verdict"],
        "exit_code": recorded["exit_code"],
        "command": recorded["command"],
        "wall_s": recorded["wall_s"],
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "extra": list(entry.extra),
    }
    (target / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="where the runs and their clusters go")
    parser.add_argument("names", nargs="*", help="entries to record (default: all)")
    args = parser.parse_args()
    wanted = [e for e in ENTRIES if not args.names or e.name in args.names]
    unknown = set(args.names) - {e.name for e in ENTRIES}
    if unknown:
        raise SystemExit(f"no corpus entry {sorted(unknown)}; they are {[e.name for e in ENTRIES]}")
    for entry in wanted:
        recorded = record(entry, args.work)
        target = pack(entry, recorded)
        size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
        print(
            f"  {recorded['verdict']} (exit {recorded['exit_code']}) in {recorded['wall_s']} s -> {target} "
            f"({size / 1e3:.0f} kB)",
            flush=True,
        )


if __name__ == "__main__":
    main()
