"""What identifies clients and what they may do, moved between clusters with the data:
client quotas (and, next, SCRAM users and principal remapping)."""
