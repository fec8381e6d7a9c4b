"""The txn kind's checkers: what readers and the final log saw of each transaction, the dependency graph's cycles, what
each fault cost the transactional writers."""
