"""Consumer groups: listing, describing with lag, committing offsets for an idle group.

Many groups at once cost a constant number of round trips, not several per group:
one DescribeConsumerGroups call names them all, and their OffsetFetch (or
OffsetCommit) requests, which the client takes one group per call, are all put in
flight before the first answer is awaited.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kmigrate.errors import (
    ClusterUnavailableError,
    GroupActiveError,
    GroupNotFoundError,
    KMigrateError,
)
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
        info = self.describe_groups([group]).get(group)
        if info is None:
            raise GroupNotFoundError(
                f"consumer group '{group}' does not exist on cluster '{self._conn.cluster.name}'"
            )
        return replace(info, offsets=self._with_lag(list(info.offsets)))

    def describe_groups(self, groups: Iterable[str]) -> dict[str, GroupInfo]:
        """State, members and committed offsets (without lag) of each of ``groups``, in a
        number of round trips that does not grow with their count. A group the cluster
        does not know (no members, no offsets) is left out."""
        names = sorted(set(groups))
        if not names:
            return {}
        descriptions = self._describe_all(names)
        # OffsetFetch only once each coordinator answered a describe (see _offsets_of).
        committed = self._offsets_of(names)
        found = {}
        for name in names:
            desc, offsets = descriptions.get(name), committed.get(name, [])
            state = enum_name(desc.state) if desc is not None else "DEAD"
            members = _members(desc)
            if state in {"DEAD", "UNKNOWN"} and not members and not offsets:
                continue
            coordinator = desc.coordinator.id if desc and desc.coordinator is not None else None
            found[name] = GroupInfo(name, state, members, tuple(offsets), coordinator)
        return found

    def committed_offsets(self, group: str) -> list[CommittedOffset]:
        """The group's committed offsets (partitions without a commit are left out)."""
        info = self.describe_groups([group]).get(group)
        return list(info.offsets) if info is not None else []

    def _describe_all(self, names: list[str]) -> dict[str, Any]:
        """Each group's description (None for a group the cluster does not know).

        A group nobody used yet on a fresh cluster has no loaded coordinator for a
        moment (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS): that is a wait, not an
        error; only the groups that met it are asked again.
        """
        conn = self._conn
        found: dict[str, Any] = {}

        def step() -> dict[str, Any]:
            todo = [n for n in names if n not in found]
            futures = conn.client.describe_consumer_groups(todo, request_timeout=conn.timeout)
            _settle(futures, found, lambda name, f: _described(conn, name, f))
            return found

        return conn.briefly(step)

    def _offsets_of(self, names: list[str]) -> dict[str, list[CommittedOffset]]:
        # OffsetFetch is asked by the connection's child process (``isolated``):
        # librdkafka (2.16) crashes the process when the admin OffsetFetch meets
        # NOT_COORDINATOR (confluent-kafka-javascript#374, confluent-kafka-python#1982).
        # Asking only once the coordinator answered a describe makes that rare.
        conn = self._conn
        found: dict[str, list[CommittedOffset]] = {}

        def step() -> dict[str, list[CommittedOffset]]:
            todo = [n for n in names if n not in found]
            answers = conn.isolated.call("groups_offsets", "list group offsets", groups=todo)
            _settle(answers, found, lambda name, a: _fetched(conn, name, a))
            return found

        return conn.briefly(step)

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
        failed = self.alter_groups_offsets({group: list(offsets)})
        if group in failed:
            raise failed[group]

    def alter_groups_offsets(
        self, commits: Mapping[str, Iterable[TopicPartitionOffset]]
    ) -> dict[str, KMigrateError]:
        """Commit each group's offsets, refusing every group that has active members.

        Two round trips whatever the number of groups: one describe of them all, then
        every group's OffsetCommit (one group per request, by protocol) in flight at
        once. Returns the groups not committed, each with why (GroupActiveError for
        members, or the broker's refusal); every other group is committed. A cluster
        that stays unavailable past its ``timeout_s`` raises instead.
        """
        wanted = {
            group: [TopicPartition(o.topic, o.partition, o.offset) for o in offsets]
            for group, offsets in commits.items()
        }
        wanted = {group: tps for group, tps in wanted.items() if tps}
        described = self._describe_all(sorted(wanted)) if wanted else {}
        failed: dict[str, KMigrateError] = {}
        for group in wanted:
            members = _active_members(described.get(group))
            if members:
                failed[group] = GroupActiveError(
                    f"consumer group '{group}' has {members} active member(s) on cluster "
                    f"'{self._conn.cluster.name}'; stop its consumers first"
                )
        failed.update(self._commit_all({g: t for g, t in wanted.items() if g not in failed}))
        return failed

    def _commit_all(self, commits: dict[str, list[TopicPartition]]) -> dict[str, KMigrateError]:
        conn = self._conn
        done: dict[str, KMigrateError | None] = {}

        def step() -> None:
            futures: dict[str, Future[Any]] = {}
            for group, tps in commits.items():
                if group not in done:
                    futures.update(
                        conn.client.alter_consumer_group_offsets(
                            [ConsumerGroupTopicPartitions(group, tps)],
                            request_timeout=conn.timeout,
                        )
                    )
            _settle(futures, done, lambda group, f: _committed(conn, group, f))

        if commits:
            conn.briefly(step)
        return {group: error for group, error in done.items() if error is not None}


