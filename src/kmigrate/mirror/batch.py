"""The driver side of one micro-batch: plan, write on executors, make the result durable.

Order matters for exactly-once: the plan comes from the offset map in memory (which
equals the store), the executors write and report, the runs and read positions are
stored in one transaction, and only then does the batch count as done. A crash at
any point leaves the store at the previous batch and the target at most ahead of
it by records that the next attempt reads back and recognises.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from kmigrate.errors import (
    DataLossError,
    ForeignWriteError,
    KafkaOperationError,
    KMigrateError,
    MirrorError,
)
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror.checkpoint import batch_end_offsets
from kmigrate.mirror.model import Gap, Link, PartitionState
from kmigrate.mirror.offset_map import OffsetRun
from kmigrate.mirror.writer import RESULT_DDL, PartitionPlan, WritePlan, write_batches
from kmigrate.store import Store
from kmigrate.store.offsets import PartitionUpdate, load_partitions, record_batch, record_gap

TopicPartition = tuple[str, int]

SELECT = (
    "topic",
    "partition",
    "offset",
    "key",
    "value",
    "headers",
    "unix_millis(timestamp) AS ts",
)


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
    target_config: dict[str, Any]
    producer: dict[str, Any]
    allow_gaps: bool
    checkpoint: Path
    report: Callable[[str], None] = lambda _message: None
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    throughput: Throughput = field(default_factory=Throughput)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: bool = False
    failure: Exception | None = None

    def reload(self) -> None:
        self.states = {
            (s.topic, s.partition): s for s in load_partitions(self.store, self.link.name)
        }


def run_batch(ctx: MirrorContext, df: DataFrame, batch_id: int) -> None:
    """The foreachBatch function. A failure is kept in ``ctx.failure`` and not raised: the
    job stops the query and reports it in one line (raised, Spark would log pages of JVM
    and Python traces first). Batches after a failure do nothing, so nothing is written
    past it, and the store still says where to resume."""
    with ctx.lock:
        if ctx.closing or ctx.failure is not None:
            return  # the job is stopping; the next query starts again from the store
        try:
            written = _mirror(ctx, df, batch_id)
        except KMigrateError as exc:
            ctx.failure = exc
            return
        except Exception as exc:
            # Executor failures arrive wrapped in JVM and Python traces; the cause is the
            # last line of the Python one.
            ctx.failure = MirrorError(f"batch {batch_id} failed: {_cause(exc)}")
            return
    ctx.throughput.add(written)


def _cause(exc: Exception) -> str:
    lines = [
        line.strip()
        for line in str(exc).splitlines()
        if line.strip() and not line.strip().startswith(("at ", "SQLSTATE", "..."))
    ]
    python = [line for line in lines if "Error" in line or "Exception" in line]
    return (python or lines or [type(exc).__name__])[-1][:500]


def _mirror(ctx: MirrorContext, df: DataFrame, batch_id: int) -> int:
    ends = batch_end_offsets(ctx.checkpoint, batch_id)
    todo = {tp: end for tp, end in ends.items() if end > ctx.states[tp].map.source_next}
    if not todo:
        return 0
    since = {tp: ctx.states[tp].map.source_next for tp in todo}
    lost_before = _check_retention(ctx, since, list(todo), {})
    actual = ctx.target.partition_offsets(list(todo), "latest")
    plan = WritePlan(
        ctx.target_config,
        {
            tp: PartitionPlan(
                ctx.states[tp].map.source_next, ctx.states[tp].expected_target_end, actual[tp]
            )
            for tp in todo
        },
        ctx.producer,
    )
    rows = (
        df.selectExpr(*SELECT)
        .mapInArrow(functools.partial(write_batches, plan), RESULT_DDL)
        .collect()
    )
    results = _Results.of(rows)
    updates = [_update(ctx, tp, end, results) for tp, end in todo.items()]
    record_batch(ctx.store, ctx.link.name, updates)
    for (topic, partition), count in sorted(results.resumed.items()):
        ctx.report(
            f"{topic}[{partition}]: {count} record(s) an interrupted attempt had written "
            "were found on the target, matched the source and were kept (not written again)"
        )
    for update in updates:
        state = ctx.states[(update.topic, update.partition)]
        ctx.states[(update.topic, update.partition)] = _advanced(state, update)
    suspects = [
        tp
        for tp, first in results.first_seen.items()
        if first > since[tp] and tp not in lost_before
    ]
    _check_retention(ctx, since, suspects, results.first_seen)
    results.raise_first()
    return sum(run.length for u in updates for run in u.runs)


@dataclass
class _Results:
    runs: dict[TopicPartition, list[OffsetRun]]
    first_seen: dict[TopicPartition, int]
    last_timestamp: dict[TopicPartition, int]
    errors: dict[TopicPartition, tuple[str, str]]
    # Records an interrupted attempt had written, found on the target and kept.
    resumed: dict[TopicPartition, int]

    @classmethod
    def of(cls, rows: list[Any]) -> _Results:
        runs: dict[TopicPartition, list[OffsetRun]] = defaultdict(list)
        first_seen: dict[TopicPartition, int] = {}
        last_ts: dict[TopicPartition, int] = {}
        errors: dict[TopicPartition, tuple[str, str]] = {}
        resumed: dict[TopicPartition, int] = {}
        for row in rows:
            tp = (row.topic, row.partition)
            if row.kind == "run":
                runs[tp].append(OffsetRun(row.source_start, row.target_start, row.length))
            elif row.kind == "resumed":
                resumed[tp] = row.length
            elif row.kind == "seen":
                first_seen[tp] = row.source_start
                if row.last_timestamp is not None:
                    last_ts[tp] = row.last_timestamp
            else:
                errors[tp] = (row.code, row.message)
        for found in runs.values():
            found.sort()
        return cls(dict(runs), first_seen, last_ts, errors, resumed)

    def raise_first(self) -> None:
        if not self.errors:
            return
        code, message = self.errors[min(self.errors)]
        more = f" (and {len(self.errors) - 1} more partition(s))" if len(self.errors) > 1 else ""
        kind: type[KMigrateError] = {
            "foreign-write": ForeignWriteError,
            "kafka": KafkaOperationError,
        }.get(code, MirrorError)
        raise kind(message + more)


def _update(ctx: MirrorContext, tp: TopicPartition, end: int, results: _Results) -> PartitionUpdate:
    runs = tuple(results.runs.get(tp, ()))
    if tp in results.errors:
        # Only what was verifiably written counts; the rest is read again next time.
        source_next = runs[-1].source_end if runs else ctx.states[tp].map.source_next
    else:
        source_next = end
    return PartitionUpdate(tp[0], tp[1], runs, source_next, results.last_timestamp.get(tp))


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
    ctx: MirrorContext,
    since: dict[TopicPartition, int],
    suspects: list[TopicPartition],
    first_seen: dict[TopicPartition, int],
) -> list[TopicPartition]:
    """Source records deleted before they were mirrored: stop, or (allowed) record the gap.

    ``since`` is each partition's read position before the batch. Before the batch
    every partition is a suspect; after it, those whose first record lay past that
    position (a gap compaction or markers explain, unless retention moved the log
    start past the position meanwhile). Returns the partitions with a loss.
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
    if losses and not ctx.allow_gaps:
        raise DataLossError(_loss_message(ctx, losses))
    return [(g.topic, g.partition) for g in losses]


def _loss_message(ctx: MirrorContext, losses: list[Gap]) -> str:
    first = losses[0]
    more = f" and {len(losses) - 1} more partition(s)" if len(losses) > 1 else ""
    return (
        f"source records {first.topic}[{first.partition}] offsets "
        f"{first.source_start}..{first.source_end - 1} were deleted by retention on "
        f"'{ctx.link.source}' before the mirror copied them{more}; they are lost for the "
        "target. Restart with --allow-gaps to accept the gap (it stays in mirror status)"
    )
