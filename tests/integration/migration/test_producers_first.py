"""Producers first: promote from IN_SYNC, the group drains the source, then moves."""

from __future__ import annotations

from pathlib import Path

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicPartitionOffset
from tests.integration.conftest import Clusters
from tests.integration.migration.harness import new_migration
from tests.integration.migration.test_guards import EXIT_CONFLICT, refused


def test_producers_switch_first_and_consumers_follow_once_they_drained_the_source(
    clusters: Clusters, tmp_path: Path
) -> None:
    m = new_migration(
        clusters, tmp_path, records=3_000, extra_plan={"switch_order": "producers-first"}
    )
    try:
        m.ok("migrate", "start", str(m.plan))
        m.wait_topic("IN_SYNC")
        refused(
            m.cli("migrate", "consumers", "--groups", m.group, "--wait"),
            EXIT_CONFLICT,
            "needs it PROMOTED",
        )
        m.ok("migrate", "promote", "--topics", m.topic)
        assert m.topic_state() == "PROMOTED"
        # The group still has records to read on the source: it may not move yet.
        refused(
            m.cli("migrate", "consumers", "--groups", m.group, "--wait"),
            EXIT_CONFLICT,
            "still has 2,001 record(s) to consume on source",
        )
        refused(
            m.cli("migrate", "retire", "--topics", m.topic), EXIT_CONFLICT, "the consumers' move"
        )
        with ClusterAdmin(clusters.source) as admin:  # the group drains the source
            ends = {w.partition: w.high for w in admin.watermarks(m.topic)}
            admin.alter_group_offsets(
                m.group, [TopicPartitionOffset(m.topic, p, end) for p, end in ends.items()]
            )
        m.ok("migrate", "consumers", "--groups", m.group, "--wait")
        assert m.topic_state() == "CONSUMERS_MOVED"
        with ClusterAdmin(clusters.target) as admin:
            committed = {
                (o.topic, o.partition): o.committed for o in admin.committed_offsets(m.group)
            }
        assert committed == {(m.topic, p): end for p, end in ends.items()}
        m.ok("migrate", "retire", "--topics", m.topic, "--yes", "--keep-source", timeout=300)
        assert m.topic_state() == "DONE"
        with ClusterAdmin(clusters.source) as admin:
            assert admin.describe_topics_if_present([m.topic])  # kept, as asked
    finally:
        m.stop_mirror()
