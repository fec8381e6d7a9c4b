"""Kafka clients on confluent-kafka (librdkafka): admin, produce, consume, groups."""
