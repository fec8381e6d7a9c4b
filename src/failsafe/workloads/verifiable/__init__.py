"""Kafka's own Java verifiable clients as workloads, here or on a host of the inventory."""
