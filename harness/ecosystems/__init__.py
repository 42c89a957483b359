"""Test clients from other ecosystems, built from source in this folder (franz-go, Go)."""
