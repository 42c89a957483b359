"""Real local Kafka clusters (KRaft) from Maven Central jars, for the demo and the tests."""
