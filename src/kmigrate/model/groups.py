"""Where a consumer group stood: its source commit seen and kmigrate's target commit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GroupPosition:
    """One partition of a group: its last source commit seen, and kmigrate's target commit."""

    topic: str
    partition: int
    source_offset: int
    seen_ms: int
    target_offset: int | None = None
    committed_ms: int | None = None
