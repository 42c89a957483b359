"""A link's start-up costs the same round trips for 10 topics as for 100 (issue 33).

`sync_topology` runs on the real sandbox clusters and a real SQLite store; what is
counted are the calls the real confluent-kafka admin clients receive (through a
counting proxy) and the store's transactions. 100 topics x 10 partitions (1,000
partitions) against 10 x 10: the counts must be equal, and small. (The brokers' own
work, making 2,200 partition logs, is most of the test's time: 8 s on a quiet machine,
up to a minute with 2 cores shared by several jobs.)
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from sqlalchemy import Connection

from harness.helpers import unique, wait_for
from kmigrate.config import ClusterConfig
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.admin import connection as admin_connection
from kmigrate.kafka.records import produce
from kmigrate.mirror.topology import Assignment, sync_topology
from kmigrate.model.links import Link, StartPosition, TopicState
from kmigrate.model.records import Record
from kmigrate.store import Store, open_store
from kmigrate.store.links import link_topics_of, save_link
from kmigrate.store.offsets import load_partitions
from tests.integration.bulk_topics import create_ready
from tests.integration.conftest import Clusters

PARTITIONS = 2  # the topic count is what grows; partitions only add broker work
RETENTION = {"retention.ms": "4321000"}  # a data config the copies must carry
# What Kafka and the store are asked once per sync, whatever the topic count.
BOUNDED = ("create_topics", "list_offsets", "describe_configs", "store.transaction")


class CountingClient:
    """The real AdminClient; every method call is counted by name."""

    def __init__(self, real: AdminClient, calls: Counter[str]) -> None:
        self._real = real
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._real, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._calls[name] += 1
            return attr(*args, **kwargs)

        return counted


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts admin client calls (of admins made from now on) and store transactions."""
    counter: Counter[str] = Counter()
    real_client = admin_connection.admin_client
    real_transaction = Store.transaction

    def client(*args: Any) -> CountingClient:
        return CountingClient(real_client(*args), counter)

    def transaction(self: Store) -> AbstractContextManager[Connection]:
        counter["store.transaction"] += 1
        return real_transaction(self)

    monkeypatch.setattr(admin_connection, "admin_client", client)
    monkeypatch.setattr(Store, "transaction", transaction)
    return counter


def _bulk_create(cluster: ClusterConfig, names: list[str], configs: dict[str, str]) -> None:
    create_ready(cluster, names, PARTITIONS, configs)


@pytest.fixture
def prefixes(clusters: Clusters) -> Iterator[list[str]]:
    """Topic name prefixes; every topic under them is deleted afterwards (in bulk)."""
    made: list[str] = []
    yield made
    for cluster in (clusters.source, clusters.target):
        with ClusterAdmin(cluster) as admin:
            admin.delete_topics(
                [t.name for t in admin.list_topics() if t.name.startswith(tuple(made))]
            )


