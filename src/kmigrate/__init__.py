"""kmigrate: move live Kafka workloads between clusters without losing or repeating a record."""

__version__ = "0.1.0"
