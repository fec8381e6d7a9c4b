"""The share kind's checker (KIP-932): every acknowledged write accepted, every redelivery explained."""

import failsafe.checkers.share.deliveries as deliveries
from failsafe.checkers.common import CheckerInfo

CHECKERS = (CheckerInfo("share", deliveries.check, deliveries.DEFAULTS, deliveries.VIOLATIONS),)
LOSS_VIOLATIONS = ("share.lost",)
