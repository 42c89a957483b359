"""Moving a ZooKeeper-mode Kafka cluster to another ZooKeeper ensemble (seed 003)."""
