"""The soundness suite's mutations of real runs (tests/data/corpus, recorded by benchmarks/record_corpus.py), and
judging a mutated run as `failsafe check` judges a stored one.

A mutation takes a run's ops (its history.jsonl, line by line) and what the run declared, and returns ops that hide a
violation, cut the run short, or change what it claims; or None when it does not apply to that run (a precondition: no
DR switch to write after, no committed transaction to abort). Each declares the verdicts a sound judge may give the
result: INVALID or UNKNOWN (REFUSED: the input was refused in one line, exit 2), never VALID or KNOWN. Which write,
partition, line or option it picks is drawn by ``draw`` (hypothesis's ``data.draw`` in the suite; a seeded chooser
elsewhere).

This module imports only what `failsafe check` itself runs (the run directory, its kind's judge, the stored scenario),
so benchmarks/bench_soundness.py can run the same mutations against any failsafe, today's or an older commit's."""

from __future__ import annotations

import copy
import gzip
import json
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
INVALID, UNKNOWN, REFUSED = "INVALID", "UNKNOWN", "REFUSED"
NOT_VALID = frozenset({INVALID, UNKNOWN})
Draw = Callable[[Sequence[Any], str], Any]  # picks one of the values, for what it says


@dataclass
class Run:
    """One corpus run, loaded: its ops in file order, scenario and meta (corpus.json)."""

    name: str
    path: Path
    ops: list[dict]
    scenario: dict
    meta: dict
    acknowledged: set[tuple[str, str]] = field(
        default_factory=set
    )  # (topic, value) of every write a durable writer had acknowledged

    @property
    def kind(self) -> str:
        return self.meta["kind"]


@dataclass(frozen=True)
class Mutant:
    ops: list[dict]
    scenario: dict
    raw: bytes | None = None  # the history's bytes, when the mutation is of the file itself (a line cut in two)


@dataclass(frozen=True)
class Mutation:
    name: str
    apply: Callable[[Run, Draw], Mutant | None]
    allowed: frozenset[str]
    description: str


def load_corpus(root: Path = CORPUS) -> list[Run]:
    runs = []
    for path in sorted(p for p in root.iterdir() if (p / "corpus.json").is_file()):
        ops = [
            orjson.loads(line)
            for line in gzip.decompress((path / "history.jsonl.gz").read_bytes()).splitlines()
            if line.strip()
        ]
        run = Run(
            path.name,
            path,
            ops,
            json.loads((path / "scenario.json").read_text()),
            json.loads((path / "corpus.json").read_text()),
        )
        run.acknowledged = _acknowledged(run)
        runs.append(run)
    return runs


# -- what a run holds --------------------------------------------------------------------------------------------------
def _acknowledged(run: Run) -> set[tuple[str, str]]:
    """(topic, value) of each write acknowledged to a writer that may not lose: what no final read may drop."""
    if run.kind == "pipeline":
        import polars as pl

        ids = pl.concat(
            [
                pl.read_parquet(p).select("transaction_id")
                for p in sorted((run.path / "ledger").glob("purchases-*.parquet"))
            ]
        )
        return {("demo.purchases", v) for v in ids["transaction_id"].to_list()}
    lossy = _lossy(run.ops)
    committed = {(op["process"], op["txn"]) for op in run.ops if op["f"] == "txn" and op["type"] == "ok"}
    return {
        (op["topic"], op["value"])
        for op in run.ops
        if op["f"] == "send"
        and op["type"] == "ok"
        and op.get("value") is not None
        and op["process"] not in lossy
        and (op.get("txn") is None or (op["process"], op["txn"]) in committed)
    }


def _lossy(ops: list[dict]) -> set[str]:
    """Writers declared may_lose whose recorded acks are 0 or 1 (what evidence.lossy_writers lets lose)."""
    declared = [c for op in ops if op["f"] == "declare" for c in op.get("clients") or [] if c.get("may_lose")]
    acks = {
        op["process"]: {e["name"]: str(e["value"]) for e in op.get("config") or []}.get("acks")
        for op in ops
        if op["f"] == "client-config"
    }
    return {
        p
        for p, a in acks.items()
        if a in ("0", "1")
        and any(c["process"] == p or (c.get("matches") and re.fullmatch(c["matches"], p)) for c in declared)
    }


