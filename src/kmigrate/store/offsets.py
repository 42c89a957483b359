"""Offset maps: each mirrored partition's runs, read position and progress.

A batch's runs, read positions and counters are written in one transaction
(``record_batch``): the mirror counts a batch as done only after it returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Connection, Table, and_, select

from kmigrate.model.links import Gap, PartitionState
from kmigrate.model.offsets import OffsetRun, PartitionOffsetMap, PartitionUpdate, coalesce
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import gaps, group_positions, link_topics, map_partitions, offset_runs


class PartitionStart(NamedTuple):
    """Where a partition's map begins: the source offset it is read from and the
    target partition's end offset at that moment."""

    topic: str
    partition: int
    source_start: int
    target_start: int


def start_partition(
    store: Store, link: str, topic: str, partition: int, source_start: int, target_start: int
) -> None:
    """Begin the map of a partition the link has never mirrored (no-op if it exists)."""
    start_partitions(store, link, [PartitionStart(topic, partition, source_start, target_start)])


def start_partitions(store: Store, link: str, starts: Iterable[PartitionStart]) -> None:
    """Begin the maps of many partitions in one transaction; a partition whose map
    exists already is left as it is (so is a repeat within ``starts``)."""
    rows = list(starts)
    if not rows:
        return
    stamp = now_ms()
    with store.transaction() as conn:
        known = _mapped(conn, link)
        fresh = []
        for row in rows:
            if (row.topic, row.partition) in known:
                continue
            known.add((row.topic, row.partition))
            fresh.append(
                {
                    "link": link,
                    "topic": row.topic,
                    "partition": row.partition,
                    "source_start": row.source_start,
                    "source_next": row.source_start,
                    "target_start": row.target_start,
                    "mirrored": 0,
                    "last_timestamp": None,
                    "records_per_s": 0.0,
                    "updated_ms": stamp,
                }
            )
        if fresh:
            conn.execute(map_partitions.insert(), fresh)


def mapped_partitions(store: Store, link: str) -> set[tuple[str, int]]:
    """The (topic, partition) of every partition whose map the link has begun."""
    with store.reading() as conn:
        return _mapped(conn, link)


def _mapped(conn: Connection, link: str) -> set[tuple[str, int]]:
    query = select(map_partitions.c.topic, map_partitions.c.partition).where(
        map_partitions.c.link == link
    )
    return {(row.topic, row.partition) for row in conn.execute(query)}


def _of_partition(table: Table, link: str, topic: str, partition: int) -> ColumnElement[bool]:
    return and_(table.c.link == link, table.c.topic == topic, table.c.partition == partition)


def _header(conn: Connection, link: str, topic: str, partition: int) -> Any:
    where = _of_partition(map_partitions, link, topic, partition)
    return conn.execute(select(map_partitions).where(where)).first()


def load_partitions(store: Store, link: str, topic: str | None = None) -> list[PartitionState]:
    """Every mirrored partition of the link (or of one topic) with its full map.

    One statement (headers joined with their runs), so a reader sees one batch's state
    even while the mirror records the next: SQLite outside an explicit transaction, and
    PostgreSQL at READ COMMITTED, give each statement its own snapshot.
    """
    runs = offset_runs
    joined = map_partitions.outerjoin(
        runs,
        and_(
            runs.c.link == map_partitions.c.link,
            runs.c.topic == map_partitions.c.topic,
            runs.c.partition == map_partitions.c.partition,
        ),
    )
    query = (
        select(
            map_partitions,
            runs.c.source_start.label("run_source"),
            runs.c.target_start.label("run_target"),
            runs.c.length.label("run_length"),
        )
        .select_from(joined)
        .where(map_partitions.c.link == link)
        .order_by(map_partitions.c.topic, map_partitions.c.partition, runs.c.source_start)
    )
    if topic is not None:
        query = query.where(map_partitions.c.topic == topic)
    with store.reading() as conn:
        rows = list(conn.execute(query))
    headers: dict[tuple[str, int], Any] = {}
    by_partition: dict[tuple[str, int], list[OffsetRun]] = defaultdict(list)
    for row in rows:
        key = (row.topic, row.partition)
        headers.setdefault(key, row)
        if row.run_source is not None:
            by_partition[key].append(OffsetRun(row.run_source, row.run_target, row.run_length))
    states = [
        PartitionState(
            h.topic,
            h.partition,
            PartitionOffsetMap(tuple(by_partition[key]), h.source_next, h.source_start),
            h.target_start,
            h.mirrored,
            h.last_timestamp,
            h.updated_ms,
            h.records_per_s,
        )
        for key, h in headers.items()
    ]
    return sorted(states, key=lambda s: (s.topic, s.partition))


