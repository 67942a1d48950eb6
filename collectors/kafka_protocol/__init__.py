"""Lagwatch's own Kafka protocol client, for the calls confluent-kafka lacks (share groups, log dirs)."""
