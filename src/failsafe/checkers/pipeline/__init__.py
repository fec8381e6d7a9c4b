"""The pipeline kind's checkers: the sink's totals against the simulator's ledger, the totals published to Kafka, the
enriched stream, whether a run can be judged."""

import failsafe.checkers.pipeline.enriched as enriched
import failsafe.checkers.pipeline.judgeable as judgeable
import failsafe.checkers.pipeline.published as published
import failsafe.checkers.pipeline.sales as sales
from failsafe.checkers.common import CheckerInfo, Side

CHECKERS = (
    CheckerInfo("pipeline", judgeable.check, judgeable.DEFAULTS, judgeable.VIOLATIONS),
    CheckerInfo("sales", None, {}, {name: Side.PRODUCERS for name in sales.ANOMALIES}),
    CheckerInfo("enriched", None, enriched.DEFAULTS, enriched.VIOLATIONS),
    CheckerInfo("published", None, {}, {name: Side.PRODUCERS for name in published.VIOLATIONS}),
)
LOSS_VIOLATIONS = (
    "sales.missing_windows",
    "sales.undercounted",
    "sales.dead_letters_missing",
    "pipeline.never-recovered",
    "enriched.missing",
    "published.missing_windows",
    "published.undercounted",
)
