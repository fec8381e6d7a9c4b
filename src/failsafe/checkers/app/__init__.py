"""The app kind's checker: what a user's application promised of its output, held against its acknowledged input."""

import failsafe.checkers.app.each as each
from failsafe.checkers.app.explain import explain_app
from failsafe.checkers.common import CheckerInfo

CHECKERS = (CheckerInfo("app", each.check, each.DEFAULTS, each.VIOLATIONS, each.check_options),)
LOSS_VIOLATIONS = ("app.lost", "app.under-counted")
# Explanations of its anomalies (checkers/explain/sentences.py asks each kind's checkers for theirs).
EXPLAINERS = {"app": explain_app}
