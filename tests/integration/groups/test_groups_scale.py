"""Hundreds of groups move in a constant number of round trips, each exactly to its
translation through the offset map, and the per-group guards still hold among them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from harness.helpers import run_cli, unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.errors import GroupMovedOnError
from kmigrate.groups.migrate_many import migrate_groups
from kmigrate.groups.sync import sync_round
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.store import store_for
from kmigrate.store.links import require_link
from kmigrate.store.offsets import load_partitions
from tests.integration.conftest import Clusters
from tests.integration.groups.conftest import LINK, topic_of
from tests.integration.groups.round_trips import RoundTrips, counting
from tests.integration.mirror.harness import MirrorProcess, wait_caught_up

Positions = dict[str, dict[tuple[str, int], int]]
SMALL, LARGE = 20, 200
PARTITIONS = 3  # of topic_of("plain"), 1,000 records each
COMMIT = "alter_consumer_group_offsets"
# A round that waits through more answers than this one after the other has gone back
# to asking group by group.
MOST_WAVES = 10


def _groups(kind: str, n: int) -> list[str]:
    prefix = unique(kind)
    return [f"{prefix}-{i:03d}" for i in range(n)]


def _commit(cluster: ClusterConfig, positions: Positions) -> None:
    """Commit with a plain client of its own (all requests in flight), not kmigrate's."""
    client = AdminClient(cluster.as_librdkafka())
    futures = {}
    for group, offsets in positions.items():
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        futures.update(
            client.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
        )
    for future in futures.values():
        future.result(60)


def _at_source(clusters: Clusters, groups: list[str], shift: int = 0) -> Positions:
    """Each group at a position of its own on the source."""
    topic = topic_of("plain")
    positions = {
        g: {(topic, p): (i * 7 + p * 13 + shift) % 900 for p in range(PARTITIONS)}
        for i, g in enumerate(groups)
    }
    _commit(clusters.source, positions)
    return positions


def _on_target(cluster: ClusterConfig, groups: list[str]) -> Positions:
    client = AdminClient(cluster.as_librdkafka())
    futures = {}
    for group in groups:
        futures.update(client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]))
    return {
        group: {
            (tp.topic, tp.partition): tp.offset
            for tp in future.result(60).topic_partitions
            if tp.offset >= 0
        }
        for group, future in futures.items()
    }


def _translated(config: Path, positions: Positions) -> Positions:
    store = store_for(load_settings(config))
    states = {(s.topic, s.partition): s for s in load_partitions(store, LINK)}
    return {
        group: {
            k: states[k].map.translate(o, states[k].target_start).target_offset
            for k, o in offsets.items()
        }
        for group, offsets in positions.items()
    }


def _besides_commits(trips: RoundTrips) -> dict[str, int]:
    return {name: n for name, n in trips.calls.items() if name != COMMIT}


@contextmanager
def _member(cluster: ClusterConfig, topic: str, group: str) -> Iterator[None]:
    """An active member of ``group`` (joined, assigned, never committing)."""
    consumer = Consumer({**cluster.as_librdkafka(), "group.id": group, "enable.auto.commit": False})
    consumer.subscribe([topic])
    wait_for(
        lambda: consumer.poll(0.2) is not None or consumer.assignment(),
        timeout=60,
        message=f"consumer joined {group}",
    )
    try:
        yield
    finally:
        consumer.close()


def test_migrate_moves_hundreds_of_groups_exactly_in_constant_round_trips(
    mirror: MirrorProcess, clusters: Clusters, monkeypatch: pytest.MonkeyPatch
) -> None:
    wait_caught_up(mirror, clusters.source, [topic_of("plain")])
    store = store_for(load_settings(mirror.config))
    link = require_link(store, LINK)
    trips: dict[int, RoundTrips] = {}
    for n in (SMALL, LARGE):
        groups = _groups(f"g-many{n}", n)
        positions = _at_source(clusters, groups)
        with (
            counting(monkeypatch) as counted,
            ClusterAdmin(clusters.source) as source,
            ClusterAdmin(clusters.target) as target,
        ):
            moved = migrate_groups(store, link, groups, source, target, apply=True)
        assert moved.applied == groups
        assert _on_target(clusters.target, groups) == _translated(mirror.config, positions)
        trips[n] = counted

    small, large = trips[SMALL], trips[LARGE]
    # OffsetCommit names one group (protocol): one request per group, all in one wave.
    assert small.calls[COMMIT] == SMALL and large.calls[COMMIT] == LARGE
    # Everything else does not grow with the groups; a coordinator that answers "not
    # ready" once may cost one more wave and call.
    assert large.waves <= small.waves + 1 <= MOST_WAVES, (small.waves, large.waves)
    for name, n in _besides_commits(large).items():
        assert n <= _besides_commits(small).get(name, 0) + 1, (name, small.calls, large.calls)

    # One group consumed on the target since; the others moved on on the source: the one
    # refusal stops all of them and nothing changes on the target.
    before = _on_target(clusters.target, groups)
    moved_on = groups[5]
    _commit(clusters.target, {moved_on: {k: o + 1 for k, o in before[moved_on].items()}})
    _at_source(clusters, groups, shift=50)
    with (
        ClusterAdmin(clusters.source) as source,
        ClusterAdmin(clusters.target) as target,
        pytest.raises(GroupMovedOnError, match=f"1 of {LARGE} consumer groups"),
    ):
        migrate_groups(store, link, groups, source, target, apply=True)
    after = _on_target(clusters.target, groups)
    assert after[moved_on] == {k: o + 1 for k, o in before[moved_on].items()}
    assert {g: o for g, o in after.items() if g != moved_on} == {
        g: o for g, o in before.items() if g != moved_on
    }


