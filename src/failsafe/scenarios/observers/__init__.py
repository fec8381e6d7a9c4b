"""What the engine watches beside a run: the controller, metrics, node logs, the topology from
outside, the operator, client logs.
"""
