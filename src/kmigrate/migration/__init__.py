"""Guided migration: a reviewed plan, a state per topic and group, one guarded command
per step, an audit log, a lock, rollback before promote."""
