"""The gateway: a Kafka-protocol endpoint in front of several backend clusters."""
