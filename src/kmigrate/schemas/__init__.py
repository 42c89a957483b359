"""Schema Registry contents moved with the data: subjects, versions and ids, settings."""
