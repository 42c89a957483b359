"""A Kafka record as kmigrate reads, writes and compares it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Record:
    """One Kafka record as kmigrate compares them: everything a consumer can see.

    ``headers`` keep their order and repeated keys; values are bytes or None.
    """

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None
    partition: int | None = None
    offset: int | None = None
