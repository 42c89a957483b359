"""`kmigrate serve`: a REST API and Prometheus metrics over the same metadata store and
clusters.yaml the CLI uses."""
