"""Kafka access outside Spark. Only this package calls Kafka clients."""

from kmigrate.kafka.admin import ClusterAdmin

__all__ = ["ClusterAdmin"]
