"""Placeholder: the benchmark tables are generated here (the PAGES helper replaces it)."""


def on_config(config):
    return config
