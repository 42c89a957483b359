"""The driver side of one mirror batch: plan the ranges, copy them on Spark, make the
result durable.

Order matters for exactly-once: the plan comes from the offset map in memory (which
equals the store), the tasks write and report, the runs and read positions are stored
in one transaction, and only then does the batch count as done. A crash at any point
leaves the store at the previous batch and the target at most ahead of it by records
that the next attempt reads back and recognises.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kmigrate.errors import (
    ClusterUnavailableError,
    DataLossError,
    ForeignWriteError,
    KafkaOperationError,
    KMigrateError,
    MirrorError,
)
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror.copy_task import copy_ranges
from kmigrate.mirror.ranges import (
    SOURCE_UNAVAILABLE,
    TARGET_UNAVAILABLE,
    CopySettings,
    RangePlan,
    RangeResult,
)
from kmigrate.model.links import Gap, Link, PartitionState
from kmigrate.model.offsets import PartitionUpdate
from kmigrate.spark.tasks import run_tasks
from kmigrate.store import Store
from kmigrate.store.offsets import load_partitions, record_batch, record_gap

if TYPE_CHECKING:
    from pyspark import SparkContext

TopicPartition = tuple[str, int]


def plan_reads(
    states: Mapping[TopicPartition, PartitionState],
    source_ends: Mapping[TopicPartition, int],
    max_offsets: int | None = None,
) -> dict[TopicPartition, tuple[int, int]]:
    """Per partition with records to copy, the source range [start, end) of this batch:
    from the map's read position to the source's stable end, at most ``max_offsets``.

    Pure. One range per partition, never split: a partition's records reach the
    target in order only if one task writes them.
    """
    reads = {}
    for tp, source_end in source_ends.items():
        start = states[tp].map.source_next
        end = source_end if max_offsets is None else min(source_end, start + max_offsets)
        if end > start:
            reads[tp] = (start, end)
    return reads


@dataclass
class Throughput:
    """Records mirrored per second over a sliding window."""

    window_s: float = 10.0
    samples: list[tuple[float, int]] = field(default_factory=list)
    total: int = 0

    def add(self, records: int) -> None:
        self.total += records
        now = time.monotonic()
        self.samples.append((now, self.total))
        self.samples = [s for s in self.samples if now - s[0] <= self.window_s]

    def rate(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        (t0, n0), (t1, n1) = self.samples[0], self.samples[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0


@dataclass
class MirrorContext:
    """State the batches of one mirror process share (driver only)."""

    store: Store
    link: Link
    source: ClusterAdmin
    target: ClusterAdmin
    copy: CopySettings
    allow_gaps: bool
    max_offsets: int | None = None
    # A batch of at most this many offsets is copied by the driver itself: a Spark job's
    # fixed ~0.1 s would be most of its time (a promote through the gateway holds
    # producers' writes while the last batch runs). 0: every batch on Spark.
    driver_offsets: int = 0
    report: Callable[[str], None] = lambda _message: None
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    throughput: Throughput = field(default_factory=Throughput)
    batches: int = 0

    def reload(self) -> None:
        self.states = {
            (s.topic, s.partition): s for s in load_partitions(self.store, self.link.name)
        }


def run_batch(
    ctx: MirrorContext, spark: Callable[[], SparkContext], pairs: list[TopicPartition]
) -> int:
    """Copy what the source holds past the map on ``pairs``; returns records copied.

    Exact: never skips or repeats a record. Raises (after recording what was proven
    written) on a foreign write, a retention loss or a failed task, and with
    ClusterUnavailableError when a cluster stopped answering: calling it again once
    the cluster is back goes on exactly (positional resume, in the same process).
    """
    ends = ctx.source.partition_offsets(pairs, "latest", committed_only=True)
    reads = plan_reads(ctx.states, ends, ctx.max_offsets)
    if not reads:
        return 0
    since = {tp: start for tp, (start, _end) in reads.items()}
    lost_before = _check_retention(ctx, since, list(reads))
    actual = ctx.target.partition_offsets(list(reads), "latest")
    plans = [
        RangePlan(tp[0], tp[1], start, end, ctx.states[tp].expected_target_end, actual[tp])
        for tp, (start, end) in reads.items()
    ]
    ctx.batches += 1
    sizes = [p.end - p.start for p in plans]
    task = copy_ranges
    if ctx.copy.as_bytes:
        # Imported when used: kio (the protocol) costs CLI start-up time, and where
        # hypothesis is installed its import writes a .hypothesis folder into the cwd.
        from kmigrate.mirror.byte_copy import copy_ranges_as_bytes

        task = copy_ranges_as_bytes
    # Spark starts (spark.session.OnDemand) at the first batch the driver does not copy.
    context = spark() if sum(sizes) > ctx.driver_offsets else None
    try:
        if context is None:
            # The same task function, in this process (its clients kept here as a
            # Python worker keeps its own): the batch's guarantees are the task's.
            results = list(task(ctx.copy, plans))
        else:
            results = run_tasks(
                context,
                functools.partial(task, ctx.copy),
                plans,
                sizes,
                description=f"kmigrate mirror {ctx.link.name} batch {ctx.batches}",
            )
    except Exception as exc:
        # Executor failures arrive wrapped in JVM and Python traces; the cause is the
        # last line of the Python one.
        raise MirrorError(f"batch {ctx.batches} failed: {_cause(exc)}") from None
    found = {(r.topic, r.partition): r for r in results}
    # Retention is checked before the batch is recorded: if that check meets an outage,
    # nothing is recorded and the retry reads this batch's writes back.
    first_seen = {tp: r.first_seen for tp, r in found.items() if r.first_seen is not None}
    suspects = [
        tp for tp, first in first_seen.items() if first > since[tp] and tp not in lost_before
    ]
    losses = _find_losses(ctx, since, suspects, first_seen)
    updates = [_update(ctx, tp, found[tp]) for tp in reads]
    record_batch(ctx.store, ctx.link.name, updates)
    for result in sorted(results, key=lambda r: (r.topic, r.partition)):
        if result.resumed:
            ctx.report(
                f"{result.topic}[{result.partition}]: {result.resumed} record(s) an interrupted "
                "attempt had written were found on the target, matched the source and were "
                "kept (not written again)"
            )
    for update in updates:
        state = ctx.states[(update.topic, update.partition)]
        ctx.states[(update.topic, update.partition)] = _advanced(state, update)
    if losses and not ctx.allow_gaps:
        raise DataLossError(_loss_message(ctx, losses))
    _raise_first(ctx, found)
    written = sum(run.length for u in updates for run in u.runs)
    ctx.throughput.add(written)
    return written


def _cause(exc: Exception) -> str:
    lines = [
        line.strip()
        for line in str(exc).splitlines()
        if line.strip() and not line.strip().startswith(("at ", "SQLSTATE", "..."))
    ]
    python = [line for line in lines if "Error" in line or "Exception" in line]
    return (python or lines or [type(exc).__name__])[-1][:500]


def _raise_first(ctx: MirrorContext, results: Mapping[TopicPartition, RangeResult]) -> None:
    """The batch's error, if any: a data or Kafka error first; a cluster that stopped
    answering only when nothing worse happened (the caller waits that out)."""
    errors = {tp: r.error for tp, r in results.items() if r.error is not None}
    if not errors:
        return
    hard = {tp: e for tp, e in errors.items() if e[0] not in _UNAVAILABLE}
    first = errors[min(hard or errors)]
    more = len(hard or errors) - 1
    suffix = f" (and {more} more partition(s))" if more else ""
    code, message = first
    if code in _UNAVAILABLE:
        side = _UNAVAILABLE[code]
        cluster = ctx.link.source if side == "source" else ctx.link.target
        raise ClusterUnavailableError(
            f"{side} cluster '{cluster}' unavailable: {message}{suffix}",
            cluster=cluster,
            condition=message + suffix,
        )
    kind: type[KMigrateError] = {
        "foreign-write": ForeignWriteError,
        "kafka": KafkaOperationError,
    }.get(code, MirrorError)
    raise kind(message + suffix)


_UNAVAILABLE = {SOURCE_UNAVAILABLE: "source", TARGET_UNAVAILABLE: "target"}


def _update(ctx: MirrorContext, tp: TopicPartition, result: RangeResult) -> PartitionUpdate:
    source_next = result.next_offset
    if source_next is None:
        source_next = ctx.states[tp].map.source_next
    return PartitionUpdate(tp[0], tp[1], tuple(result.runs), source_next, result.last_timestamp)


def _advanced(state: PartitionState, update: PartitionUpdate) -> PartitionState:
    return PartitionState(
        state.topic,
        state.partition,
        state.map.extend(update.runs, update.source_next),
        state.target_start,
        state.mirrored + sum(r.length for r in update.runs),
        update.last_timestamp if update.last_timestamp is not None else state.last_timestamp,
        int(time.time() * 1000),
        state.records_per_s,
    )


def _check_retention(
    ctx: MirrorContext, since: dict[TopicPartition, int], suspects: list[TopicPartition]
) -> list[TopicPartition]:
    """Before a batch: source records deleted before they were mirrored stop the mirror,
    or (allowed) become a recorded gap. Returns the partitions with a loss."""
    losses = _find_losses(ctx, since, suspects, {})
    if losses and not ctx.allow_gaps:
        raise DataLossError(_loss_message(ctx, losses))
    return [(g.topic, g.partition) for g in losses]


def _find_losses(
    ctx: MirrorContext,
    since: dict[TopicPartition, int],
    suspects: list[TopicPartition],
    first_seen: dict[TopicPartition, int],
) -> list[Gap]:
    """Source records deleted by retention before they were mirrored; each is recorded.

    ``since`` is each partition's read position before the batch. Before the batch
    every partition is a suspect; after it, those whose first record lay past that
    position (a gap compaction or markers explain, unless retention moved the log
    start past the position meanwhile).
    """
    if not suspects:
        return []
    lows = ctx.source.partition_offsets(suspects, "earliest")
    losses = [
        Gap(
            tp[0],
            tp[1],
            since[tp],
            min(lows[tp], first_seen.get(tp, lows[tp])),
            "deleted by retention before mirrored",
        )
        for tp in suspects
        if lows[tp] > since[tp]
    ]
    for gap in losses:
        record_gap(ctx.store, ctx.link.name, gap)
    return losses


def _loss_message(ctx: MirrorContext, losses: list[Gap]) -> str:
    first = losses[0]
    more = f" and {len(losses) - 1} more partition(s)" if len(losses) > 1 else ""
    return (
        f"source records {first.topic}[{first.partition}] offsets "
        f"{first.source_start}..{first.source_end - 1} were deleted by retention on "
        f"'{ctx.link.source}' before the mirror copied them{more}; they are lost for the "
        "target. Restart with --allow-gaps to accept the gap (it stays in mirror status)"
    )
