"""The store's bulk writes on a real PostgreSQL server (many rows per statement)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.helpers import unique
from kmigrate.model.links import Link, LinkTopic, StartPosition, TopicState
from kmigrate.store import Store, open_store
from kmigrate.store.links import link_topics_of, owners_of, put_topics, save_link
from kmigrate.store.offsets import (
    PartitionStart,
    load_partitions,
    mapped_partitions,
    start_partitions,
)

BIG = 3 * 2**31 + 7  # offsets past a 32-bit integer


@pytest.fixture
def store(postgres_url: str) -> Iterator[Store]:
    store = open_store(postgres_url)
    yield store
    store.close()


def test_many_topics_and_maps_written_and_rewritten(store: Store) -> None:
    link = save_link(
        store, Link(unique("bulk"), "a", unique("target"), "t.*", StartPosition("earliest"))
    )
    put_topics(
        store, [LinkTopic(link.name, f"t{i:04}", 2, TopicState.MIRRORING) for i in range(1_000)]
    )
    put_topics(
        store,
        [
            LinkTopic(link.name, "t0000", 4, TopicState.MIRRORING),
            LinkTopic(link.name, "t0001", 2, TopicState.SOURCE_DELETED),
        ],
    )
    topics = {t.topic: t for t in link_topics_of(store, link.name)}
    assert len(topics) == 1_000 and topics["t0000"].partitions == 4
    assert topics["t0001"].state is TopicState.SOURCE_DELETED
    assert owners_of(store, link.target, ["t0002", "elsewhere"]) == {"t0002": link.name}

    starts = [PartitionStart(f"t{i:04}", p, BIG + p, p) for i in range(1_000) for p in range(2)]
    start_partitions(store, link.name, starts[:10])
    start_partitions(store, link.name, [PartitionStart("t0000", 0, 1, 1), *starts])
    assert len(mapped_partitions(store, link.name)) == 2_000
    first = load_partitions(store, link.name, "t0000")[0]
    assert (first.map.source_next, first.target_start) == (BIG, 0)  # the first start stays
