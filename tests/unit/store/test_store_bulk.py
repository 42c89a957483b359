"""The store's bulk writes: many topics and many partition maps in one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Connection

from kmigrate.model.links import Link, LinkTopic, StartPosition, TopicState
from kmigrate.store import Store, open_store
from kmigrate.store.links import link_topics_of, owners_of, put_topics, save_link
from kmigrate.store.offsets import (
    PartitionStart,
    load_partitions,
    mapped_partitions,
    start_partition,
    start_partitions,
)

LINK = Link("a-to-b", "a", "b", "orders.*", StartPosition("earliest"))


@dataclass
class Counted:
    store: Store
    transactions: int = 0


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Counted]:
    """A real SQLite store whose transactions are counted (after the link is saved)."""
    store = open_store(f"sqlite:///{tmp_path / 'kmigrate.db'}")
    save_link(store, LINK)
    counted = Counted(store)
    original = Store.transaction

    def counting(self: Store) -> AbstractContextManager[Connection]:
        counted.transactions += 1
        return original(self)

    monkeypatch.setattr(Store, "transaction", counting)
    yield counted
    store.close()


def test_many_topics_are_put_in_one_transaction(counted: Counted) -> None:
    store = counted.store
    put_topics(
        store, [LinkTopic(LINK.name, f"t{i:03}", 3, TopicState.MIRRORING) for i in range(300)]
    )
    put_topics(
        store,
        [
            LinkTopic(LINK.name, "t000", 5, TopicState.MIRRORING),  # grew
            LinkTopic(LINK.name, "t001", 3, TopicState.SOURCE_DELETED),
            LinkTopic(LINK.name, "t300", 1, TopicState.MIRRORING),  # new
            LinkTopic(LINK.name, "t300", 2, TopicState.MIRRORING),  # the last row wins
        ],
    )
    put_topics(store, [])
    assert counted.transactions == 2
    topics = {t.topic: t for t in link_topics_of(store, LINK.name)}
    assert len(topics) == 301
    assert (topics["t000"].partitions, topics["t000"].state) == (5, TopicState.MIRRORING)
    assert topics["t001"].state is TopicState.SOURCE_DELETED
    assert topics["t300"].partitions == 2
    assert topics["t299"] == LinkTopic(LINK.name, "t299", 3, TopicState.MIRRORING)


def test_owners_of_many_topics_on_one_target(counted: Counted) -> None:
    store = counted.store
    other = Link("c-to-b", "c", "b", "x")
    elsewhere = Link("a-to-z", "a", "z", "x")
    save_link(store, other)
    save_link(store, elsewhere)
    put_topics(
        store,
        [
            LinkTopic(LINK.name, "mine", 1, TopicState.MIRRORING),
            LinkTopic(other.name, "theirs", 1, TopicState.MIRRORING),
            LinkTopic(elsewhere.name, "on-z", 1, TopicState.MIRRORING),
        ],
    )
    owners = owners_of(store, "b", ["mine", "theirs", "on-z", "nobody's"])
    assert owners == {"mine": LINK.name, "theirs": other.name}
    assert owners_of(store, "b", []) == {}


def test_many_maps_begin_in_one_transaction_and_existing_ones_stay(counted: Counted) -> None:
    store = counted.store
    start_partition(store, LINK.name, "orders", 0, source_start=7, target_start=3)
    starts = [PartitionStart("orders", p, 100 + p, 50 + p) for p in range(1_000)]
    start_partitions(store, LINK.name, [*starts, PartitionStart("orders", 5, 0, 0)])
    start_partitions(store, LINK.name, [])
    assert counted.transactions == 2
    states = {s.partition: s for s in load_partitions(store, LINK.name)}
    assert len(states) == 1_000
    assert (states[0].map.source_next, states[0].target_start) == (7, 3)  # kept
    assert (states[5].map.source_next, states[5].target_start) == (105, 55)  # first row wins
    assert states[999].map.runs == () and states[999].mirrored == 0
    assert mapped_partitions(store, LINK.name) == {("orders", p) for p in range(1_000)}
    assert mapped_partitions(store, "other-link") == set()
