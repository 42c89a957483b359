"""The exact source-to-target offset map of one mirrored partition.

The mirror writes source partition p to target partition p in order, as the only
writer of the target topic, so the copied records form *runs*: stretches where
source and target offsets both advance by one. Compaction, transaction markers
and aborted records leave gaps in the source offsets; each gap starts a new run.
The map is the list of runs plus ``source_next``, the source offset the mirror
will read next (it can lie past the last mirrored record when the tail of the
read range held only markers or aborted records).

Pure logic: built from delivery reports, stored by the store (one
:class:`PartitionUpdate` per partition and batch), read by group translation and
verification.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True, order=True)
class OffsetRun:
    """``length`` records: source offsets [source_start, source_start+length) were written
    to target offsets [target_start, target_start+length), in the same order."""

    source_start: int
    target_start: int
    length: int

    def __post_init__(self) -> None:
        if self.length < 1 or self.source_start < 0 or self.target_start < 0:
            raise ValueError(f"invalid offset run {self}")

    @property
    def source_end(self) -> int:
        return self.source_start + self.length

    @property
    def target_end(self) -> int:
        return self.target_start + self.length

    def follows(self, other: OffsetRun) -> bool:
        """True when this run continues ``other`` on both sides (they can merge)."""
        return self.source_start == other.source_end and self.target_start == other.target_end


def runs_from_deliveries(pairs: Iterable[tuple[int, int]]) -> list[OffsetRun]:
    """Runs from (source offset, target offset) pairs of delivered records, in send order.

    Raises ValueError if either side does not strictly increase: that would mean a
    record was repeated or reordered, which the mirror must never record as mirrored.
    """
    runs: list[OffsetRun] = []
    prev: tuple[int, int] | None = None
    for source, target in pairs:
        if prev is not None and (source <= prev[0] or target <= prev[1]):
            raise ValueError(f"offsets out of order: {prev} then {(source, target)}")
        if runs and source == runs[-1].source_end and target == runs[-1].target_end:
            last = runs[-1]
            runs[-1] = OffsetRun(last.source_start, last.target_start, last.length + 1)
        else:
            runs.append(OffsetRun(source, target, 1))
        prev = (source, target)
    return runs


def runs_of_chunk(sources: Sequence[int], target_first: int) -> list[OffsetRun]:
    """Runs of a chunk written as one contiguous stretch of target offsets: the i-th
    source offset of ``sources`` (strictly increasing) went to ``target_first + i``.

    The mirror learns only the first and last target offset of a chunk (one delivery
    report each); with one writer and an idempotent, gapless producer, a chunk whose
    span equals its length was written contiguously, so this is exact.
    """
    if not sources:
        return []
    if sources[-1] - sources[0] + 1 == len(sources):
        return [OffsetRun(sources[0], target_first, len(sources))]
    runs: list[OffsetRun] = []
    start = 0
    for i in range(1, len(sources) + 1):
        if i == len(sources) or sources[i] != sources[i - 1] + 1:
            runs.append(OffsetRun(sources[start], target_first + start, i - start))
            start = i
    check_runs(runs)
    return runs


def coalesce(runs: Iterable[OffsetRun]) -> list[OffsetRun]:
    """Merge runs that continue each other; input must be in order."""
    merged: list[OffsetRun] = []
    for run in runs:
        if merged and run.follows(merged[-1]):
            last = merged[-1]
            merged[-1] = OffsetRun(last.source_start, last.target_start, last.length + run.length)
        else:
            merged.append(run)
    return merged


class Exactness(Enum):
    EXACT = "exact"
    NOT_YET_MIRRORED = "not-yet-mirrored"
    BELOW_MAP_START = "below-map-start"


@dataclass(frozen=True)
class Translation:
    """Where a consumer positioned at ``source_offset`` continues on the target.

    ``target_offset`` is the target offset of the first mirrored record whose source
    offset is >= ``source_offset`` (or the next target offset the mirror will write):
    a consumer starting there neither repeats nor skips a record. It is None unless
    ``exactness`` is EXACT.
    """

    source_offset: int
    target_offset: int | None
    exactness: Exactness


@dataclass(frozen=True)
class PartitionOffsetMap:
    """The runs of one partition plus the mirror's read position."""

    runs: tuple[OffsetRun, ...]
    source_next: int
    # Where the mirror began reading; records below it were never mirrored.
    source_start: int

    def __post_init__(self) -> None:
        check_runs(self.runs)
        if self.runs and self.source_next < self.runs[-1].source_end:
            raise ValueError("source_next lies inside the mirrored runs")
        if self.runs and self.runs[0].source_start < self.source_start:
            raise ValueError("a run starts before the map's start")

    @property
    def target_next(self) -> int | None:
        """The target offset the next mirrored record will get (None before the first)."""
        return self.runs[-1].target_end if self.runs else None

    def extend(self, new_runs: Sequence[OffsetRun], source_next: int) -> PartitionOffsetMap:
        """The map after one more batch: its runs and the new read position."""
        if self.runs and new_runs and new_runs[0].source_start < self.source_next:
            raise ValueError("new runs overlap what was already mirrored")
        if source_next < self.source_next:
            raise ValueError("the read position cannot move backwards")
        return PartitionOffsetMap(
            tuple(coalesce([*self.runs, *new_runs])), source_next, self.source_start
        )

    def translate(self, source_offset: int, target_start: int = 0) -> Translation:
        """Exact translation of a committed source offset (the next record to consume).

        ``target_start`` is the target partition's offset before the mirror wrote
        anything (0 for a new topic); it is the answer while nothing was mirrored yet.
        """
        if source_offset < self.source_start:
            return Translation(source_offset, None, Exactness.BELOW_MAP_START)
        if source_offset > self.source_next:
            return Translation(source_offset, None, Exactness.NOT_YET_MIRRORED)
        index = bisect.bisect_right([r.source_start for r in self.runs], source_offset) - 1
        if index >= 0 and source_offset < self.runs[index].source_end:
            run = self.runs[index]
            return Translation(
                source_offset, run.target_start + source_offset - run.source_start, Exactness.EXACT
            )
        if index + 1 < len(self.runs):
            # In a gap: the consumer's next record is the first of the following run.
            return Translation(source_offset, self.runs[index + 1].target_start, Exactness.EXACT)
        # Past the last mirrored record but not past the read position.
        target = self.target_next if self.target_next is not None else target_start
        return Translation(source_offset, target, Exactness.EXACT)

    def source_position(self, target_offset: int, target_start: int = 0) -> int | None:
        """Where a consumer positioned at ``target_offset`` on the target continues on the
        source (the reverse of ``translate``), or None when no source position matches:
        before the mirrored records, or past them (records the mirror did not write).

        At the end of the mirrored records it is ``source_next``: what lies between the
        last run and the read position is markers and gaps a consumer never sees.
        """
        if not self.runs:
            return self.source_start if target_offset == target_start else None
        if target_offset < self.runs[0].target_start:
            return None
        if target_offset == self.target_next:
            return self.source_next
        index = bisect.bisect_right([r.target_start for r in self.runs], target_offset) - 1
        run = self.runs[index]
        if target_offset < run.target_end:
            return run.source_start + target_offset - run.target_start
        if index + 1 < len(self.runs):
            return self.runs[index + 1].source_start
        return None


def check_runs(runs: Sequence[OffsetRun]) -> None:
    """Raise ValueError unless runs are ordered and disjoint on both sides."""
    for before, after in itertools.pairwise(runs):
        if after.source_start < before.source_end or after.target_start < before.target_end:
            raise ValueError(f"offset runs overlap or are out of order: {before}, {after}")


@dataclass(frozen=True)
class PartitionUpdate:
    """What one batch did to one partition."""

    topic: str
    partition: int
    runs: tuple[OffsetRun, ...]
    source_next: int
    last_timestamp: int | None
