"""What a cluster holds, read for the operator: its brokers, its topics with their
offsets and record counts, its consumer groups with their lag. Read-only use cases
behind `clusters describe`, `topics` and `groups list|describe`; each takes an admin
client opened by the caller and returns values the front ends render."""