def _sync(
    clusters: Clusters, folder: Path, prefix: str, topics: int, calls: Counter[str]
) -> tuple[Store, Link, Assignment, dict[str, int]]:
    """Sync a new link of ``topics`` source topics (one in ten already empty on the
    target); returns the calls it made."""
    names = [f"{prefix}-{i:03}" for i in range(topics)]
    _bulk_create(clusters.source, names, RETENTION)
    _bulk_create(clusters.target, names[:: max(topics // 10, 1)][: topics // 10], {})
    store = open_store(f"sqlite:///{folder / 'kmigrate.db'}")
    source, target = clusters.source.name, clusters.target.name
    link = save_link(store, Link(prefix, source, target, f"{prefix}-.*", StartPosition("earliest")))
    calls.clear()
    with ClusterAdmin(clusters.source) as src, ClusterAdmin(clusters.target) as tgt:
        assignment = sync_topology(store, link, src, tgt, lambda _line: None)
    return store, link, assignment, dict(calls)


def test_start_up_round_trips_do_not_grow_with_topics(
    clusters: Clusters, tmp_path: Path, calls: Counter[str], prefixes: list[str]
) -> None:
    small, large = unique("scale-s"), unique("scale-l")
    prefixes += [small, large]
    (tmp_path / "s").mkdir()
    (tmp_path / "l").mkdir()
    began = time.monotonic()
    *_, few = _sync(clusters, tmp_path / "s", small, 10, calls)
    store, link, assignment, many = _sync(clusters, tmp_path / "l", large, 100, calls)
    print(f"10 topics: {few}\n100 topics: {many}\n({time.monotonic() - began:.1f} s)")

    assert {k: many.get(k, 0) for k in BOUNDED} == {k: few.get(k, 0) for k in BOUNDED}
    assert many["create_topics"] == 1  # one batch
    assert many["list_offsets"] <= 3  # target ends to adopt; source starts; target ends
    assert many["store.transaction"] == 2  # the topics; the partitions' maps

    # What a user cares about: every topic mirrored, shaped and configured like its source.
    assert len(assignment.pairs()) == 100 * PARTITIONS
    owned = link_topics_of(store, link.name)
    assert len(owned) == 100 and {t.state for t in owned} == {TopicState.MIRRORING}
    maps = load_partitions(store, link.name)
    assert len(maps) == 100 * PARTITIONS
    assert {(m.map.source_next, m.target_start) for m in maps} == {(0, 0)}
    with ClusterAdmin(clusters.target) as target:
        copies = target.describe_topics([t.topic for t in owned])
    assert {c.partition_count for c in copies} == {PARTITIONS}
    created = [c for c in copies if int(c.name.rsplit("-", 1)[1]) % 10]  # not adopted
    assert all(c.configs.get("retention.ms") == RETENTION["retention.ms"] for c in created)

    # A refresh that finds nothing new asks nothing more of Kafka and writes nothing.
    calls.clear()
    with ClusterAdmin(clusters.source) as src, ClusterAdmin(clusters.target) as tgt:
        again = sync_topology(store, link, src, tgt, lambda _line: None)
    assert again == assignment
    assert not any(calls[k] for k in BOUNDED), dict(calls)


def test_bulk_create_names_every_topic_that_failed_and_creates_the_rest(
    clusters: Clusters, prefixes: list[str]
) -> None:
    prefix = unique("bulk-fail")
    prefixes.append(prefix)
    taken, fine, invalid = (f"{prefix}-{n}" for n in ("taken", "fine", "invalid"))
    _bulk_create(clusters.source, [taken, fine, invalid], {})
    _bulk_create(clusters.target, [taken], {})
    with ClusterAdmin(clusters.source) as src, ClusterAdmin(clusters.target) as tgt:
        sources = src.describe_topics([taken, fine, invalid])
        broken = replace(sources[2], configs={"cleanup.policy": "no-such-policy"})
        with pytest.raises(KMigrateError) as failed:
            tgt.create_topics_like([sources[0], sources[1], broken])
        message = str(failed.value)
        assert message.startswith(
            f"2 of 3 topics could not be created on cluster '{tgt.cluster.name}'"
        )
        assert f"topic '{taken}' already exists" in message
        assert f"topic '{invalid}': " in message and "no-such-policy" in message
        assert fine not in message
        # The topic that could be created was created, as asked.
        made = wait_for(
            lambda: tgt.describe_topics_if_present([fine, invalid]),
            timeout=30,
            message=f"{fine} listed on the target",
        )
    assert [(t.name, t.partition_count) for t in made] == [(fine, PARTITIONS)]


def test_a_timestamp_start_finds_each_partitions_first_record_at_or_after_it(
    clusters: Clusters, tmp_path: Path, prefixes: list[str]
) -> None:
    """Offsets for a time, asked for all partitions at once: partition 0 has records on
    both sides of the time, partition 1 only before it (so it starts at its end)."""
    prefix = unique("from-time")
    prefixes.append(prefix)
    topic = f"{prefix}-t"
    _bulk_create(clusters.source, [topic], {})
    at = 1_700_000_000_000
    produce(
        clusters.source,
        topic,
        [
            Record(b"k", b"v", (), at + delta, p, None)
            for p, delta in [(0, -2), (0, -1), (0, 0), (0, 5), (1, -3)]
        ],
    )
    store = open_store(f"sqlite:///{tmp_path / 'kmigrate.db'}")
    start = StartPosition("timestamp", at)
    link = save_link(store, Link(prefix, "source", "target", f"{prefix}-.*", start))
    with ClusterAdmin(clusters.source) as src, ClusterAdmin(clusters.target) as tgt:
        sync_topology(store, link, src, tgt, lambda _line: None)
    starts = {s.partition: s.map.source_next for s in load_partitions(store, link.name)}
    assert starts == {0: 2, 1: 1} | {p: 0 for p in range(2, PARTITIONS)}
