"""Schema Registry contents moved with the data: subjects, versions and ids, settings
(`plan`: what to copy, pure; `copy`: reading and writing one registry; `between`: two
clusters' registries, as the CLI and the guided migration copy and compare them)."""
