"""`kmigrate serve`: a REST API and Prometheus metrics over the same metadata store and
clusters.yaml the CLI uses."""

# How often the sampler reads the clusters by default (`kmigrate serve --interval`): here,
# so that the command's --help names it without loading the sampler and its clients.
EVERY_S = 2.0