def test_a_sync_round_commits_hundreds_of_groups_and_leaves_guarded_ones_alone(
    mirror: MirrorProcess, clusters: Clusters, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = topic_of("plain")
    wait_caught_up(mirror, clusters.source, [topic])
    store = store_for(load_settings(mirror.config))
    link = require_link(store, LINK)
    groups = _groups("g-syncmany", LARGE)
    pattern = re.compile(re.escape(groups[0].rsplit("-", 1)[0]) + "-.*")
    positions = _at_source(clusters, groups)
    with (
        counting(monkeypatch) as counted,
        ClusterAdmin(clusters.source) as source,
        ClusterAdmin(clusters.target) as target,
    ):
        first = sync_round(store, link, pattern, source, target)
    assert sorted(g.group for g in first.groups if g.updated == PARTITIONS) == groups
    assert _on_target(clusters.target, groups) == _translated(mirror.config, positions)
    assert counted.calls[COMMIT] == LARGE
    assert counted.waves <= MOST_WAVES, counted.calls

    # The groups move on on the source. Meanwhile one group has a consumer on the target,
    # and another consumed there since the last round: both are left alone.
    busy, moved_on = groups[3], groups[7]
    before = _on_target(clusters.target, groups)
    _commit(clusters.target, {moved_on: {k: o + 1 for k, o in before[moved_on].items()}})
    moved = _at_source(clusters, groups, shift=50)
    with (
        _member(clusters.target, topic, busy),
        ClusterAdmin(clusters.source) as source,
        ClusterAdmin(clusters.target) as target,
    ):
        second = sync_round(store, link, pattern, source, target)
    skipped = {g.group: g.skipped for g in second.groups if g.skipped}
    assert skipped.keys() == {busy, moved_on}, skipped
    assert "active member" in (skipped[busy] or "")
    assert "consumed on the target" in (skipped[moved_on] or "")
    after = _on_target(clusters.target, groups)
    assert after[busy] == before[busy]
    assert after[moved_on] == {k: o + 1 for k, o in before[moved_on].items()}
    expected = _translated(mirror.config, moved)
    assert {g: o for g, o in after.items() if g not in skipped} == {
        g: o for g, o in expected.items() if g not in skipped
    }


def test_groups_migrate_moves_every_matching_group_from_the_command_line(
    mirror: MirrorProcess, clusters: Clusters
) -> None:
    wait_caught_up(mirror, clusters.source, [topic_of("plain")])
    groups = _groups("g-cli", 30)
    positions = _at_source(clusters, groups)
    config = str(mirror.config)
    args = ("groups", "migrate", "--link", LINK, "--groups", re.escape(groups[0][:-4]) + "-.*")

    dry = run_cli(*args, "--dry-run", config=config)
    assert dry.code == 0 and "dry run: nothing changed" in dry.stderr, dry.stderr
    assert "commit 90 partition(s) of 30 group(s)" in dry.stderr
    assert _on_target(clusters.target, groups) == {g: {} for g in groups}

    done = run_cli(*args, "--yes", "--json", config=config)
    assert done.code == 0, done.stderr
    moved = json.loads(done.stdout)
    assert [g["group"] for g in moved["groups"]] == groups
    assert {g["outcome"] for g in moved["groups"]} == {"applied"}
    assert _on_target(clusters.target, groups) == _translated(mirror.config, positions)

    again = run_cli(*args, "--yes", config=config)
    assert again.code == 0 and "already at their translated offsets" in again.stdout
