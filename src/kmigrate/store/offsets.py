"""Offset maps: each mirrored partition's runs, read position and progress.

A batch's runs, read positions and counters are written in one transaction
(``record_batch``): the mirror counts a batch as done only after it returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Connection, Table, and_, bindparam, func, select

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
    """Make one batch durable: new runs, read positions and counters, atomically.

    A constant number of statements whatever the number of partitions: the batch's
    map headers and last runs are read in one query each, and the changes written with
    one executemany per kind (run merged, run added, header moved on).
    """
    updates = list(updates)
    if not updates:
        return
    stamp = now_ms()
    topics = sorted({u.topic for u in updates})
    with store.transaction() as conn:
        headers = _headers_of(conn, link, topics)
        lasts = _last_runs_of(conn, link, topics)
        merged: list[dict[str, Any]] = []
        added: list[dict[str, Any]] = []
        moved: list[dict[str, Any]] = []
        for update in updates:
            key = (update.topic, update.partition)
            runs = list(update.runs)
            last = lasts.get(key)
            if last is not None and runs:
                previous = OffsetRun(last.source_start, last.target_start, last.length)
                joined = coalesce([previous, runs[0]])
                if len(joined) == 1:
                    merged.append({"run_id": last.id, "new_length": joined[0].length})
                    runs = runs[1:]
            added += [
                {
                    "link": link,
                    "topic": update.topic,
                    "partition": update.partition,
                    "source_start": run.source_start,
                    "target_start": run.target_start,
                    "length": run.length,
                }
                for run in runs
            ]
            moved.append(_moved(headers[key], update, stamp))
        if merged:
            conn.execute(
                offset_runs.update()
                .where(offset_runs.c.id == bindparam("run_id"))
                .values(length=bindparam("new_length")),
                merged,
            )
        if added:
            conn.execute(offset_runs.insert(), added)
        conn.execute(_HEADER_MOVE, moved)


_HEADER_MOVE = (
    map_partitions.update()
    .where(
        and_(
            map_partitions.c.link == bindparam("key_link"),
            map_partitions.c.topic == bindparam("key_topic"),
            map_partitions.c.partition == bindparam("key_partition"),
        )
    )
    .values(
        source_next=bindparam("new_next"),
        mirrored=bindparam("new_mirrored"),
        records_per_s=bindparam("new_rate"),
        updated_ms=bindparam("new_updated"),
        last_timestamp=bindparam("new_timestamp"),
    )
)


def _moved(header: Any, update: PartitionUpdate, stamp: int) -> dict[str, Any]:
    written = sum(r.length for r in update.runs)
    elapsed_s = max(stamp - header.updated_ms, 1) / 1000
    timestamp = update.last_timestamp
    return {
        "key_link": header.link,
        "key_topic": update.topic,
        "key_partition": update.partition,
        "new_next": update.source_next,
        "new_mirrored": header.mirrored + written,
        "new_rate": written / elapsed_s,
        "new_updated": stamp,
        "new_timestamp": header.last_timestamp if timestamp is None else timestamp,
    }


def _headers_of(conn: Connection, link: str, topics: list[str]) -> dict[tuple[str, int], Any]:
    rows = conn.execute(
        select(map_partitions).where(
            map_partitions.c.link == link, map_partitions.c.topic.in_(topics)
        )
    )
    return {(r.topic, r.partition): r for r in rows}


def _last_runs_of(conn: Connection, link: str, topics: list[str]) -> dict[tuple[str, int], Any]:
    """Each partition's run with the highest source start (one query, on the index)."""
    runs = offset_runs
    latest = (
        select(runs.c.topic, runs.c.partition, func.max(runs.c.source_start).label("start"))
        .where(runs.c.link == link, runs.c.topic.in_(topics))
        .group_by(runs.c.topic, runs.c.partition)
        .subquery()
    )
    rows = conn.execute(
        select(runs)
        .join(
            latest,
            and_(
                runs.c.topic == latest.c.topic,
                runs.c.partition == latest.c.partition,
                runs.c.source_start == latest.c.start,
            ),
        )
        .where(runs.c.link == link)
    )
    return {(r.topic, r.partition): r for r in rows}


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
