"""The txn kind's checkers: what readers and the final log saw of each transaction, the dependency graph's cycles, what
each fault cost the transactional writers."""

import failsafe.checkers.txn.transactions as transactions
from failsafe.checkers.common import CheckerInfo

CHECKERS = (CheckerInfo("transactions", transactions.check, transactions.DEFAULTS, transactions.VIOLATIONS),)
# a torn transaction is half in the log: of a committed one, a write its commit covered is gone
LOSS_VIOLATIONS = ("transactions.lost-write", "transactions.torn-transaction")
