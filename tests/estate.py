"""A link of many topics in a store, without running a mirror: the rows `put_topic` and
`start_partition` write (every partition mapped from offset 0, nothing mirrored yet),
all in one transaction. Those functions write one row per transaction, and a store of
1,000 partitions built through them takes half a minute of fsyncs."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import insert

from kmigrate.model.links import TopicState
from kmigrate.store import Store
from kmigrate.store.database import now_ms
from kmigrate.store.schema import link_topics, map_partitions


def add_topics(
    store: Store, link: str, topics: Mapping[str, int], state: TopicState = TopicState.MIRRORING
) -> None:
    """``topics`` (name -> partition count) join the stored ``link``, each partition
    mapped from source and target offset 0, as a mirror's first look at them leaves it."""
    stamp = now_ms()
    with store.transaction() as conn:
        conn.execute(
            insert(link_topics),
            [
                {
                    "link": link,
                    "topic": t,
                    "partitions": n,
                    "state": state.value,
                    "updated_ms": stamp,
                }
                for t, n in topics.items()
            ],
        )
        conn.execute(
            insert(map_partitions),
            [
                {
                    "link": link,
                    "topic": t,
                    "partition": p,
                    "source_start": 0,
                    "source_next": 0,
                    "target_start": 0,
                    "mirrored": 0,
                    "last_timestamp": None,
                    "records_per_s": 0.0,
                    "updated_ms": stamp,
                }
                for t, n in topics.items()
                for p in range(n)
            ],
        )
