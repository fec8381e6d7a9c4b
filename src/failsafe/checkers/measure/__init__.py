"""Measurements that are not verdicts: what each fault cost, where a failover's time went, write
stalls.
"""
