"""What failsafe sees of a cluster: metrics, node logs, status, readiness, coordinators, the
operator's journal.
"""
