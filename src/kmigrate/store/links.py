"""Links and the topics each one owns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, select

from kmigrate.errors import ConflictError, NotFoundError
from kmigrate.model.links import Link, LinkTopic, StartPosition, TopicState
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import link_topics, links


def _link(row: Any) -> Link:
    return Link(
        row.name,
        row.source,
        row.target,
        row.topics,
        StartPosition.parse(row.start),
        row.replication_factor,
    )


def get_link(store: Store, name: str) -> Link | None:
    with store.reading() as conn:
        row = conn.execute(select(links).where(links.c.name == name)).first()
    return _link(row) if row else None


def require_link(store: Store, name: str) -> Link:
    link = get_link(store, name)
    if link is None:
        known = ", ".join(sorted(item.name for item in list_links(store))) or "none"
        raise NotFoundError(f"no link named '{name}' in {store.where}; known links: {known}")
    return link


def list_links(store: Store) -> list[Link]:
    with store.reading() as conn:
        return [_link(r) for r in conn.execute(select(links).order_by(links.c.name))]


def save_link(store: Store, link: Link) -> Link:
    """Create the link, or return the stored one if it has the same clusters.

    A link's clusters never change (its offset maps belong to them); its topic regex,
    start position and replication factor are updated to what the user asked now.
    """
    with store.transaction() as conn:
        row = conn.execute(select(links).where(links.c.name == link.name)).first()
        if row is None:
            conn.execute(
                links.insert().values(
                    name=link.name,
                    source=link.source,
                    target=link.target,
                    topics=link.topics,
                    start=str(link.start),
                    replication_factor=link.replication_factor,
                    created_ms=now_ms(),
                )
            )
            return link
        if (row.source, row.target) != (link.source, link.target):
            raise ConflictError(
                f"link '{link.name}' already mirrors {row.source} -> {row.target}; "
                f"choose another --link name for {link.source} -> {link.target}"
            )
        conn.execute(
            links.update()
            .where(links.c.name == link.name)
            .values(
                topics=link.topics,
                start=str(link.start),
                replication_factor=link.replication_factor,
            )
        )
    return link


def _topic(row: Any) -> LinkTopic:
    return LinkTopic(row.link, row.topic, row.partitions, TopicState(row.state))


def link_topics_of(store: Store, link: str) -> list[LinkTopic]:
    with store.reading() as conn:
        rows = conn.execute(
            select(link_topics).where(link_topics.c.link == link).order_by(link_topics.c.topic)
        )
        return [_topic(r) for r in rows]


def owner_of(store: Store, target: str, topic: str) -> str | None:
    """The link that owns ``topic`` on the ``target`` cluster, if any."""
    return owners_of(store, target, [topic]).get(topic)


def owners_of(store: Store, target: str, topics: Iterable[str]) -> dict[str, str]:
    """The link that owns each of ``topics`` on the ``target`` cluster (topics no link
    owns are left out); one query, whatever the number of topics."""
    wanted = set(topics)
    if not wanted:
        return {}
    # Every topic owned on the target, filtered here: no IN list to outgrow the
    # database's limit on bound parameters.
    query = (
        select(link_topics.c.link, link_topics.c.topic)
        .join(links, links.c.name == link_topics.c.link)
        .where(links.c.target == target)
    )
    with store.reading() as conn:
        rows = conn.execute(query).all()
    return {row.topic: row.link for row in rows if row.topic in wanted}


def put_topic(store: Store, link: str, topic: str, partitions: int, state: TopicState) -> None:
    """Add ``topic`` to ``link``, or set its partition count and state."""
    put_topics(store, [LinkTopic(link, topic, partitions, state)])


def put_topics(store: Store, topics: Iterable[LinkTopic]) -> None:
    """Add each topic to its link, or set its partition count and state: all in one
    transaction (all or none are written). The last row given for a topic wins."""
    rows = {(t.link, t.topic): t for t in topics}
    if not rows:
        return
    stamp = now_ms()
    with store.transaction() as conn:
        present = {
            (r.link, r.topic)
            for r in conn.execute(
                select(link_topics.c.link, link_topics.c.topic).where(
                    link_topics.c.link.in_({link for link, _ in rows})
                )
            )
        }
        fresh = [
            {
                "link": t.link,
                "topic": t.topic,
                "partitions": t.partitions,
                "state": t.state.value,
                "updated_ms": stamp,
            }
            for key, t in rows.items()
            if key not in present
        ]
        known = [
            {"k_link": t.link, "k_topic": t.topic, "n": t.partitions, "s": t.state.value}
            for key, t in rows.items()
            if key in present
        ]
        if fresh:
            conn.execute(link_topics.insert(), fresh)
        if known:
            conn.execute(
                link_topics.update()
                .where(
                    (link_topics.c.link == bindparam("k_link"))
                    & (link_topics.c.topic == bindparam("k_topic"))
                )
                .values(partitions=bindparam("n"), state=bindparam("s"), updated_ms=stamp),
                known,
            )


def set_topic_state(store: Store, link: str, topic: str, state: TopicState) -> None:
    with store.transaction() as conn:
        conn.execute(
            link_topics.update()
            .where((link_topics.c.link == link) & (link_topics.c.topic == topic))
            .values(state=state.value, updated_ms=now_ms())
        )