def _settle(
    pending: Mapping[str, Any], into: dict[str, Any], outcome: Callable[[str, Any], Any]
) -> None:
    """``into[name] = outcome(name, answer)`` for every answer; a transient failure
    leaves its name out and is raised once every other answer is in (``briefly`` then
    asks again for those left out)."""
    transient: ClusterUnavailableError | None = None
    for name, answer in pending.items():
        try:
            into[name] = outcome(name, answer)
        except ClusterUnavailableError as exc:
            transient = transient or exc
    if transient is not None:
        raise transient


def _described(conn: AdminConnection, group: str, future: Future[Any]) -> Any:
    try:
        return conn.wait(future, "describe group", group=group)
    except GroupNotFoundError:
        return None


def _fetched(conn: AdminConnection, group: str, answer: dict[str, Any]) -> list[CommittedOffset]:
    if "error" in answer:
        error = conn.translate(
            KafkaException(KafkaError(*answer["error"])), "list group offsets", group=group
        )
        if isinstance(error, GroupNotFoundError):
            return []
        raise error
    return sorted(
        (
            CommittedOffset(topic, partition, offset)
            for topic, partition, offset, error in answer["offsets"]
            if error is None and offset >= 0
        ),
        key=lambda o: (o.topic, o.partition),
    )


def _committed(conn: AdminConnection, group: str, future: Future[Any]) -> KMigrateError | None:
    """None once the group's commit is in; the broker's refusal as the kmigrate error
    (transient ones raised, to be asked again)."""
    try:
        result = conn.wait(future, "alter group offsets", group=group)
    except ClusterUnavailableError:
        raise
    except KMigrateError as exc:
        return exc
    failed = [tp for tp in result.topic_partitions if tp.error is not None]
    if not failed:
        return None
    error = translate(
        KafkaException(failed[0].error), conn.cluster, conn.trap, "alter group offsets", group=group
    )
    if isinstance(error, ClusterUnavailableError):
        raise error
    return error


def _members(desc: Any) -> tuple[GroupMember, ...]:
    if desc is None:
        return ()
    return tuple(
        GroupMember(
            m.member_id,
            m.client_id,
            m.host,
            tuple(sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions or []))),
        )
        for m in desc.members
    )


def _active_members(desc: Any) -> int:
    if desc is None or enum_name(desc.state) in _EMPTY_GROUP_STATES:
        return 0
    return len(desc.members)
