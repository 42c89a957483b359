"""The admin layer: the only code in kmigrate that calls Kafka's admin API.

Every method blocks until the cluster answered (or the cluster's ``timeout_s``
passed), returns frozen values from :mod:`kmigrate.models`, and raises only
kmigrate errors. Use it as a context manager or call :meth:`close`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

from kmigrate.config import ClusterConfig
from kmigrate.errors import (
    ClusterUnavailableError,
    ConflictError,
    GroupActiveError,
    GroupNotFoundError,
    KafkaOperationError,
    KMigrateError,
    TopicNotFoundError,
)
from kmigrate.kafka.clients import ErrorTrap, admin_client
from kmigrate.kafka.errors import translate
from kmigrate.kafka.retry import Backoff
from kmigrate.kafka.topic_copy import configs_to_copy
from kmigrate.model.cluster import (
    AclEntry,
    Broker,
    ClusterInfo,
    CommittedOffset,
    GroupInfo,
    GroupMember,
    GroupSummary,
    PartitionInfo,
    TopicInfo,
    TopicPartitionOffset,
    Watermarks,
)

T = TypeVar("T")
# Inside one call, a moving leader or coordinator is retried quickly and briefly.
BRIEF_BACKOFF = Backoff(first_s=0.1, max_s=1.0)
_RNG = random.Random()
_DYNAMIC_TOPIC = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
_EMPTY_GROUP_STATES = {"EMPTY", "DEAD", "UNKNOWN"}
_RESOURCE = {"topic": ResourceType.TOPIC, "broker": ResourceType.BROKER}


class ClusterAdmin:
    """Admin operations on one cluster."""

    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self._trap = ErrorTrap()
        self._client = admin_client(cluster, self._trap)

    def __enter__(self) -> ClusterAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        # AdminClient has no close(); dropping the reference ends its threads.
        self._client = None

    # ------------------------------------------------------------ plumbing

    @property
    def _timeout(self) -> float:
        return self.cluster.timeout_s

    def _briefly(self, step: Callable[[], T], also: tuple[type[KMigrateError], ...] = ()) -> T:
        """``step``, retried within the cluster's ``timeout_s`` while it fails with a
        transient condition (a leader or coordinator moving, a broker restarting) or one
        of ``also``. What lasts longer is the caller's to wait out (kmigrate.kafka.retry)."""
        deadline = time.monotonic() + self._timeout
        attempt = 0
        retried: tuple[type[KMigrateError], ...] = (ClusterUnavailableError, *also)
        while True:
            try:
                return step()
            except retried as exc:
                if isinstance(exc, ClusterUnavailableError):
                    self._renew()
                if time.monotonic() >= deadline:
                    raise
            time.sleep(min(BRIEF_BACKOFF.delay(attempt, _RNG), max(deadline - time.monotonic(), 0)))
            attempt += 1

    def _renew(self) -> None:
        """Start over with a fresh client. After a broker restart, librdkafka's admin
        ListOffsets keeps sending the leader epoch it cached before and is refused
        (FENCED_LEADER_EPOCH) until its metadata is refreshed, which it does not do by
        itself; a new client asks for metadata first."""
        self._client = admin_client(self.cluster, self._trap)

    def _wait(self, future: Future[T], action: str, **names: str | None) -> T:
        try:
            return future.result(timeout=self._timeout + 5)
        except KMigrateError:
            raise
        except Exception as exc:
            raise self._translate(exc, action, **names) from exc

    def _translate(self, exc: Exception, action: str, **names: str | None) -> KMigrateError:
        # librdkafka hands client-level errors (connection refused, SASL failures) to
        # error_cb only from poll(); serve them so the message can say why.
        self._client.poll(0)
        return translate(exc, self.cluster, self._trap, action, **names)

    def _wait_all(
        self, futures: Mapping[Any, Future[T]], action: str, **names: str | None
    ) -> dict[Any, T]:
        return {key: self._wait(f, action, **names) for key, f in futures.items()}

    # ------------------------------------------------------------ cluster

    def describe_cluster(self) -> ClusterInfo:
        """Brokers (with racks), controller and cluster id."""
        result = self._wait(
            self._client.describe_cluster(request_timeout=self._timeout), "describe cluster"
        )
        brokers = tuple(
            sorted(
                (Broker(n.id, n.host, n.port, n.rack or None) for n in result.nodes),
                key=lambda b: b.node_id,
            )
        )
        controller = result.controller.id if result.controller is not None else None
        return ClusterInfo(result.cluster_id, controller, brokers)

    def broker_config(self, node_id: int | None = None) -> dict[str, str]:
        """One broker's effective configuration (the first broker's by default)."""
        if node_id is None:
            node_id = self.describe_cluster().brokers[0].node_id
        resource = ConfigResource(ResourceType.BROKER, str(node_id))
        futures = self._client.describe_configs([resource], request_timeout=self._timeout)
        (entries,) = self._wait_all(futures, "describe broker configs").values()
        return {name: e.value for name, e in entries.items() if e.value is not None}

    def dynamic_configs(self, kind: str, name: str) -> dict[str, str]:
        """The dynamic (set, not default) configs of a ``topic`` or ``broker``."""
        resource = ConfigResource(_RESOURCE[kind], name)
        futures = self._client.describe_configs([resource], request_timeout=self._timeout)
        (entries,) = self._wait_all(futures, f"describe {kind} configs").values()
        dynamic = {
            ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        }
        return {
            n: e.value for n, e in entries.items() if e.value is not None and e.source in dynamic
        }

    def set_configs(self, kind: str, name: str, changes: Mapping[str, str | None]) -> None:
        """Set (a value) or remove (None) dynamic configs of a ``topic`` or ``broker``."""
        entries = [
            ConfigEntry(
                key,
                value,
                incremental_operation=(
                    AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
                ),
            )
            for key, value in changes.items()
        ]
        if not entries:
            return
        resource = ConfigResource(_RESOURCE[kind], name, incremental_configs=entries)
        futures = self._client.incremental_alter_configs([resource], request_timeout=self._timeout)
        self._wait_all(futures, f"alter {kind} configs")

    # ------------------------------------------------------------ topics

    def list_topics(self, *, include_internal: bool = False) -> list[TopicInfo]:
        """All topics with their partition placement (configs not included)."""
        metadata = self._wait_metadata()
        topics = []
        for name, meta in sorted(metadata.topics.items()):
            if name.startswith("__") and not include_internal:
                continue
            partitions = tuple(
                sorted(
                    (
                        PartitionInfo(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
                        for p in meta.partitions.values()
                    ),
                    key=lambda p: p.partition,
                )
            )
            topics.append(TopicInfo(name, partitions, internal=name.startswith("__")))
        return topics

    def _wait_metadata(self) -> Any:
        try:
            return self._client.list_topics(timeout=self._timeout)
        except Exception as exc:
            raise self._translate(exc, "list topics") from exc

    def describe_topic(self, name: str) -> TopicInfo:
        """One topic: partitions, leaders, replicas, ISR and non-default configs."""
        return self.describe_topics([name])[0]

    def describe_topics(self, names: list[str]) -> list[TopicInfo]:
        """The named topics, in the order given; a missing one raises TopicNotFoundError."""
        if not names:
            return []
        futures = self._client.describe_topics(
            TopicCollection(list(names)), request_timeout=self._timeout
        )
        described = {n: self._wait(f, "describe topic", topic=n) for n, f in futures.items()}
        configs = self.topic_configs(names)
        return [_topic_info(described[n], configs[n]) for n in names]

    def describe_topics_if_present(self, names: list[str]) -> list[TopicInfo]:
        """The named topics that exist, described as ``describe_topics`` does."""
        present = {t.name for t in self.list_topics(include_internal=True)}
        return self.describe_topics([n for n in names if n in present])

    def topic_configs(self, names: list[str]) -> dict[str, dict[str, str]]:
        """Each topic's configs that were set on the topic (not cluster defaults)."""
        resources = [ConfigResource(ResourceType.TOPIC, n) for n in names]
        futures = self._client.describe_configs(resources, request_timeout=self._timeout)
        result = {}
        for resource, future in futures.items():
            entries = self._wait(future, "describe topic configs", topic=resource.name)
            result[resource.name] = {
                name: e.value
                for name, e in entries.items()
                if _source_value(e.source) == _DYNAMIC_TOPIC and e.value is not None
            }
        return result

    def create_topic(
        self,
        name: str,
        partitions: int,
        *,
        replication_factor: int | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> TopicInfo:
        """Create a topic and return it as the cluster now describes it."""
        rf = replication_factor if replication_factor is not None else self.default_replication()
        brokers = len(self.describe_cluster().brokers)
        if rf > brokers:
            raise ConflictError(
                f"replication factor {rf} for topic '{name}' exceeds the {brokers} broker(s) "
                f"of cluster '{self.cluster.name}'; pass a smaller --replication-factor"
            )
        new = NewTopic(
            name, num_partitions=partitions, replication_factor=rf, config=dict(configs or {})
        )
        futures = self._client.create_topics(
            [new], operation_timeout=self._timeout, request_timeout=self._timeout
        )
        self._wait_all(futures, "create topic", topic=name)
        return self._wait_topic_ready(name, partitions)

    def _wait_topic_ready(self, name: str, partitions: int) -> TopicInfo:
        """Wait until every broker we ask knows the new topic and each partition has a
        leader: the controller answers create before the brokers' metadata catches up."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                topic = self.describe_topic(name)
                if topic.partition_count == partitions and all(
                    p.leader >= 0 for p in topic.partitions
                ):
                    return topic
            except TopicNotFoundError:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"topic '{name}' was created on cluster '{self.cluster.name}' but its "
                    f"partitions had no leader within {self._timeout:g}s"
                )
            time.sleep(0.1)

    def create_topic_like(
        self,
        source: TopicInfo,
        *,
        name: str | None = None,
        replication_factor: int | None = None,
        only_configs: Iterable[str] | None = None,
        config_overrides: Mapping[str, str] | None = None,
    ) -> TopicInfo:
        """Create a topic with ``source``'s partition count and data configs.

        The replication factor is this cluster's default unless given;
        min.insync.replicas is capped so the copy stays writable.
        """
        rf = replication_factor if replication_factor is not None else self.default_replication()
        configs = configs_to_copy(source.configs, rf, only=only_configs, overrides=config_overrides)
        return self.create_topic(
            name or source.name, source.partition_count, replication_factor=rf, configs=configs
        )

    def default_replication(self) -> int:
        """The cluster's default.replication.factor, bounded by its broker count."""
        brokers = self.describe_cluster().brokers
        config = self.broker_config(brokers[0].node_id)
        return max(1, min(int(config.get("default.replication.factor", "1")), len(brokers)))

    def delete_topics(self, names: list[str]) -> None:
        if names:
            futures = self._client.delete_topics(
                list(names), operation_timeout=self._timeout, request_timeout=self._timeout
            )
            for topic, future in futures.items():
                self._wait(future, "delete topic", topic=topic)

    # ------------------------------------------------------------ offsets

    def watermarks(self, topic: str) -> list[Watermarks]:
        """Low and high watermark of every partition of ``topic``."""
        partitions = self._partitions(topic)
        low = self._list_offsets(topic, partitions, OffsetSpec.earliest())
        high = self._list_offsets(topic, partitions, OffsetSpec.latest())
        return [Watermarks(topic, p, low[p].offset, high[p].offset) for p in partitions]

    def offsets_for_timestamp(self, topic: str, timestamp_ms: int) -> list[TopicPartitionOffset]:
        """Per partition, the first offset whose record timestamp is >= ``timestamp_ms``.

        Exact as Kafka's time index; a partition with no such record gets its log end
        offset and ``timestamp=None`` (a consumer seeking there reads only newer records).
        """
        partitions = self._partitions(topic)
        found = self._list_offsets(topic, partitions, OffsetSpec.for_timestamp(timestamp_ms))
        missing = [p for p in partitions if found[p].offset < 0]
        ends = self._list_offsets(topic, missing, OffsetSpec.latest()) if missing else {}
        result = []
        for p in partitions:
            if found[p].offset >= 0:
                result.append(TopicPartitionOffset(topic, p, found[p].offset, found[p].timestamp))
            else:
                result.append(TopicPartitionOffset(topic, p, ends[p].offset, None))
        return result

    def partition_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        which: str,
        *,
        committed_only: bool = False,
    ) -> dict[tuple[str, int], int]:
        """``earliest`` (log start) or ``latest`` offset of many partitions in one call.

        With ``committed_only`` the latest offset is the last stable offset: what a
        read_committed consumer can read up to (open transactions excluded).
        """
        spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        isolation = (
            IsolationLevel.READ_COMMITTED if committed_only else IsolationLevel.READ_UNCOMMITTED
        )

        def once() -> dict[tuple[str, int], int]:
            futures = self._client.list_offsets(
                request, isolation_level=isolation, request_timeout=self._timeout
            )
            done = {}
            for tp, future in futures.items():
                where = f"{tp.topic}[{tp.partition}]"
                result = self._wait(future, "list offsets", topic=tp.topic, where=where)
                if result.offset < 0:
                    # Seen while leadership moves in a rolling restart: an answer without
                    # an error and without an offset (-1001). Never an end offset.
                    raise ClusterUnavailableError(
                        f"list offsets on cluster '{self.cluster.name}' gave no offset for {where}",
                        cluster=self.cluster.name,
                        condition=f"no offset for {where}",
                    )
                done[(tp.topic, tp.partition)] = result.offset
            return done

        # Leadership moves (and new topics) answer NOT_LEADER or UNKNOWN_TOPIC for a moment.
        return self._briefly(once, also=(TopicNotFoundError,))

    def offsets_for_times(
        self, timestamps: Mapping[tuple[str, int], int]
    ) -> dict[tuple[str, int], int | None]:
        """Per partition, the first offset whose timestamp is >= its own timestamp
        (None when the partition has no such record)."""
        request = {
            TopicPartition(t, p): OffsetSpec.for_timestamp(ms) for (t, p), ms in timestamps.items()
        }
        if not request:
            return {}
        futures = self._client.list_offsets(request, request_timeout=self._timeout)
        done = self._wait_all(futures, "list offsets by time")
        return {
            (tp.topic, tp.partition): (r.offset if r.offset >= 0 else None)
            for tp, r in done.items()
        }

    def create_partitions(self, topic: str, total: int) -> TopicInfo:
        """Grow ``topic`` to ``total`` partitions and wait until each has a leader."""
        futures = self._client.create_partitions(
            [NewPartitions(topic, total)],
            operation_timeout=self._timeout,
            request_timeout=self._timeout,
        )
        self._wait_all(futures, "add partitions", topic=topic)
        return self._wait_topic_ready(topic, total)

    def _partitions(self, topic: str) -> list[int]:
        meta = self._wait_metadata().topics.get(topic)
        if meta is None or meta.error is not None:
            raise TopicNotFoundError(
                f"topic '{topic}' does not exist on cluster '{self.cluster.name}'"
            )
        return sorted(meta.partitions)

    def _list_offsets(self, topic: str, partitions: list[int], spec: OffsetSpec) -> dict[int, Any]:
        request = {TopicPartition(topic, p): spec for p in partitions}
        futures = self._client.list_offsets(request, request_timeout=self._timeout)
        return {
            tp.partition: r
            for tp, r in self._wait_all(futures, "list offsets", topic=topic).items()
        }

    def delete_records(self, topic: str, before: Mapping[int, int]) -> list[Watermarks]:
        """Delete records below ``before[partition]``; returns the new low watermarks."""
        request = [TopicPartition(topic, p, o) for p, o in before.items()]
        futures = self._client.delete_records(
            request, request_timeout=self._timeout, operation_timeout=self._timeout
        )
        done = self._wait_all(futures, "delete records", topic=topic)
        high = self._list_offsets(topic, list(before), OffsetSpec.latest())
        return sorted(
            (
                Watermarks(topic, tp.partition, r.low_watermark, high[tp.partition].offset)
                for tp, r in done.items()
            ),
            key=lambda w: w.partition,
        )

    # ------------------------------------------------------------ groups

    def list_groups(self) -> list[GroupSummary]:
        result = self._wait(
            self._client.list_consumer_groups(request_timeout=self._timeout), "list groups"
        )
        return sorted(
            (
                GroupSummary(g.group_id, _name(g.state), g.is_simple_consumer_group)
                for g in result.valid
            ),
            key=lambda g: g.group_id,
        )

    def describe_group(self, group: str) -> GroupInfo:
        """State, members, committed offsets and lag of one consumer group."""
        desc = self._describe_group(group)
        offsets = self._offsets_after_describe(group)
        state = _name(desc.state)
        if state in {"DEAD", "UNKNOWN"} and not desc.members and not offsets:
            raise GroupNotFoundError(
                f"consumer group '{group}' does not exist on cluster '{self.cluster.name}'"
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
        return self._briefly(
            lambda: self._wait(
                self._client.describe_consumer_groups([group], request_timeout=self._timeout)[
                    group
                ],
                "describe group",
                group=group,
            )
        )

    def committed_offsets(self, group: str) -> list[CommittedOffset]:
        """The group's committed offsets (partitions without a commit are left out)."""
        self._describe_group(group)
        return self._offsets_after_describe(group)

    def _offsets_after_describe(self, group: str) -> list[CommittedOffset]:
        # Only call OffsetFetch once the coordinator answered a describe: librdkafka
        # (2.16) crashes the process when the admin OffsetFetch meets NOT_COORDINATOR
        # (confluent-kafka-javascript#374, confluent-kafka-python#1982).
        request = [ConsumerGroupTopicPartitions(group)]
        futures = self._client.list_consumer_group_offsets(request, request_timeout=self._timeout)
        result = self._wait(futures[group], "list group offsets", group=group)
        return sorted(
            (
                CommittedOffset(tp.topic, tp.partition, tp.offset)
                for tp in result.topic_partitions
                if tp.error is None and tp.offset >= 0
            ),
            key=lambda o: (o.topic, o.partition),
        )

    def _with_lag(self, offsets: list[CommittedOffset]) -> tuple[CommittedOffset, ...]:
        if not offsets:
            return ()
        ends: dict[tuple[str, int], int] = {}
        for topic in sorted({o.topic for o in offsets}):
            partitions = [o.partition for o in offsets if o.topic == topic]
            high = self._list_offsets(topic, partitions, OffsetSpec.latest())
            ends.update({(topic, p): r.offset for p, r in high.items()})
        return tuple(
            CommittedOffset(o.topic, o.partition, o.committed, ends.get((o.topic, o.partition)))
            for o in offsets
        )

    def alter_group_offsets(self, group: str, offsets: Iterable[TopicPartitionOffset]) -> None:
        """Commit ``offsets`` for ``group``. Refuses while the group has members."""
        members = self._active_members(group)
        if members:
            raise GroupActiveError(
                f"consumer group '{group}' has {members} active member(s) on cluster "
                f"'{self.cluster.name}'; stop its consumers first"
            )
        tps = [TopicPartition(o.topic, o.partition, o.offset) for o in offsets]
        futures = self._client.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=self._timeout
        )
        result = self._wait(futures[group], "alter group offsets", group=group)
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed:
            raise translate(
                _as_exception(failed[0].error),
                self.cluster,
                self._trap,
                "alter group offsets",
                group=group,
            )

    def _active_members(self, group: str) -> int:
        try:
            desc = self._describe_group(group)
        except GroupNotFoundError:
            return 0
        return 0 if _name(desc.state) in _EMPTY_GROUP_STATES else len(desc.members)

    # ------------------------------------------------------------ ACLs

    def list_acls(self) -> list[AclEntry]:
        """Every ACL binding on the cluster."""
        match_all = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        bindings = self._wait(
            self._client.describe_acls(match_all, request_timeout=self._timeout), "list ACLs"
        )
        return sorted(_acl_entry(b) for b in bindings)

    def create_acls(self, entries: Iterable[AclEntry]) -> None:
        """Create ACL bindings; reports every binding that failed, not only the first."""
        bindings = [_acl(AclBinding, e) for e in entries]
        if not bindings:
            return
        futures = self._client.create_acls(bindings, request_timeout=self._timeout)
        errors = _collect(futures, lambda f: self._wait(f, "create ACLs"))
        if errors:
            raise errors[0].__class__(
                "; ".join(str(e) for e in errors) if len(errors) > 1 else str(errors[0])
            )

    def delete_acls(self, entries: Iterable[AclEntry]) -> int:
        """Delete the exact ACL bindings given; returns how many were deleted."""
        filters = [_acl(AclBindingFilter, e) for e in entries]
        if not filters:
            return 0
        futures = self._client.delete_acls(filters, request_timeout=self._timeout)
        return sum(len(r) for r in self._wait_all(futures, "delete ACLs").values())


# ---------------------------------------------------------------- conversions


def _name(value: Any) -> str:
    return str(getattr(value, "name", value)).upper()


def _source_value(source: Any) -> Any:
    return getattr(source, "value", source)


def _topic_info(desc: Any, configs: dict[str, str]) -> TopicInfo:
    partitions = tuple(
        sorted(
            (
                PartitionInfo(
                    p.id,
                    p.leader.id if p.leader is not None else -1,
                    tuple(n.id for n in p.replicas),
                    tuple(n.id for n in p.isr),
                )
                for p in desc.partitions
            ),
            key=lambda p: p.partition,
        )
    )
    return TopicInfo(desc.name, partitions, configs, internal=bool(desc.is_internal))


def _as_exception(error: Any) -> Exception:
    exc: Exception = KafkaException(error)
    return exc


def _collect(
    futures: Mapping[Any, Future[Any]], wait: Callable[[Future[Any]], Any]
) -> list[KMigrateError]:
    errors = []
    for future in futures.values():
        try:
            wait(future)
        except KMigrateError as exc:
            errors.append(exc)
    return errors


def _acl_entry(b: AclBinding) -> AclEntry:
    return AclEntry(
        _name(b.restype),
        b.name,
        _name(b.resource_pattern_type),
        b.principal,
        b.host,
        _name(b.operation),
        _name(b.permission_type),
    )


def _acl(kind: Callable[..., T], e: AclEntry) -> T:
    """An AclBinding or AclBindingFilter (same constructor) for one entry."""
    return kind(
        ResourceType[e.resource_type],
        e.resource_name,
        ResourcePatternType[e.pattern_type],
        e.principal,
        e.host,
        AclOperation[e.operation],
        AclPermissionType[e.permission],
    )
