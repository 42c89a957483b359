"""Consumer group positions kmigrate has seen on the source and committed on the target."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import ColumnElement, and_, select

from kmigrate.model.groups import GroupPosition
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import group_positions


def _key(link: str, group: str, topic: str, partition: int) -> ColumnElement[bool]:
    c = group_positions.c
    return and_(c.link == link, c.group_id == group, c.topic == topic, c.partition == partition)


def positions_of(store: Store, link: str, group: str) -> list[GroupPosition]:
    c = group_positions.c
    query = select(group_positions).where(c.link == link, c.group_id == group)
    with store.reading() as conn:
        rows = list(conn.execute(query.order_by(c.topic, c.partition)))
    return [
        GroupPosition(
            r.topic, r.partition, r.source_offset, r.seen_ms, r.target_offset, r.committed_ms
        )
        for r in rows
    ]


def remember_source(
    store: Store, link: str, group: str, offsets: Iterable[tuple[str, int, int]]
) -> None:
    """Record the group's committed source offsets (topic, partition, offset) as seen now."""
    stamp = now_ms()
    with store.transaction() as conn:
        for topic, partition, offset in offsets:
            key = _key(link, group, topic, partition)
            if conn.execute(select(group_positions.c.link).where(key)).first() is None:
                conn.execute(
                    group_positions.insert().values(
                        link=link,
                        group_id=group,
                        topic=topic,
                        partition=partition,
                        source_offset=offset,
                        seen_ms=stamp,
                    )
                )
            else:
                conn.execute(
                    group_positions.update().where(key).values(source_offset=offset, seen_ms=stamp)
                )


def remember_target(
    store: Store, link: str, group: str, commits: Iterable[tuple[str, int, int, int]]
) -> None:
    """Record target commits kmigrate made: (topic, partition, source offset, target offset)."""
    commits = list(commits)
    remember_source(store, link, group, [(t, p, s) for t, p, s, _ in commits])
    stamp = now_ms()  # after the source was seen: a commit never predates what it moved
    with store.transaction() as conn:
        for topic, partition, _, target in commits:
            conn.execute(
                group_positions.update()
                .where(_key(link, group, topic, partition))
                .values(target_offset=target, committed_ms=stamp)
            )


def forget_group(store: Store, link: str, group: str) -> None:
    """Drop what kmigrate remembers of the group on this link (it moved back to the
    source): its next move starts afresh."""
    with store.transaction() as conn:
        conn.execute(
            group_positions.delete().where(
                (group_positions.c.link == link) & (group_positions.c.group_id == group)
            )
        )
