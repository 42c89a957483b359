"""What to compare in each partition: the source and target offset ranges, and why the
rest of the partition is left out (retention, not mirrored yet, lost before mirroring).

Pure logic. With a link, the offset map says which source records were written to which
target offsets; the comparison covers the mapped pairs that both clusters still retain.
Without a link, each partition is compared by position from a start on each side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from kmigrate.model.links import Gap
from kmigrate.model.offsets import PartitionOffsetMap

RETENTION = "retention"  # deleted (retention, delete-records) on one side: not compared
NOT_MIRRORED_YET = "not-mirrored-yet"  # on the source past the mirror's read position
LOST_BEFORE_MIRRORING = "lost-before-mirroring"  # the mirror recorded a gap (data loss)
UNMAPPED_TARGET = "unmapped-target"  # on the target past the mirrored range, not the source's
IN_FLIGHT_BATCH = "in-flight-batch"  # past the map, equal to the next source records
AFTER_PROMOTE = "after-promote"  # past the map of a promoted topic: its new owners' writes


@dataclass(frozen=True)
class Span:
    """Offsets [start, end) of one partition on one cluster."""

    start: int
    end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, 0)


@dataclass(frozen=True)
class Note:
    """A part of a partition that is not compared, and why (never a failure)."""

    kind: str
    side: str  # "source" | "target"
    start: int
    end: int

    def describe(self) -> str:
        what = {
            RETENTION: "deleted by retention, not compared",
            NOT_MIRRORED_YET: "not mirrored yet",
            LOST_BEFORE_MIRRORING: "deleted before the mirror copied it (recorded data loss)",
            UNMAPPED_TARGET: "past the mirrored range and not the source's next records",
            IN_FLIGHT_BATCH: "past the mirrored range, equal to the next source records "
            "(a mirror batch not recorded yet: interrupted or in flight)",
            AFTER_PROMOTE: f"{self.end - self.start:,} record(s) written after the topic was "
            "promoted (its new producers)",
        }[self.kind]
        return f"{self.side} offsets {self.start}..{self.end - 1}: {what}"


@dataclass(frozen=True)
class PartitionCheck:
    """One partition's comparison plan. ``source``/``target`` are None when nothing is
    left to compare; ``map`` is set with a link (then target offsets are checked too)."""

    topic: str
    partition: int
    source: Span | None
    target: Span | None
    notes: tuple[Note, ...] = ()
    map: PartitionOffsetMap | None = None
    # Target records past the map: they must equal the source's next records (the first
    # ones of ``tail_source``) to be an unrecorded mirror batch rather than a mismatch.
    tail: Span | None = None
    tail_source: Span | None = None


def plan_linked(
    topic: str,
    partition: int,
    offset_map: PartitionOffsetMap,
    source_offsets: Span,
    target_offsets: Span,
    gaps: Iterable[Gap] = (),
    *,
    target_start: int = 0,
    promoted: bool = False,
) -> PartitionCheck:
    """Compare the mapped pairs from the first one both sides still retain to the map's end.

    ``source_offsets``/``target_offsets`` are each partition's log start and the end a
    read_committed consumer can read to; ``target_start`` is where the target ended
    when the link adopted it. Target records past the map are written by the new owners
    when the topic is ``promoted``; otherwise they are checked against the source's next
    records (the check's ``tail``).
    """
    notes: list[Note] = [
        Note(LOST_BEFORE_MIRRORING, "source", g.source_start, g.source_end) for g in gaps
    ]
    if source_offsets.end > offset_map.source_next:
        notes.append(Note(NOT_MIRRORED_YET, "source", offset_map.source_next, source_offsets.end))
    target_next = offset_map.target_next
    tail_start = max(target_start if target_next is None else target_next, target_offsets.start)
    tail = None
    if target_offsets.end > tail_start:
        if promoted:
            notes.append(Note(AFTER_PROMOTE, "target", tail_start, target_offsets.end))
        else:
            notes.append(Note(UNMAPPED_TARGET, "target", tail_start, target_offsets.end))
            tail = Span(tail_start, target_offsets.end)
    spans = _compared_spans(offset_map, source_offsets, target_offsets, notes)
    return PartitionCheck(
        topic,
        partition,
        *spans,
        tuple(notes),
        offset_map,
        tail=tail,
        tail_source=Span(offset_map.source_next, source_offsets.end) if tail else None,
    )


def _compared_spans(
    offset_map: PartitionOffsetMap, source_offsets: Span, target_offsets: Span, notes: list[Note]
) -> tuple[Span | None, Span | None]:
    """The source and target spans of the mapped pairs both sides still hold (adds
    retention notes)."""
    runs, target_next = offset_map.runs, offset_map.target_next
    if not runs or target_next is None:
        return None, None
    first = runs[0]
    if source_offsets.start > first.source_start:
        notes.append(Note(RETENTION, "source", first.source_start, source_offsets.start))
    if target_offsets.start > first.target_start:
        notes.append(Note(RETENTION, "target", first.target_start, target_offsets.start))
    for run in runs:
        skip = max(
            0, source_offsets.start - run.source_start, target_offsets.start - run.target_start
        )
        if skip < run.length:
            # A side that holds less than the map says is compared as it is: the
            # comparison then reports what is missing.
            return (
                Span(run.source_start + skip, min(offset_map.source_next, source_offsets.end)),
                Span(run.target_start + skip, min(target_next, target_offsets.end)),
            )
    return None, None


def as_in_flight(check: PartitionCheck) -> PartitionCheck:
    """The check with its tail noted as an unrecorded mirror batch (it matched)."""
    notes = tuple(
        Note(IN_FLIGHT_BATCH, n.side, n.start, n.end) if n.kind == UNMAPPED_TARGET else n
        for n in check.notes
    )
    return replace(check, notes=notes)


def plan_positional(
    topic: str, partition: int, source_offsets: Span, target_offsets: Span
) -> PartitionCheck:
    """Compare by position: the i-th record from each side's start with each other."""
    return PartitionCheck(topic, partition, source_offsets, target_offsets)


def mapped_records(check: PartitionCheck) -> int | None:
    """How many records the map says lie in the compared source range (link only)."""
    if check.map is None or check.source is None:
        return None
    start, end = check.source.start, check.source.end
    return sum(max(0, min(r.source_end, end) - max(r.source_start, start)) for r in check.map.runs)
