"""What the byte copy asks the brokers: a range's progress (``Partition``) and the Fetch
and Produce requests made of those in flight. The versions are ones every broker from
Kafka 2.8 to 4.x speaks (Fetch and Produce by topic name)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.produce.v9 import request as produce_v9

from kmigrate.codec import batch_copy
from kmigrate.mirror.ranges import RangePlan
from kmigrate.model.offsets import OffsetRun

# kio's field types are NewTypes, built here from plain values.
FetchRequest: Any = fetch_v12.FetchRequest
FetchTopic: Any = fetch_v12.FetchTopic
FetchPartition: Any = fetch_v12.FetchPartition
ProduceRequest: Any = produce_v9.ProduceRequest
TopicProduceData: Any = produce_v9.TopicProduceData
PartitionProduceData: Any = produce_v9.PartitionProduceData
PARTITION_FETCH_BYTES = 8 * 1024 * 1024


@dataclass
class Partition:
    """One range's progress."""

    plan: RangePlan
    position: int  # the next source offset to read
    target_next: int  # where the next batch sent must land
    acked_next: int = 0  # the target offset after the last acknowledged batch
    runs: list[OffsetRun] = field(default_factory=list)
    first_seen: int | None = None
    seen: int = 0
    last_timestamp: int | None = None
    error: tuple[str, str] | None = None
    by_records: tuple[int, int, str] | None = None  # (start, stop, why) for the record copier
    done: bool = False
    merged: int = 0  # source batches sent inside another's merged batch

    @property
    def key(self) -> tuple[str, int]:
        return self.plan.topic, self.plan.partition

    def fail(self, code: str, message: str) -> None:
        if self.error is None:
            self.error = (code, message)
        self.done = True


Item = tuple[Partition, bytes, memoryview, batch_copy.Head, int]  # ..., target offset


def fetch_request(parts: list[Partition], rack: str = "") -> Any:
    """A read_committed Fetch of ``parts`` at their positions; ``rack``: the client's
    (client.rack), so a leader whose cluster sets replica.selector.class may name a
    replica in that rack to read from instead (KIP-392)."""
    by_topic: dict[str, list[Partition]] = {}
    for part in parts:
        by_topic.setdefault(part.plan.topic, []).append(part)
    return FetchRequest(
        replica_id=-1,
        max_wait=dt.timedelta(milliseconds=200),
        min_bytes=1,
        max_bytes=64 * 1024 * 1024,
        isolation_level=1,  # read_committed
        session_id=0,
        session_epoch=-1,  # no fetch session: every fetch names its partitions
        topics=tuple(
            FetchTopic(
                topic=topic,
                partitions=tuple(
                    FetchPartition(
                        partition=p.plan.partition,
                        current_leader_epoch=-1,
                        fetch_offset=p.position,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=PARTITION_FETCH_BYTES,
                    )
                    for p in ps
                ),
            )
            for topic, ps in by_topic.items()
        ),
        forgotten_topics_data=(),
        rack_id=rack,
    )


def produce_request(items: list[Item]) -> Any:
    """One Produce request (acks=all) with each item's batch: its new header, then its
    records."""
    by_topic: dict[str, list[Any]] = {}
    for part, header, body, _, _ in items:
        by_topic.setdefault(part.plan.topic, []).append(
            PartitionProduceData(index=part.plan.partition, records=header + bytes(body))
        )
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=dt.timedelta(seconds=30),
        topic_data=tuple(
            TopicProduceData(name=topic, partition_data=tuple(data))
            for topic, data in by_topic.items()
        ),
    )
