"""The KRaft conversion: a ZooKeeper-mode cluster to KRaft (KIP-866), phase by phase."""
