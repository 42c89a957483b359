"""Small record batches of one partition merged into one, as the mirror's byte copy
sends them (pure). Busy services write batches of a few records each (many producers,
`linger.ms` 0-5); each batch costs the target a request slot, a validation and an
append, so copied one by one they cap the copy far below what the bytes allow.

Consecutive batches merge when they are uncompressed magic-2 CreateTime batches at
consecutive source offsets (the steps ``batch_copy.steps`` says to copy as bytes), up
to ``MERGE_BYTES`` of records. The merged batch holds every record's bytes as they were
but two fields, which are relative to their batch's header: the offset delta (plus the
batch's distance from the first batch's base offset) and the timestamp delta (plus the
distance between the batches' base timestamps); a record's length is written again
when its deltas' varints change size. So every record keeps its offset (relative to the
merged range), timestamp, key, value and headers; only the header is new (the copier's
producer id, epoch and sequence, the CRC). Compressed batches are not merged here: their
records would have to be decompressed and compressed again.

    record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
            keyLength varint, key, valueLength varint, value, headers count varint, ...
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from kmigrate.codec.batch_copy import CODEC, HEAD, Head, with_crc
from kmigrate.codec.records import read_varint, varint


def _native() -> Callable[[memoryview, int, int, int], bytes] | None:
    """The loop of :func:`shifted`, in C (src/kmigrate/codec/_shift.c), where it was
    built (None: no C compiler where kmigrate was installed)."""
    try:
        from kmigrate.codec import _shift
    except ImportError:
        return None
    return _shift.shifted


_native_shifted = _native()
NATIVE = _native_shifted is not None

# Merged records at most: far below every broker's default max.message.bytes (1 MB) and a
# topic's usual one; a target that refuses a merged batch as too large gets the batches
# one by one (mirror.byte_copy).
MERGE_BYTES = 64 * 1024
_DELETE_HORIZON = 0x40  # baseTimestamp is a compacted log's delete horizon: never merged
_BASE_TIMESTAMP = struct.Struct(">q")
_AT_BASE_TIMESTAMP = 27


def can_merge(head: Head) -> bool:
    """Whether ``head``'s batch may be part of a merged batch at all."""
    return head.magic == 2 and not head.attributes & (CODEC | _DELETE_HORIZON)


class Group:
    """Consecutive batches of one partition to be sent as one."""

    def __init__(self) -> None:
        self.heads: list[Head] = []
        self.size = 0  # their records' bytes

    def takes(self, head: Head) -> bool:
        """Whether ``head`` may be merged after these batches (consecutive source
        offsets, and the merged records within ``MERGE_BYTES``); any batch starts an
        empty group."""
        if not self.heads:
            return True
        last = self.heads[-1]
        return (
            can_merge(head)
            and can_merge(last)
            and head.base == last.next_offset
            and self.size + _records_size(head) <= MERGE_BYTES
        )

    def add(self, head: Head) -> None:
        self.heads.append(head)
        self.size += _records_size(head)


def _records_size(head: Head) -> int:
    return head.end - head.start - HEAD.size


def merged_head(group: Sequence[Head]) -> Head:
    """What the merged batch of ``group`` says, as the copier counts it: its source
    base offset, its offsets and records, its latest timestamp."""
    first, last = group[0], group[-1]
    return Head(
        start=0,
        end=0,
        base=first.base,
        last_delta=last.next_offset - first.base - 1,
        attributes=0,
        producer_id=-1,
        count=sum(h.count for h in group),
        max_timestamp=max(h.max_timestamp for h in group),
    )


def merge(
    records: bytes | memoryview, group: Sequence[Head], producer_id: int, epoch: int, sequence: int
) -> tuple[bytes, bytes]:
    """``group``'s batches of fetched ``records`` as one batch of the copier's idempotent
    producer: its 61-byte header and its records."""
    view = memoryview(records)
    first = group[0]
    base_timestamp = _BASE_TIMESTAMP.unpack_from(view, first.start + _AT_BASE_TIMESTAMP)[0]
    body = bytearray(view[first.start + HEAD.size : first.end])
    for head in group[1:]:
        records_of = view[head.start + HEAD.size : head.end]
        shift_ts = _BASE_TIMESTAMP.unpack_from(view, head.start + _AT_BASE_TIMESTAMP)[0]
        shifts = (head.count, shift_ts - base_timestamp, head.base - first.base)
        if _native_shifted is not None:
            body += _native_shifted(records_of, *shifts)
        else:
            shifted(records_of, *shifts, body)
    summary = merged_head(group)
    header = bytearray(
        HEAD.pack(
            0,  # a producer's batch is based at 0
            HEAD.size - 12 + len(body),
            -1,  # partition leader epoch: the broker's to set
            2,
            0,  # CRC, below
            0,  # uncompressed, CreateTime, not transactional
            summary.last_delta,
            base_timestamp,
            summary.max_timestamp,
            producer_id,
            epoch,
            sequence,
            summary.count,
        )
    )
    return with_crc(header, body), bytes(body)


def shifted(
    records: memoryview, count: int, shift_ts: int, shift_offset: int, out: bytearray
) -> None:
    """``count`` records appended to ``out`` with their timestamp and offset deltas
    moved by ``shift_ts`` and ``shift_offset`` (what _shift.c does, where it is built)."""
    at = 0
    for _ in range(count):
        length, at = read_varint(records, at)
        end = at + length
        timestamp, after_ts = read_varint(records, at + 1)
        offset, rest = read_varint(records, after_ts)
        deltas = varint(timestamp + shift_ts) + varint(offset + shift_offset)
        out += varint(1 + len(deltas) + end - rest)
        out.append(records[at])  # the record's attributes
        out += deltas
        out += records[rest:end]
        at = end