def _identity(run: Run, record: dict) -> tuple[str, str | None]:
    value = record.get("value")
    if run.kind == "pipeline" and record.get("topic") == "demo.purchases" and value:
        found = re.search(r'"transaction_id": ?"([^"]+)"', value)
        value = found.group(1) if found else value
    return record.get("topic"), value


def _final_reads(run: Run, ops: list[dict]) -> list[int]:
    return [i for i, op in enumerate(ops) if op["f"] == "log-read" and op["type"] == "ok"]


def _holding_acknowledged(run: Run, ops: list[dict]) -> list[tuple[int, int]]:
    """(op index, record index) of every acknowledged durable write in the final read."""
    return [
        (i, j)
        for i in _final_reads(run, ops)
        for j, r in enumerate(ops[i].get("records") or [])
        if _identity(run, r) in run.acknowledged
    ]


# -- the mutations -----------------------------------------------------------------------------------------------------
def drop_write(run: Run, draw: Draw) -> Mutant | None:
    ops = copy.deepcopy(run.ops)
    held = _holding_acknowledged(run, ops)
    if not held:
        return None
    i, j = draw(held, "which acknowledged write to drop from the final read")
    gone = _identity(run, ops[i]["records"][j])
    for k in _final_reads(run, ops):
        ops[k]["records"] = [r for r in ops[k]["records"] if _identity(run, r) != gone]
    return Mutant(ops, run.scenario)


def empty_partition(run: Run, draw: Draw) -> Mutant | None:
    ops = copy.deepcopy(run.ops)
    reads = sorted({i for i, _ in _holding_acknowledged(run, ops)})
    if not reads:
        return None
    i = draw(reads, "which partition's final read to empty")
    ops[i]["records"] = []
    return Mutant(ops, run.scenario)


def cut_at_phase_end(run: Run, draw: Draw) -> Mutant | None:
    ends = [i for i, op in enumerate(run.ops) if op["f"] == "phase-end"]
    if not ends:
        return None
    return Mutant(run.ops[: draw(ends, "which phase end to cut the history before")], run.scenario)


def cut_at_line(run: Run, draw: Draw) -> Mutant | None:
    last = max((i for i, op in enumerate(run.ops) if op["f"] == "phase-end"), default=len(run.ops))
    return Mutant(run.ops[: draw(range(last), "which line to cut the history at")], run.scenario)


