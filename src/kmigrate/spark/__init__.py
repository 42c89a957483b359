"""Spark plumbing shared by the mirror and verification jobs."""
