"""Partition offsets: watermarks, offsets by time, last stable offsets, deleting records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kmigrate.errors import ClusterUnavailableError, TopicNotFoundError
from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.model.cluster import TopicPartitionOffset, Watermarks


class Offsets:
    """Where partitions begin and end, and which offset a time falls on."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn

    def watermarks(self, topic: str) -> list[Watermarks]:
        """Low and high watermark of every partition of ``topic``."""
        partitions = self._partitions(topic)
        low = self.list_offsets(topic, partitions, OffsetSpec.earliest())
        high = self.list_offsets(topic, partitions, OffsetSpec.latest())
        return [Watermarks(topic, p, low[p].offset, high[p].offset) for p in partitions]

    def offsets_for_timestamp(self, topic: str, timestamp_ms: int) -> list[TopicPartitionOffset]:
        """Per partition, the first offset whose record timestamp is >= ``timestamp_ms``.

        Exact as Kafka's time index; a partition with no such record gets its log end
        offset and ``timestamp=None`` (a consumer seeking there reads only newer records).
        """
        partitions = self._partitions(topic)
        found = self.list_offsets(topic, partitions, OffsetSpec.for_timestamp(timestamp_ms))
        missing = [p for p in partitions if found[p].offset < 0]
        ends = self.list_offsets(topic, missing, OffsetSpec.latest()) if missing else {}
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
        # Leadership moves (and new topics) answer NOT_LEADER or UNKNOWN_TOPIC for a moment.
        return self._conn.briefly(
            lambda: self._offsets_once(request, isolation), also=(TopicNotFoundError,)
        )

    def _offsets_once(
        self, request: dict[TopicPartition, Any], isolation: Any
    ) -> dict[tuple[str, int], int]:
        conn = self._conn
        futures = conn.client.list_offsets(
            request, isolation_level=isolation, request_timeout=conn.timeout
        )
        done = {}
        for tp, future in futures.items():
            where = f"{tp.topic}[{tp.partition}]"
            result = conn.wait(future, "list offsets", topic=tp.topic, where=where)
            if result.offset < 0:
                # Seen while leadership moves in a rolling restart: an answer without
                # an error and without an offset (-1001). Never an end offset.
                raise ClusterUnavailableError(
                    f"list offsets on cluster '{conn.cluster.name}' gave no offset for {where}",
                    cluster=conn.cluster.name,
                    condition=f"no offset for {where}",
                )
            done[(tp.topic, tp.partition)] = result.offset
        return done

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
        futures = self._conn.client.list_offsets(request, request_timeout=self._conn.timeout)
        done = self._conn.wait_all(futures, "list offsets by time")
        return {
            (tp.topic, tp.partition): (r.offset if r.offset >= 0 else None)
            for tp, r in done.items()
        }

    def delete_records(self, topic: str, before: Mapping[int, int]) -> list[Watermarks]:
        """Delete records below ``before[partition]``; returns the new low watermarks."""
        request = [TopicPartition(topic, p, o) for p, o in before.items()]
        futures = self._conn.client.delete_records(
            request, request_timeout=self._conn.timeout, operation_timeout=self._conn.timeout
        )
        done = self._conn.wait_all(futures, "delete records", topic=topic)
        high = self.list_offsets(topic, list(before), OffsetSpec.latest())
        return sorted(
            (
                Watermarks(topic, tp.partition, r.low_watermark, high[tp.partition].offset)
                for tp, r in done.items()
            ),
            key=lambda w: w.partition,
        )

    def list_offsets(self, topic: str, partitions: list[int], spec: OffsetSpec) -> dict[int, Any]:
        """The client's ListOffsets answer per partition of ``topic`` for one ``spec``;
        asked again with a fresh client while refused as transient (a leader moving, or
        FENCED_LEADER_EPOCH from metadata that lags a leader change)."""
        request = {TopicPartition(topic, p): spec for p in partitions}

        def ask() -> dict[int, Any]:
            futures = self._conn.client.list_offsets(request, request_timeout=self._conn.timeout)
            answers = self._conn.wait_all(futures, "list offsets", topic=topic)
            return {tp.partition: r for tp, r in answers.items()}

        return self._conn.briefly(ask)

    def _partitions(self, topic: str) -> list[int]:
        meta = self._conn.metadata().topics.get(topic)
        if meta is None or meta.error is not None:
            raise TopicNotFoundError(
                f"topic '{topic}' does not exist on cluster '{self._conn.cluster.name}'"
            )
        return sorted(meta.partitions)