def cut_mid_line(run: Run, draw: Draw) -> Mutant | None:
    lines = [orjson.dumps(op) for op in run.ops]
    at = draw(range(1, len(lines)), "which line to cut in two")
    raw = b"".join(line + b"\n" for line in lines[:at]) + lines[at][: max(1, len(lines[at]) // 2)]
    return Mutant(run.ops[:at], run.scenario, raw=raw)


def delete_client(run: Run, draw: Draw) -> Mutant | None:
    declared = [c for op in run.ops if op["f"] == "declare" for c in op.get("clients") or []]
    if not declared:
        return None
    client = draw(declared, "which declared client's ops to delete")
    pattern = re.compile(client["matches"]) if client.get("matches") else None

    def mine(process: str) -> bool:
        return process == client["process"] or (pattern is not None and pattern.fullmatch(process) is not None)

    return Mutant([op for op in run.ops if not mine(op["process"])], run.scenario)


def write_after_switch(run: Run, draw: Draw) -> Mutant | None:
    """A write invoked on the source after a dr-switch, acknowledged, then never mirrored, read, nor in the source's
    log."""
    switches = [op for op in run.ops if op["f"] == "dr-switch"]
    sources = [
        op
        for op in run.ops
        if op["f"] == "send" and op["type"] == "ok" and "@" in op["process"] and op.get("offset") is not None
    ]
    if not switches or not sources:
        return None
    switch = draw(switches, "which switch to write after")
    source = draw(
        [op for op in sources if op["process"].endswith("@" + switch.get("from", ""))] or sources,
        "whose write to repeat",
    )
    highest = max(
        op["offset"]
        for op in sources
        if (op["process"], op["topic"], op["partition"]) == (source["process"], source["topic"], source["partition"])
    )
    base = {
        "process": source["process"],
        "f": "send",
        "id": 10**9,
        "topic": source["topic"],
        "key": source.get("key"),
        "value": f"{source['process']}:after-switch",
    }
    invoke = {**base, "time_ns": switch["time_ns"] + 1_000_000, "type": "invoke"}
    ok = {
        **base,
        "time_ns": switch["time_ns"] + 2_000_000,
        "type": "ok",
        "partition": source["partition"],
        "offset": highest + 1,
    }
    ops = sorted([*run.ops, invoke, ok], key=lambda op: op["time_ns"])
    return Mutant(ops, run.scenario)


# Options that would excuse a violation if any checker took them (the examples and their kin).
EXCUSES = (
    ("delivery", "lossy_writers", [".*"]),
    ("delivery", "allow_duplicates", True),
    ("semantics", "groups", []),
    ("semantics", "lossy_writers", [".*"]),
    ("order", "idempotent_producers", []),
    ("share", "delivery_count_limit", 1),
    ("share", "groups", []),
    ("share", "from_first_delivered", True),
    ("share", "lock_duration_ms", 1),
    (
        "transactions",
        "allow",
        ["aborted-read", "precommitted-read", "torn-transaction", "intermediate-read", "duplicate", "G1c"],
    ),
    ("dr", "lossy_writers", [".*"]),
    ("availability", "expect_unrecovered", ["*"]),
    ("dr", "expect_unrecovered", ["*"]),
)


def add_option(run: Run, draw: Draw) -> Mutant | None:
    """A write dropped (a loss), and an option that would excuse something set on one of the run's checkers."""
    lost = drop_write(run, draw)
    if lost is None:
        return None
    checker, option, value = draw(EXCUSES, "which option to add")
    scenario = copy.deepcopy(run.scenario)
    scenario.setdefault("checkers", {}).setdefault(checker, {})[option] = value
    return Mutant(lost.ops, scenario)


def _inflated(ops: list[dict]) -> list[dict]:
    return [
        {**op, "host": "h9", "clock_offset_ns": 0, "clock_error_ns": 10**13} if op["f"] == "client-config" else op
        for op in ops
    ]


def inflate_bound_over_loss(run: Run, draw: Draw) -> Mutant | None:
    lost = drop_write(run, draw)
    return None if lost is None else Mutant(_inflated(lost.ops), run.scenario)


def duplicate_record(run: Run, draw: Draw) -> Mutant | None:
    """An idempotent writer's acknowledged write copied to a new offset of its partition's log, and read there by a
    reader of it; not for a scenario that declares duplicates known (their KNOWN is right), nor a DR pair (mirror copies
    are counted)."""
    if run.kind in ("dr", "pipeline") or any(
        str(k.get("anomaly", "")).split(".")[-1].startswith("duplicate") for k in run.scenario.get("known") or []
    ):
        return None
    idempotent = {
        op["process"]
        for op in run.ops
        if op["f"] == "client-config"
        and {e["name"]: str(e["value"]).lower() for e in op.get("config") or []}.get("enable.idempotence") == "true"
    }
    writers = {
        (op["topic"], op["value"])
        for op in run.ops
        if op["f"] == "send" and op["type"] == "ok" and op["process"] in idempotent
    }
    ops = copy.deepcopy(run.ops)
    held = [(i, j) for i, j in _holding_acknowledged(run, ops) if _identity(run, ops[i]["records"][j]) in writers]
    polls = [k for k, op in enumerate(ops) if op["f"] == "poll" and op["type"] == "ok" and op.get("records")]
    if not held or not polls:
        return None
    i, j = draw(held, "which write to copy")
    record = ops[i]["records"][j]
    offset = max(r["offset"] for r in ops[i]["records"]) + 1
    copy_ = {**record, "offset": offset}
    ops[i]["records"].append(copy_)
    ops[i]["high_watermark"] = offset + 1
    readers = [
        k
        for k in polls
        if any((r["topic"], r.get("value")) == (record["topic"], record["value"]) for r in ops[k]["records"])
    ] or polls
    k = draw(readers, "which reader reads the copy")
    ops.insert(k + 1, {**ops[k], "time_ns": ops[k]["time_ns"] + 1, "records": [copy_]})
    return Mutant(ops, run.scenario)


def inflate_bound_over_duplicate(run: Run, draw: Draw) -> Mutant | None:
    twice = duplicate_record(run, draw)
    return None if twice is None else Mutant(_inflated(twice.ops), run.scenario)


def abort_committed(run: Run, draw: Draw) -> Mutant | None:
    """A committed transaction recorded as aborted (its end abort, its completion fail) while its writes stay in the
    log."""
    logged = {_identity(run, r) for i in _final_reads(run, run.ops) for r in run.ops[i]["records"]}
    in_log = {
        (op["process"], op["txn"])
        for op in run.ops
        if op["f"] == "send" and op.get("txn") is not None and (op["topic"], op.get("value")) in logged
    }
    committed = [
        (op["process"], op["txn"])
        for op in run.ops
        if op["f"] == "txn" and op["type"] == "ok" and (op["process"], op["txn"]) in in_log
    ]
    if not committed:
        return None
    process, txn = draw(committed, "which committed transaction to abort")
    ops = []
    for op in run.ops:
        if op.get("process") == process and op.get("txn") == txn and op["f"] == "txn" and op["type"] == "ok":
            op = {**op, "type": "fail", "error": "ABORTED_BY_MUTATION"}
        elif op.get("process") == process and op.get("txn") == txn and op["f"] == "txn-end":
            op = {**op, "end": "abort"}
        ops.append(op)
    return Mutant(ops, run.scenario)


def _app_outputs(run: Run, ops: list[dict], last: bool | None = None) -> list[tuple[int, int]]:
    """(op index, record index) of every record of an app's output topics in the final read (app runs only). ``last``:
    only the records that are (True) or are not (False) their key's last of their partition: what a ``totals``
    contract's final totals are made of."""
    outputs = {t for app in run.scenario.get("apps") or [] for t in app.get("output") or []}
    if _published_totals(run):
        outputs.add(PIPELINE_RESULTS)
    held = [
        (i, j)
        for i, op in enumerate(ops)
        if op["f"] == "log-read" and op.get("topic") in outputs
        for j, _ in enumerate(op.get("records") or [])
    ]
    if last is None:
        return held
    final: dict[tuple[int, str | None], tuple[int, int]] = {}
    for i, j in held:
        final[(i, ops[i]["records"][j].get("key"))] = (i, j)
    finals = set(final.values())
    return [h for h in held if (h in finals) == last]


def _totals(run: Run) -> bool:
    return run.scenario.get("contract", {}).get("form") == "totals" or _published_totals(run)


PIPELINE_RESULTS = "demo.sales-by-product"


def _published_totals(run: Run) -> bool:
    """A pipeline run that says how it published its totals (checkers.pipeline.published judges them: a reader keeps
    each key's last total)."""
    return run.kind == "pipeline" and any(op["f"] == "pipeline-start" and op.get("publish") for op in run.ops)


def drop_output(run: Run, draw: Draw) -> Mutant | None:
    """One record of an app's output taken out of the final read: the input it carried is then in no output (for a
    totals contract, a key's last total: its count then ends short)."""
    ops = copy.deepcopy(run.ops)
    held = _app_outputs(run, ops, last=True if _totals(run) else None)
    if not held or run.scenario.get("contract", {}).get("delivery") == "at-most-once":
        return None
    i, j = draw(held, "which output record to drop")
    del ops[i]["records"][j]
    return Mutant(ops, run.scenario)


def duplicate_output(run: Run, draw: Draw) -> Mutant | None:
    """One record of an app's output copied to a new offset of its partition: its input is then in the output twice
    (for a totals contract, an earlier total of a key published again after its last: the count goes back)."""
    ops = copy.deepcopy(run.ops)
    held = _app_outputs(run, ops, last=False if _totals(run) else None)
    if not held or run.scenario.get("contract", {}).get("delivery") == "at-least-once":
        return None
    i, j = draw(held, "which output record to copy")
    records = ops[i]["records"]
    records.append({**records[j], "offset": max(r["offset"] for r in records) + 1})
    ops[i]["high_watermark"] = records[-1]["offset"] + 1
    return Mutant(ops, run.scenario)


MUTATIONS = (
    Mutation(
        "drop-acknowledged-write", drop_write, NOT_VALID, "an acknowledged durable write taken out of the final read"
    ),
    Mutation("empty-partition", empty_partition, NOT_VALID, "a partition holding acknowledged writes read back empty"),
    Mutation(
        "cut-at-phase-end", cut_at_phase_end, frozenset({UNKNOWN}), "the history cut before one of its phase ends"
    ),
    Mutation("cut-at-line", cut_at_line, frozenset({UNKNOWN}), "the history cut at a line before its last phase end"),
    Mutation("cut-mid-line", cut_mid_line, frozenset({REFUSED}), "the history's last line cut in two"),
    Mutation("delete-declared-client", delete_client, NOT_VALID, "every op of one declared client deleted"),
    Mutation(
        "write-after-dr-switch",
        write_after_switch,
        NOT_VALID,
        "a source write acknowledged after the DR switch, never mirrored",
    ),
    Mutation(
        "add-checker-option", add_option, NOT_VALID | {REFUSED}, "a loss, and an option that would excuse a violation"
    ),
    Mutation(
        "inflate-clock-bound-over-loss",
        inflate_bound_over_loss,
        NOT_VALID,
        "a loss, every client's clock bound 10^13 ns",
    ),
    Mutation(
        "duplicate-record", duplicate_record, NOT_VALID, "an idempotent writer's write at a second offset, read there"
    ),
    Mutation(
        "inflate-clock-bound-over-duplicate",
        inflate_bound_over_duplicate,
        NOT_VALID,
        "a duplicate, every clock bound 10^13 ns",
    ),
    Mutation(
        "drop-output-record",
        drop_output,
        NOT_VALID,
        "an app's output record (a pipeline's published total) taken out of the final read",
    ),
    Mutation(
        "duplicate-output-record",
        duplicate_output,
        NOT_VALID,
        "an app's output record (a pipeline's published total) at a second offset",
    ),
    Mutation(
        "abort-committed-transaction",
        abort_committed,
        NOT_VALID,
        "a committed transaction recorded as aborted, its writes read",
    ),
)


# -- judging a mutant --------------------------------------------------------------------------------------------------
def judge(run: Run, mutant: Mutant, where: Path) -> str:
    """The verdict `failsafe check` gives the mutated run (REFUSED when it refuses the run in one line), in a run
    directory made at ``where``."""
    from failsafe.errors import UserError
    from failsafe.scenarios.kinds import kind_of_run
    from failsafe.scenarios.store.rundir import RunDir
    from failsafe.scenarios.store.stored import stored_scenario

    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    (where / "scenario.json").write_text(json.dumps(mutant.scenario))
    raw = mutant.raw if mutant.raw is not None else b"".join(orjson.dumps(op) + b"\n" for op in mutant.ops)
    (where / "history.jsonl").write_bytes(raw)
    for name in run.meta.get("extra") or []:
        (where / name).symlink_to(run.path / name)
    try:
        rd = RunDir.open(where)
        results, _ = kind_of_run(rd).judge(rd, stored_scenario(rd))
    except UserError:
        return REFUSED
    return str(
        results.get("verdict")
        or ("VALID" if results.get("valid") is True else INVALID if results.get("valid") is False else UNKNOWN)
    )
