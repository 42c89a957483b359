"""Kafka record batches (magic 2) as the gateway sees them: bytes it passes through,
except the producer id and epoch of an idempotent producer's batches, which it rewrites
for backends other than the group home (each cluster allocates its own producer ids),
recomputing the CRC, and, for partitions that migrated, the base offset and leader
epoch of fetched batches (outside the CRC: the records themselves are untouched). Pure.

    offset  0 baseOffset int64        21 attributes int16       43 producerId int64
            8 batchLength int32       23 lastOffsetDelta int32  51 producerEpoch int16
           12 partitionLeaderEpoch    27 baseTimestamp int64    53 baseSequence int32
           16 magic int8              35 maxTimestamp int64     57 recordCount int32
           17 crc uint32 (CRC-32C of bytes 21 to the batch's end)
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import crc32c

NO_PRODUCER_ID = -1
_HEADER = 61
_LENGTH = struct.Struct(">i")
_PRODUCER = struct.Struct(">qh")
_CRC = struct.Struct(">I")
_BASE = struct.Struct(">q")
_EPOCH = struct.Struct(">i")


class BatchError(ValueError):
    """Bytes that are not magic-2 record batches."""


def _batches(records: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of every batch in ``records``."""
    start = 0
    while start < len(records):
        if len(records) - start < _HEADER:
            raise BatchError(f"{len(records) - start} byte(s) are too few for a record batch")
        (length,) = _LENGTH.unpack_from(records, start + 8)
        end = start + 12 + length
        if length < _HEADER - 12 or end > len(records):
            raise BatchError(f"a record batch claims {length} bytes")
        if records[start + 16] != 2:
            raise BatchError(f"record batch magic {records[start + 16]} (only 2 is supported)")
        yield start, end
        start = end


def producer_of(records: bytes) -> tuple[int, int] | None:
    """The (producer id, epoch) of the first batch, None when not idempotent."""
    for start, _ in _batches(records):
        pid, epoch = _PRODUCER.unpack_from(records, start + 43)
        return (pid, epoch) if pid != NO_PRODUCER_ID else None
    return None


def sequence_of(records: bytes) -> tuple[int, int, int] | None:
    """(producer id, epoch, base sequence) of the first batch, None when not idempotent."""
    for start, _ in _batches(records):
        pid, epoch = _PRODUCER.unpack_from(records, start + 43)
        if pid == NO_PRODUCER_ID:
            return None
        (sequence,) = _LENGTH.unpack_from(records, start + 53)
        return pid, epoch, sequence
    return None


def with_producer(records: bytes, producer_id: int, epoch: int) -> bytes:
    """``records`` with every idempotent batch's producer id and epoch replaced."""
    out = bytearray(records)
    for start, end in _batches(records):
        if _PRODUCER.unpack_from(out, start + 43)[0] == NO_PRODUCER_ID:
            continue
        _PRODUCER.pack_into(out, start + 43, producer_id, epoch)
        _CRC.pack_into(out, start + 17, crc32c.crc32c(memoryview(out)[start + 21 : end]))
    return bytes(out)


def crc_ok(records: bytes) -> bool:
    return all(
        _CRC.unpack_from(records, s + 17)[0] == crc32c.crc32c(records[s + 21 : e])
        for s, e in _batches(records)
    )


def last_sequence_of(records: bytes) -> int | None:
    """The sequence number of the last record of an idempotent producer's batches."""
    last = None
    for start, _ in _batches(records):
        (sequence,) = _LENGTH.unpack_from(records, start + 53)
        (delta,) = _LENGTH.unpack_from(records, start + 23)
        last = sequence + delta
    return last


def offsets_taken(records: bytes) -> int:
    """How many offsets ``records`` take once written: a partition that took them at
    base offset b holds at least b + this many (whole batches, never part of one)."""
    return sum(_LENGTH.unpack_from(records, s + 23)[0] + 1 for s, _ in _batches(records))


def rebase(records: bytes, delta: int, below: int | None = None) -> bytes:
    """Fetched ``records`` as a client of the virtual offset space sees them: every base
    offset moved by ``delta``, no leader epoch (epochs of two clusters do not compare),
    only batches that end below ``below``, without a batch the fetch size cut short."""
    out = bytearray()
    start = 0
    while len(records) - start >= _HEADER:
        (length,) = _LENGTH.unpack_from(records, start + 8)
        end = start + 12 + length
        if end > len(records) or records[start + 16] != 2:
            break  # cut short by the fetch size (or not a batch the gateway can rebase)
        (base,) = _BASE.unpack_from(records, start)
        (last,) = _LENGTH.unpack_from(records, start + 23)
        if below is not None and base + delta + last >= below:
            break
        batch = bytearray(records[start:end])
        _BASE.pack_into(batch, 0, base + delta)
        _EPOCH.pack_into(batch, 12, -1)
        out += batch
        start = end
    return bytes(out)
