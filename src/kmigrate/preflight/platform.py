"""A cluster's metadata mode and Kafka version, from one broker's settings (pure).

- ``process.roles`` set: KRaft; else ``zookeeper.connect`` set: ZooKeeper (with
  ``zookeeper.metadata.migration.enable``: migrating to KRaft, as `kmigrate kraft` does).
- ``inter.broker.protocol.version`` (``3.9-IV0``) gives the release line; Kafka 4.0
  removed that setting (and ZooKeeper), so a KRaft broker without it runs 4.0 or later.
  (Kafka's exact release is in no answer confluent-kafka exposes.)
"""

from __future__ import annotations

from collections.abc import Mapping

MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
UNKNOWN = "unknown"


def metadata_mode(facts: Mapping[str, str]) -> str:
    """ "KRaft", "ZooKeeper", "ZooKeeper (migrating to KRaft)" or "KRaft (migrating from
    ZooKeeper)"."""
    migrating = facts.get(MIGRATION_FLAG, "").lower() == "true"
    if facts.get("process.roles"):
        return "KRaft (migrating from ZooKeeper)" if migrating else "KRaft"
    if facts.get("zookeeper.connect"):
        return "ZooKeeper (migrating to KRaft)" if migrating else "ZooKeeper"
    return UNKNOWN


def kafka_version(facts: Mapping[str, str]) -> str:
    """ "3.9" (from inter.broker.protocol.version 3.9-IV0), "4.0 or later", or unknown."""
    ibp = facts.get("inter.broker.protocol.version")
    if ibp:
        return ibp.split("-", 1)[0]
    if facts.get("process.roles"):
        return "4.0 or later"
    return UNKNOWN
