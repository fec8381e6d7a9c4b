"""The kind kit: what scenario kinds compose instead of inheriting from one another.

    clients.py   the verifying producers and consumers (ProducerGroup, ConsumerGroup), the topics, their parsing and
                 validation, and ClientsScenario, the scenario fields every kind with those clients has
    workload.py  ClientsWorkload: those clients as worker processes (setup, start, drain, the client faults)
    judging.py   a kind whose runs are judged from their history: its judge, terminal summary and report

The lab kind is the kit alone (kinds/lab/); txn, share and dr add their own clients and fields to it.
"""
