"""The phases of a migration to KRaft, in order (`kraft migrate --until`): the
controllers provisioned, roll 1 (brokers into migration mode), dual-write (the
metadata migrated, the controllers writing ZooKeeper too), roll 2 (brokers into KRaft).
Finalizing is a command of its own. Nothing to import: `kmigrate kraft --help` offers
them without loading the conversion."""

from __future__ import annotations

PHASES = ("controllers", "roll1", "dual-write", "roll2")
