"""The pipeline kind's checkers: the sink's totals against the simulator's ledger, the enriched stream, whether a run
can be judged."""

import failsafe.checkers.pipeline.enriched as enriched
import failsafe.checkers.pipeline.judgeable as judgeable
import failsafe.checkers.pipeline.sales as sales
from failsafe.checkers.common import CheckerInfo, Side

CHECKERS = (
    CheckerInfo("pipeline", judgeable.check, judgeable.DEFAULTS, judgeable.VIOLATIONS),
    CheckerInfo("sales", None, {}, {name: Side.PRODUCERS for name in sales.ANOMALIES}),
    CheckerInfo("enriched", None, enriched.DEFAULTS, enriched.VIOLATIONS),
)
LOSS_VIOLATIONS = (
    "sales.missing_windows",
    "sales.undercounted",
    "sales.dead_letters_missing",
    "pipeline.never-recovered",
    "enriched.missing",
)
