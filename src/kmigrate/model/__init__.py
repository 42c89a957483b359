"""Values shared by the store and the domain: plain frozen data, no I/O.

The bottom floor: imports nothing of kmigrate but errors (the layer contracts in
pyproject.toml check it).
"""
