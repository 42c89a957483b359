"""Schema Registries (Confluent REST API): reading and writing schemas, ids, settings."""
