"""Each mirrored partition's progress without its offset map: what status reads.

A partition's map grows by a run at every gap (each transaction marker is one), so a
link that mirrors transactional topics for weeks holds many runs per partition; status,
the console's sampler (every few seconds) and /metrics need only the read position and
counters, one row per partition (measured: 10,000 partitions with 20 runs each read in
6.5-10 s through the maps, 0.12-0.18 s without them).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from kmigrate.store.database import Store
from kmigrate.store.schema import map_partitions


@dataclass(frozen=True)
class PartitionProgress:
    """One mirrored partition: where the mirror reads next and how it has been doing."""

    topic: str
    partition: int
    source_next: int  # the next source offset to mirror
    mirrored: int  # records written by this link
    last_timestamp: int | None  # timestamp of the last mirrored record (ms)
    updated_ms: int
    records_per_s: float  # over the partition's last batch


def progress_of(store: Store, link: str) -> list[PartitionProgress]:
    """Every mirrored partition of ``link``, by topic and partition (Python's order, the
    same on every database), in one statement."""
    columns = map_partitions.c
    query = select(
        columns.topic,
        columns.partition,
        columns.source_next,
        columns.mirrored,
        columns.last_timestamp,
        columns.updated_ms,
        columns.records_per_s,
    ).where(columns.link == link)
    with store.reading() as conn:
        found = [PartitionProgress(*row) for row in conn.execute(query)]
    return sorted(found, key=lambda p: (p.topic, p.partition))
