"""What a mirror task is asked and what it answers, whichever copier runs it (record by
record, ``copy_task``; record batches as bytes, ``byte_copy``): a partition's
``RangePlan``, the ``CopySettings`` pickled to executors, the ``RangeResult`` with its
offset runs, and the error codes the driver acts on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kmigrate.model.offsets import OffsetRun

# A cluster stopped answering: the driver waits the outage out and plans again.
SOURCE_UNAVAILABLE = "source-unavailable"
TARGET_UNAVAILABLE = "target-unavailable"


@dataclass(frozen=True)
class RangePlan:
    """One partition's work in a batch, as the driver planned it."""

    topic: str
    partition: int
    start: int  # the map's read position (source_next)
    end: int  # the source's stable end when planned (exclusive)
    expected_end: int  # where the target ends if only the mirror wrote to it
    actual_end: int  # where it ends now (the driver asked just before the batch)


@dataclass(frozen=True)
class CopySettings:
    """Everything a task needs besides its range; pickled to executors."""

    source: dict[str, Any]  # librdkafka config of the source cluster (secrets included)
    target: dict[str, Any]
    producer: dict[str, Any] = field(default_factory=dict)
    flush_timeout_s: float = 300.0
    # A task stops reading after this many bytes (the rest is the next batch's), so a
    # batch of a long backlog is recorded every few seconds, not after hours.
    max_bytes: int = 256 * 1024 * 1024
    # A task that makes no progress this long while a cluster is unavailable gives up
    # and reports it; the driver waits (kmigrate.waiting) and plans again. The
    # mirror sets it to the clusters' timeout_s.
    outage_s: float = 10.0
    # Record batches copied as bytes (kmigrate.mirror.byte_copy), else record by record.
    as_bytes: bool = False

    def producer_config(self) -> dict[str, Any]:
        return {
            **self.target,
            "acks": "all",
            "enable.idempotence": True,
            # A failed record must fail every later one: no gap may hide in a chunk.
            "enable.gapless.guarantee": True,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "message.max.bytes": 100 * 1024 * 1024,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 256 * 1024,
            **self.producer,
        }


@dataclass
class RangeResult:
    """What a task found and wrote for one partition."""

    topic: str
    partition: int
    runs: list[OffsetRun] = field(default_factory=list)
    first_seen: int | None = None  # the first source offset read
    seen: int = 0
    next_offset: int | None = None  # where reading stopped (None: nothing certain)
    last_timestamp: int | None = None
    resumed: int = 0  # records an interrupted attempt had written, found and kept
    error: tuple[str, str] | None = None  # (code, message)

    def fail(self, code: str, message: str) -> None:
        if self.error is None:
            self.error = (code, message)
