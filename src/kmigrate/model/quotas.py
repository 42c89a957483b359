"""A client quota's entity (KIP-546): what a quota applies to, as (type, name) pairs in
Kafka's order: ``user``, ``client-id``, ``ip``; a name of None is that type's default
(``<default>`` in Kafka's tools)."""

from __future__ import annotations

Entity = tuple[tuple[str, str | None], ...]
ENTITY_TYPES = ("user", "client-id", "ip")


def entity_text(entity: Entity) -> str:
    """("user", "alice"), ("client-id", None) -> "user 'alice', client-id <default>"."""
    return ", ".join(
        f"{kind} {'<default>' if name is None else repr(name)}" for kind, name in entity
    )
