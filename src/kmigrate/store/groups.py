"""Consumer group positions kmigrate has seen on the source and committed on the target.

The bulk functions (``positions_by_group``, ``remember_sources``, ``remember_targets``)
read or write any number of groups in one store round: one query, or one transaction
of a few multi-row statements.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, and_, bindparam, select

from kmigrate.model.groups import GroupPosition
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import group_positions

# (topic, partition, source offset) and (topic, partition, source offset, target offset)
SourceCommit = tuple[str, int, int]
TargetCommit = tuple[str, int, int, int]
# Group ids per ``IN (...)``: far below any database's limit on bound parameters.
_CHUNK = 500


def positions_of(store: Store, link: str, group: str) -> list[GroupPosition]:
    return positions_by_group(store, link, [group]).get(group, [])


def positions_by_group(
    store: Store, link: str, groups: Iterable[str] | None = None
) -> dict[str, list[GroupPosition]]:
    """What kmigrate remembers of each group on ``link`` (every group if ``groups`` is
    None), ordered by topic and partition; groups it never saw are left out."""
    c = group_positions.c
    query = select(group_positions).where(c.link == link)
    order = (c.group_id, c.topic, c.partition)
    found: dict[str, list[GroupPosition]] = {}
    with store.reading() as conn:
        if groups is None:
            rows = list(conn.execute(query.order_by(*order)))
        else:
            names = sorted(set(groups))
            rows = [
                r
                for i in range(0, len(names), _CHUNK)
                for r in conn.execute(
                    query.where(c.group_id.in_(names[i : i + _CHUNK])).order_by(*order)
                )
            ]
    for r in rows:
        found.setdefault(r.group_id, []).append(
            GroupPosition(
                r.topic, r.partition, r.source_offset, r.seen_ms, r.target_offset, r.committed_ms
            )
        )
    return found


def remember_source(store: Store, link: str, group: str, offsets: Iterable[SourceCommit]) -> None:
    """Record the group's committed source offsets (topic, partition, offset) as seen now."""
    remember_sources(store, link, {group: offsets})


def remember_sources(
    store: Store, link: str, commits: Mapping[str, Iterable[SourceCommit]]
) -> None:
    """Record each group's committed source offsets as seen now, in one transaction."""
    rows = _rows(commits)
    if not rows:
        return
    stamp = now_ms()
    with store.transaction() as conn:
        _upsert_sources(conn, link, rows, stamp)


def remember_target(store: Store, link: str, group: str, commits: Iterable[TargetCommit]) -> None:
    """Record target commits kmigrate made: (topic, partition, source offset, target offset)."""
    remember_targets(store, link, {group: commits})


def remember_targets(
    store: Store, link: str, commits: Mapping[str, Iterable[TargetCommit]]
) -> None:
    """Record every group's target commits kmigrate made, with the source offsets they
    translate, in one transaction."""
    rows = _rows(commits)
    if not rows:
        return
    seen = now_ms()
    with store.transaction() as conn:
        _upsert_sources(conn, link, rows, seen)
        stamp = now_ms()  # after the source was seen: a commit never predates what it moved
        conn.execute(
            group_positions.update()
            .where(_bound_key(link))
            .values(target_offset=bindparam("to"), committed_ms=stamp),
            [{"g": r["g"], "t": r["t"], "p": r["p"], "to": r["to"]} for r in rows],
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


def _rows(commits: Mapping[str, Iterable[tuple[Any, ...]]]) -> list[dict[str, Any]]:
    """One parameter row per (group, topic, partition), ``so`` its source offset and
    ``to`` its target offset if given; the last commit of a key wins."""
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    for group, offsets in commits.items():
        for topic, partition, source, *target in offsets:
            row = {"g": group, "t": topic, "p": partition, "so": source}
            rows[(group, topic, partition)] = row | ({"to": target[0]} if target else {})
    return list(rows.values())


def _bound_key(link: str) -> Any:
    c = group_positions.c
    return and_(
        c.link == link,
        c.group_id == bindparam("g"),
        c.topic == bindparam("t"),
        c.partition == bindparam("p"),
    )


def _upsert_sources(conn: Connection, link: str, rows: list[dict[str, Any]], stamp: int) -> None:
    """Update the source offset of the keys the store has, insert the others: two
    multi-row statements after one read of the groups' keys."""
    c = group_positions.c
    groups = sorted({row["g"] for row in rows})
    present = {
        (r.group_id, r.topic, r.partition)
        for i in range(0, len(groups), _CHUNK)
        for r in conn.execute(
            select(c.group_id, c.topic, c.partition).where(
                c.link == link, c.group_id.in_(groups[i : i + _CHUNK])
            )
        )
    }
    old = [row for row in rows if (row["g"], row["t"], row["p"]) in present]
    new = [row for row in rows if (row["g"], row["t"], row["p"]) not in present]
    if old:
        conn.execute(
            group_positions.update()
            .where(_bound_key(link))
            .values(source_offset=bindparam("so"), seen_ms=stamp),
            [{"g": r["g"], "t": r["t"], "p": r["p"], "so": r["so"]} for r in old],
        )
    if new:
        conn.execute(
            group_positions.insert(),
            [
                {
                    "link": link,
                    "group_id": r["g"],
                    "topic": r["t"],
                    "partition": r["p"],
                    "source_offset": r["so"],
                    "seen_ms": stamp,
                }
                for r in new
            ],
        )
