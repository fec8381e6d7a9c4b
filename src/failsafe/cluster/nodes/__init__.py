"""Where a cluster's nodes run and what failsafe does to them: one NodeControl (here, on hosts),
starting, the leash, disk layers, class-data sharing, an operator's hand.
"""
