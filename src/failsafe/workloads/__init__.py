"""Clients that drive a cluster and record every attempt: the verifying producer and consumers.

Each runs as a worker process of its own (``python -m failsafe.workloads.worker``) that writes its
ops as JSON lines to stdout, so a consumer can really be killed, and the runner copies the lines
into the run's history. Workloads get bootstrap servers and an op writer, never the cluster.
"""
