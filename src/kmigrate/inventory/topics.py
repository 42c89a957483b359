"""A cluster's topics with their partition counts and records, and one topic in full."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicInfo, Watermarks


@dataclass(frozen=True)
class TopicRow:
    name: str
    partitions: int
    replication_factor: int
    records: int  # high minus low watermark, summed over the partitions
    under_replicated: int  # partitions whose ISR is smaller than their replica set


@dataclass(frozen=True)
class TopicDetail:
    info: TopicInfo
    marks: dict[int, Watermarks]  # per partition


def topic_rows(
    admin: ClusterAdmin, *, internal: bool = False, pattern: re.Pattern[str] | None = None
) -> list[TopicRow]:
    """The topics (whose whole name ``pattern`` matches), with internal ones if asked."""
    topics = [
        t
        for t in admin.list_topics(include_internal=internal)
        if pattern is None or pattern.fullmatch(t.name)
    ]
    return [
        TopicRow(
            t.name,
            t.partition_count,
            t.replication_factor,
            sum(w.count for w in admin.watermarks(t.name)),
            sum(p.under_replicated for p in t.partitions),
        )
        for t in topics
    ]


def topic_detail(admin: ClusterAdmin, topic: str) -> TopicDetail:
    """Partitions (leader, replicas, ISR), non-default configs and each partition's
    offsets; TopicNotFoundError if the cluster has no such topic."""
    info = admin.describe_topic(topic)
    return TopicDetail(info, {w.partition: w for w in admin.watermarks(topic)})
