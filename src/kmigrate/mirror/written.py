"""What a record-by-record copy task proves it wrote, and the texts of what it cannot.

A chunk is the records of one consume call produced back to back; only its first and
last delivery reports are asked for. With one writer per mirror topic and a gapless
idempotent producer, a chunk whose last - first + 1 equals its length, adjacent to the
chunk before, was written contiguously in order (``chunk_problem`` says why not
otherwise). ``copy_task`` runs the copy; this module judges and words its outcome.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError

from kmigrate.mirror.ranges import RangePlan


class Chunk:
    """Records produced back to back; delivery reports for the first and last only."""

    __slots__ = ("error", "fatal", "first", "last", "sources")

    def __init__(self, sources: list[int]) -> None:
        self.sources = sources
        self.first: int | None = None
        self.last: int | None = None
        self.error: str | None = None
        self.fatal = False  # the producer cannot go on (gapless guarantee, fencing)

    def on_first(self, error: KafkaError | None, message: Any) -> None:
        if error is not None:
            self.failed(error)
        else:
            self.first = message.offset()

    def on_last(self, error: KafkaError | None, message: Any) -> None:
        if error is not None:
            self.failed(error)
        else:
            self.last = message.offset()

    def failed(self, error: KafkaError) -> None:
        self.error = self.error or error.str()
        self.fatal = self.fatal or error.fatal()

    def on_both(self, error: KafkaError | None, message: Any) -> None:
        self.on_first(error, message)
        self.on_last(error, message)


def chunk_problem(
    chunk: Chunk, expected: int, remaining: int, timeout_s: float, where: str
) -> tuple[str, str] | None:
    """Why this chunk cannot count as written at target offsets ``expected`` on, if so."""
    if chunk.error is not None:
        return "kafka", f"producing to {where} failed: {chunk.error}"
    if chunk.first is None or chunk.last is None:
        what = "were not acknowledged within" if remaining else "got no delivery report in"
        return "kafka", f"{len(chunk.sources)} record(s) to {where} {what} {timeout_s:g}s"
    span = chunk.last - chunk.first + 1
    if chunk.first != expected or span > len(chunk.sources):
        return "foreign-write", FOREIGN.format(where=where, target=min(expected, chunk.first))
    if span < len(chunk.sources):
        return "kafka", (
            f"{len(chunk.sources) - span} record(s) copied from source offset "
            f"{chunk.sources[0]} on were dropped by the producer while later ones reached "
            f"{where}: the target copy has a gap; roll the topic back and mirror it again"
        )
    return None


def partition_name(plan: RangePlan) -> str:
    return f"{plan.topic}[{plan.partition}]"


def partitions_named(plans: list[RangePlan]) -> str:
    if len(plans) == 1:
        return partition_name(plans[0])
    return f"{partition_name(plans[0])} and {len(plans) - 1} more target partition(s)"


FOREIGN = (
    "target partition {where} was written by something other than the mirror near "
    "target offset {target}; stop that writer (a mirror topic has one writer until promoted)"
)


def behind(plan: RangePlan) -> str:
    return (
        f"target partition {partition_name(plan)} ends at offset {plan.actual_end} "
        f"but the mirror wrote up to {plan.expected_end}: records were deleted from it "
        "or the topic was recreated"
    )


def foreign(plan: RangePlan, target_offset: int, source_offset: int) -> str:
    return (
        f"target partition {partition_name(plan)} was written by something other than "
        f"the mirror: the record at target offset {target_offset} is not the copy of source "
        f"offset {source_offset}; "
        "stop that writer (a mirror topic has one writer until promoted)"
    )


def same(found: Any, message: Any) -> bool:
    if found.key() != message.key() or found.value() != message.value():
        return False
    if list(found.headers() or ()) != list(message.headers() or ()):
        return False
    kind, ts = found.timestamp()
    return bool(kind != TIMESTAMP_CREATE_TIME or ts == message.timestamp()[1])
