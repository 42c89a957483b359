"""Consumer groups: listing, describing with lag, committing offsets for an idle group."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kmigrate.errors import GroupActiveError, GroupNotFoundError
from kmigrate.kafka.admin.connection import AdminConnection, enum_name
from kmigrate.kafka.admin.offsets import Offsets
from kmigrate.kafka.errors import translate
from kmigrate.model.cluster import (
    CommittedOffset,
    GroupInfo,
    GroupMember,
    GroupSummary,
    TopicPartitionOffset,
)

_EMPTY_GROUP_STATES = {"EMPTY", "DEAD", "UNKNOWN"}


class Groups:
    """The cluster's consumer groups, their members and committed offsets."""

    def __init__(self, conn: AdminConnection, offsets: Offsets) -> None:
        self._conn = conn
        self._offsets = offsets

    def list_groups(self) -> list[GroupSummary]:
        conn = self._conn
        result = conn.wait(
            conn.client.list_consumer_groups(request_timeout=conn.timeout), "list groups"
        )
        return sorted(
            (
                GroupSummary(g.group_id, enum_name(g.state), g.is_simple_consumer_group)
                for g in result.valid
            ),
            key=lambda g: g.group_id,
        )

    def describe_group(self, group: str) -> GroupInfo:
        """State, members, committed offsets and lag of one consumer group."""
        desc = self._describe_group(group)
        offsets = self._offsets_after_describe(group)
        state = enum_name(desc.state)
        if state in {"DEAD", "UNKNOWN"} and not desc.members and not offsets:
            raise GroupNotFoundError(
                f"consumer group '{group}' does not exist on cluster '{self._conn.cluster.name}'"
            )
        members = tuple(
            GroupMember(
                m.member_id,
                m.client_id,
                m.host,
                tuple(
                    sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions or []))
                ),
            )
            for m in desc.members
        )
        coordinator = desc.coordinator.id if desc.coordinator is not None else None
        return GroupInfo(group, state, members, self._with_lag(offsets), coordinator)

    def _describe_group(self, group: str) -> Any:
        """The group's description, retried while its coordinator is not ready.

        A group nobody used yet on a fresh cluster has no loaded coordinator for a
        moment (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS): that is a wait, not
        an error.
        """
        conn = self._conn
        return conn.briefly(
            lambda: conn.wait(
                conn.client.describe_consumer_groups([group], request_timeout=conn.timeout)[group],
                "describe group",
                group=group,
            )
        )

    def committed_offsets(self, group: str) -> list[CommittedOffset]:
        """The group's committed offsets (partitions without a commit are left out)."""
        self._describe_group(group)
        return self._offsets_after_describe(group)

    def _offsets_after_describe(self, group: str) -> list[CommittedOffset]:
        # OffsetFetch is asked by the connection's child process (``isolated``):
        # librdkafka (2.16) crashes the process when the admin OffsetFetch meets
        # NOT_COORDINATOR (confluent-kafka-javascript#374, confluent-kafka-python#1982).
        # Asking only once the coordinator answered a describe makes that rare.
        found = self._conn.isolated.call("group_offsets", "list group offsets", group=group)
        return sorted(
            (
                CommittedOffset(topic, partition, offset)
                for topic, partition, offset, error in found
                if error is None and offset >= 0
            ),
            key=lambda o: (o.topic, o.partition),
        )

    def _with_lag(self, offsets: list[CommittedOffset]) -> tuple[CommittedOffset, ...]:
        if not offsets:
            return ()
        ends: dict[tuple[str, int], int] = {}
        for topic in sorted({o.topic for o in offsets}):
            partitions = [o.partition for o in offsets if o.topic == topic]
            high = self._offsets.list_offsets(topic, partitions, OffsetSpec.latest())
            ends.update({(topic, p): r.offset for p, r in high.items()})
        return tuple(
            CommittedOffset(o.topic, o.partition, o.committed, ends.get((o.topic, o.partition)))
            for o in offsets
        )

    def alter_group_offsets(self, group: str, offsets: Iterable[TopicPartitionOffset]) -> None:
        """Commit ``offsets`` for ``group``. Refuses while the group has members."""
        conn = self._conn
        members = self._active_members(group)
        if members:
            raise GroupActiveError(
                f"consumer group '{group}' has {members} active member(s) on cluster "
                f"'{conn.cluster.name}'; stop its consumers first"
            )
        tps = [TopicPartition(o.topic, o.partition, o.offset) for o in offsets]
        futures = conn.client.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=conn.timeout
        )
        result = conn.wait(futures[group], "alter group offsets", group=group)
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed:
            raise translate(
                _as_exception(failed[0].error),
                conn.cluster,
                conn.trap,
                "alter group offsets",
                group=group,
            )

    def _active_members(self, group: str) -> int:
        try:
            desc = self._describe_group(group)
        except GroupNotFoundError:
            return 0
        return 0 if enum_name(desc.state) in _EMPTY_GROUP_STATES else len(desc.members)


def _as_exception(error: Any) -> Exception:
    exc: Exception = KafkaException(error)
    return exc
