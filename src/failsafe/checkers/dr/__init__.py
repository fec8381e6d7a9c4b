"""The DR kind's checker: what moving a workload between clusters mirrored by MirrorMaker 2 cost and broke."""

import failsafe.checkers.dr.failover as failover
from failsafe.checkers.common import CheckerInfo

CHECKERS = (CheckerInfo("dr", failover.check, failover.DEFAULTS, failover.VIOLATIONS, failover.check_options),)
LOSS_VIOLATIONS = ("dr.skipped", "dr.target-unread", "dr.never-recovered")
