"""kmigrate: move live Kafka workloads between clusters without losing or repeating a record."""

from kmigrate import lean_imports

__version__ = "0.1.0"

lean_imports.install()
