"""The pipeline kind's checkers: the sink's totals against the simulator's ledger, the enriched stream, whether a run
can be judged."""