def record_batch(store: Store, link: str, updates: Iterable[PartitionUpdate]) -> None:
    """Make one batch durable: new runs, read positions and counters, atomically."""
    stamp = now_ms()
    with store.transaction() as conn:
        for update in updates:
            _apply(conn, link, update, stamp)


def _apply(conn: Connection, link: str, update: PartitionUpdate, stamp: int) -> None:
    where = _of_partition(offset_runs, link, update.topic, update.partition)
    runs = list(update.runs)
    last = conn.execute(
        select(offset_runs).where(where).order_by(offset_runs.c.source_start.desc()).limit(1)
    ).first()
    if last is not None and runs:
        previous = OffsetRun(last.source_start, last.target_start, last.length)
        merged = coalesce([previous, runs[0]])
        if len(merged) == 1:
            conn.execute(
                offset_runs.update()
                .where(offset_runs.c.id == last.id)
                .values(length=merged[0].length)
            )
            runs = runs[1:]
    for run in runs:
        conn.execute(
            offset_runs.insert().values(
                link=link,
                topic=update.topic,
                partition=update.partition,
                source_start=run.source_start,
                target_start=run.target_start,
                length=run.length,
            )
        )
    written = sum(r.length for r in update.runs)
    header: Any = _header(conn, link, update.topic, update.partition)
    elapsed_s = max(stamp - header.updated_ms, 1) / 1000
    values: dict[str, object] = {
        "source_next": update.source_next,
        "mirrored": header.mirrored + written,
        "records_per_s": written / elapsed_s,
        "updated_ms": stamp,
    }
    if update.last_timestamp is not None:
        values["last_timestamp"] = update.last_timestamp
    conn.execute(
        map_partitions.update()
        .where(_of_partition(map_partitions, link, update.topic, update.partition))
        .values(**values)
    )


def record_gap(store: Store, link: str, gap: Gap) -> None:
    """Remember a gap once; seeing it again (after a restart) only widens it."""
    with store.transaction() as conn:
        key = and_(
            _of_partition(gaps, link, gap.topic, gap.partition),
            gaps.c.source_start == gap.source_start,
        )
        row = conn.execute(select(gaps).where(key)).first()
        if row is not None:
            if gap.source_end > row.source_end:
                conn.execute(gaps.update().where(key).values(source_end=gap.source_end))
            return
        conn.execute(
            gaps.insert().values(
                link=link,
                topic=gap.topic,
                partition=gap.partition,
                source_start=gap.source_start,
                source_end=gap.source_end,
                reason=gap.reason,
                detected_ms=now_ms(),
            )
        )


def gaps_of(store: Store, link: str) -> list[Gap]:
    with store.reading() as conn:
        rows = conn.execute(
            select(gaps).where(gaps.c.link == link).order_by(gaps.c.topic, gaps.c.partition)
        )
        return [Gap(r.topic, r.partition, r.source_start, r.source_end, r.reason) for r in rows]


def forget_topic(store: Store, link: str, topic: str) -> None:
    """Drop everything the link knows of ``topic`` (its map, gaps, group positions and
    its place in the link): the next mirror of it starts from scratch."""
    with store.transaction() as conn:
        for table in (offset_runs, map_partitions, gaps, group_positions):
            conn.execute(table.delete().where((table.c.link == link) & (table.c.topic == topic)))
        conn.execute(
            link_topics.delete().where(
                (link_topics.c.link == link) & (link_topics.c.topic == topic)
            )
        )
