"""Comparing two sides: chunk digests first, then the first differing pair of records.

Pure logic. Each side of a partition is a sequence of record fingerprints (XXH3-128
over key, value, headers in order, timestamp and timestamp type, computed in Spark
tasks). The sequence is cut by position into chunks of ``CHUNK`` records; a chunk's
digest is BLAKE2b over its fingerprints in order, and a side's digest is BLAKE2b over
its chunk digests. Equal digests and counts mean equal sequences (up to a 2^-128-scale
accident); otherwise the first differing chunk is read back record by record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from kmigrate.model.offsets import Exactness, PartitionOffsetMap

CHUNK = 1000
LOOKAHEAD = 3  # records compared past a difference to tell extra/missing/swapped apart

CHANGED = "changed"
MISSING_ON_TARGET = "missing-on-target"
EXTRA_ON_TARGET = "extra-on-target"
SWAPPED = "swapped"
WRONG_OFFSET = "wrong-target-offset"


@dataclass(frozen=True)
class Chunk:
    index: int
    first_offset: int
    last_offset: int
    records: int
    size: int  # key and value bytes
    digest: bytes


@dataclass(frozen=True)
class SideDigest:
    records: int
    bytes: int
    digest: str  # hex

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> SideDigest:
        h = hashlib.blake2b(digest_size=16)
        for c in chunks:
            h.update(c.digest)
        return cls(sum(c.records for c in chunks), sum(c.size for c in chunks), h.hexdigest())


def first_differing_chunk(
    source: Sequence[Chunk],
    target: Sequence[Chunk],
    offset_map: PartitionOffsetMap | None = None,
) -> int | None:
    """Index of the first chunk position where the sides differ (or one side ends).

    With ``offset_map`` a chunk whose first or last target offset is not where the map
    puts its source counterpart differs too.
    """
    for i in range(max(len(source), len(target))):
        if i >= len(source) or i >= len(target):
            return i
        s, t = source[i], target[i]
        if s.records != t.records or s.digest != t.digest:
            return i
        if offset_map is not None and (
            _mapped_to(offset_map, s.first_offset) != t.first_offset
            or _mapped_to(offset_map, s.last_offset) != t.last_offset
        ):
            return i
    return None


@dataclass(frozen=True)
class RecordView:
    """A record as read back for a difference report."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
    timestamp_type: int
    fingerprint: bytes

    def field_values(self) -> dict[str, object]:
        return {
            "key": self.key,
            "value": self.value,
            "headers": self.headers,
            "timestamp": self.timestamp,
            "timestamp_type": self.timestamp_type,
        }


@dataclass(frozen=True)
class Difference:
    """The first place the sides differ, with both records (either may be absent)."""

    kind: str
    source_offset: int | None
    target_offset: int | None
    fields: tuple[str, ...]
    source_record: RecordView | None
    target_record: RecordView | None

    def describe(self) -> str:
        at = f"source offset {self.source_offset}, target offset {self.target_offset}"
        if self.kind == CHANGED:
            return f"record differs ({', '.join(self.fields)}) at {at}"
        if self.kind == MISSING_ON_TARGET:
            return (
                f"source offset {self.source_offset} is missing on the target "
                f"(expected at target offset {self.target_offset})"
            )
        if self.kind == EXTRA_ON_TARGET:
            where = (
                "after the last source record"
                if self.source_offset is None
                else f"before source offset {self.source_offset}"
            )
            return f"extra record on the target at offset {self.target_offset} ({where})"
        if self.kind == SWAPPED:
            return f"records swapped on the target at {at} and the next pair"
        return (
            f"record is at target offset {self.target_offset}, the offset map says otherwise ({at})"
        )


def _same(a: Sequence[RecordView], b: Sequence[RecordView], *, may_be_empty: bool = False) -> bool:
    """Equal over the records both have (at the end of a range one side runs out)."""
    n = min(len(a), len(b))
    return (n > 0 or may_be_empty) and all(
        x.fingerprint == y.fingerprint for x, y in zip(a[:n], b[:n], strict=True)
    )


def first_difference(
    source: Sequence[RecordView],
    target: Sequence[RecordView],
    offset_map: PartitionOffsetMap | None = None,
) -> Difference | None:
    """The first position where the two record sequences differ, classified.

    The sequences start at the same position of the comparison (a chunk start) and carry
    ``LOOKAHEAD`` records past the chunk when there are any. With ``offset_map`` a pair
    of equal records whose target offset is not the one the map gives is a difference too.
    """
    for i in range(max(len(source), len(target))):
        s = source[i] if i < len(source) else None
        t = target[i] if i < len(target) else None
        if s is None:
            return Difference(EXTRA_ON_TARGET, None, t.offset, (), None, t)  # type: ignore[union-attr]
        if t is None:
            return Difference(MISSING_ON_TARGET, s.offset, None, (), s, None)
        if s.fingerprint == t.fingerprint:
            if offset_map is not None and _mapped_to(offset_map, s.offset) != t.offset:
                return Difference(WRONG_OFFSET, s.offset, t.offset, (), s, t)
            continue
        return _classify(source, target, i)
    return None


def _mapped_to(offset_map: PartitionOffsetMap, source_offset: int) -> int | None:
    found = offset_map.translate(source_offset)
    return found.target_offset if found.exactness is Exactness.EXACT else None


def _classify(source: Sequence[RecordView], target: Sequence[RecordView], i: int) -> Difference:
    s, t = source[i], target[i]
    ahead = LOOKAHEAD
    if (
        i + 1 < len(source)
        and i + 1 < len(target)
        and (
            source[i].fingerprint == target[i + 1].fingerprint
            and source[i + 1].fingerprint == target[i].fingerprint
            and _same(
                source[i + 2 : i + 2 + ahead], target[i + 2 : i + 2 + ahead], may_be_empty=True
            )
        )
    ):
        return Difference(SWAPPED, s.offset, t.offset, (), s, t)
    if _same(source[i : i + ahead], target[i + 1 : i + 1 + ahead]):
        return Difference(EXTRA_ON_TARGET, s.offset, t.offset, (), s, t)
    if _same(source[i + 1 : i + 1 + ahead], target[i : i + ahead]):
        return Difference(MISSING_ON_TARGET, s.offset, t.offset, (), s, t)
    theirs = t.field_values()
    fields = tuple(name for name, value in s.field_values().items() if value != theirs[name])
    return Difference(CHANGED, s.offset, t.offset, fields, s, t)
