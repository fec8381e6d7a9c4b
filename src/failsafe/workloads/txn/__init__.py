"""Transactional clients: the transactional producer, consume-transform-produce, on confluent-kafka
and on Kafka's Java client.
"""
