"""Verification: prove source and target hold the same records, or point at the first difference."""
