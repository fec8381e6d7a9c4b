"""Whether a pipeline scenario's run can be judged, and whether its queries kept running: from its history alone.

The sink-against-ledger comparison is ``checkers.sales``; this checker reads what the engine and
the pipeline workload recorded: every start of the pipeline, every exit nobody asked for, the
simulator's exit, and whether the queries read to the log end before the drain timed out.

valid False: the pipeline stopped by itself (a query failed), or a partition never recovered after the heal
(checkers/liveness.py). unknown: the run cannot be judged
(the simulator did not finish cleanly, so its ledger is not complete; or the drain did not reach
the log end). True otherwise; the scenario's verdict then rests on the sink.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, Side, examples, read_options, result
from failsafe.checkers.liveness import never_recovered
from failsafe.history.model import History
from failsafe.history.ops import Op, Target

DEFAULTS: dict = {"expect_unrecovered": None}
VIOLATIONS = {"unexpected-exits": Side.CONSUMERS, "never-recovered": Side.CLUSTER}


def check(history: History, options: Mapping | None = None) -> CheckerResult:
    opts = read_options(options, DEFAULTS, "pipeline")
    events = history.events
    starts = events.filter(pl.col("f") == Op.PIPELINE_START).height
    planned_kills = history.faults.filter(pl.col("target") == Target.PIPELINE).height
    exits = events.filter(pl.col("f") == Op.PIPELINE_EXIT)
    unexpected = [
        {"exit_code": row["exit_code"], "phase": _phase_at(history, row["time_ns"]), "log": row["error"] or ""}
        for row in exits.to_dicts()
    ]
    drained_ops = events.filter(pl.col("f") == Op.DRAINED)
    drained = bool(drained_ops.height and drained_ops["ok"][-1])
    drain_s = drained_ops["drain_s"][-1] if drained_ops.height else None
    simulator = events.filter(pl.col("f") == Op.SIMULATOR_EXIT)
    simulator_exit = simulator["exit_code"][-1] if simulator.height else None

    reasons = []
    if simulator.height == 0:
        reasons.append("the history records no simulator exit, so the ledger's completeness is unknown")
    elif simulator_exit != 0:
        reasons.append(f"the simulator exited with {simulator_exit}, so its ledger is not complete")
    if not drained:
        reasons.append("the pipeline did not read up to the log end before the drain timeout")
    unrecovered = never_recovered(history, opts["expect_unrecovered"])
    violations = [
        name for name, bad in (("unexpected-exits", unexpected), ("never-recovered", unrecovered.height)) if bad
    ]
    valid = False if violations else UNKNOWN if reasons else True
    return result(
        valid,
        {
            "starts": starts,
            "planned-kills": planned_kills,
            "unexpected-exits": len(unexpected),
            "never-recovered": unrecovered.height,
        },
        {"unexpected-exits": unexpected[:5], "never-recovered": examples(unrecovered)},
        violations,
        starts=starts,
        planned_kills=planned_kills,
        unexpected_exits=unexpected,
        drained=drained,
        drain_s=drain_s,
        simulator_exit=simulator_exit,
        reasons=reasons,
    )


def _phase_at(history: History, time_ns: int) -> str | None:
    before = history.phases.filter(pl.col("time_ns") <= time_ns)
    return before["phase"][-1] if before.height else None
