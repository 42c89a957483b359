"""Record batches as the mirror's byte copy takes them from a fetch answer: which whole
batches a read_committed consumer would read, which of them a broker accepts unchanged
from another producer, and the header that makes one the copier's own idempotent batch.
Pure.

A batch is copied as bytes only when the target stores exactly the same records at
consecutive offsets: magic 2, CreateTime, no offset missing inside it (compaction
leaves holes a broker refuses from a producer), and wholly inside the range being
copied. Any other batch is copied record by record (``Step.records``), the only place
records are decoded.

    offset  0 baseOffset int64        21 attributes int16       43 producerId int64
            8 batchLength int32       23 lastOffsetDelta int32  51 producerEpoch int16
           12 partitionLeaderEpoch    27 baseTimestamp int64    53 baseSequence int32
           16 magic int8              35 maxTimestamp int64     57 recordCount int32
           17 crc uint32 (CRC-32C of bytes 21 to the batch's end)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import crc32c

from kmigrate.codec.records import read_varint

HEAD = struct.Struct(">qiibIhiqqqhii")  # the 61 bytes before the records
_OLD_HEAD = 17  # offset, size, crc, magic of a message set (magic 0 and 1)
_BASE = struct.Struct(">q")
_ATTRIBUTES = struct.Struct(">h")
_IDENTITY = struct.Struct(">qhi")  # producer id, epoch, base sequence
_CRC = struct.Struct(">I")
_MARKER = struct.Struct(">hh")  # a control record's key: version, type

CODEC = 0x07  # the attributes' compression bits
LOG_APPEND_TIME = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20
ABORT = 0
SEQUENCES = 2**31  # a producer's sequence numbers wrap here

COPY, SKIP, RECORDS = "copy", "skip", "records"
STRADDLES = "a batch straddles the range's edge"
# Below this many records per batch on average (over at least SMALL_JUDGED compressed
# batches of one fetch), a batch costs the byte copy more than its records cost the
# record copier, which also batches them again (measured: bench/results, issue 37).
# Uncompressed small batches are merged instead (codec.batch_merge).
SMALL_RECORDS = 16
SMALL_JUDGED = 8


@dataclass(frozen=True)
class Head:
    """Where one batch lies in a fetch answer's bytes, and what its header says."""

    start: int
    end: int
    base: int
    last_delta: int
    attributes: int
    producer_id: int
    count: int
    magic: int = 2
    max_timestamp: int = -1

    @property
    def next_offset(self) -> int:
        return self.base + self.last_delta + 1

    @property
    def offsets(self) -> int:
        return self.last_delta + 1


@dataclass(frozen=True)
class Step:
    """What to do with one batch: ``copy`` it as bytes, ``skip`` it (a transaction
    marker or an aborted transaction's batch), or copy source offsets [start, stop)
    ``records`` one by one, for ``reason``."""

    kind: str
    head: Head
    start: int
    stop: int
    reason: str = ""


def heads(records: bytes | memoryview) -> Iterator[Head]:
    """Every whole batch of fetched ``records``; a last one cut short by the fetch size
    is left for the next fetch. A message set of magic 0 or 1 is one ``Head`` of its
    magic (its other fields are not read)."""
    start, size = 0, len(records)
    while size - start >= _OLD_HEAD:
        base, length = struct.unpack_from(">qi", records, start)
        end = start + 12 + length
        magic = records[start + 16]
        if end > size or length <= 0:
            return
        if magic != 2:
            yield Head(start, end, base, 0, 0, -1, 1, magic)
        elif end - start >= HEAD.size:
            _, _, _, _, _, attrs, last, _, max_ts, pid, _, _, count = HEAD.unpack_from(
                records, start
            )
            yield Head(start, end, base, last, attrs, pid, count, 2, max_ts)
        start = end


def marker_type(records: bytes | memoryview, head: Head) -> int:
    """0 (abort) or 1 (commit): the type in a control batch's record key."""
    at = head.start + HEAD.size
    _, at = read_varint(records, at)  # record length
    at += 1  # record attributes
    for _ in range(3):  # timestamp delta, offset delta, key length
        _, at = read_varint(records, at)
    return int(_MARKER.unpack_from(records, at)[1])


def steps(
    records: bytes | memoryview,
    aborted: Iterable[tuple[int, int]],
    position: int,
    end: int,
) -> Iterator[Step]:
    """What to do with each batch of one partition's fetched ``records``, reading from
    source offset ``position`` up to ``end`` (exclusive), as a read_committed consumer
    reads: ``aborted`` are the fetch answer's (producer id, first offset) pairs, applied
    as Kafka's Java consumer applies them (a transactional batch of a producer whose
    aborted transaction began at or before it is dropped, until that producer's abort
    marker). Stops at the first batch at or past ``end``."""
    pending = sorted((first, pid) for pid, first in aborted)
    aborting: set[int] = set()
    for head in heads(records):
        if head.base >= end:
            return
        while pending and pending[0][0] <= head.base + head.last_delta:
            aborting.add(pending.pop(0)[1])
        if head.next_offset <= position:
            _note_marker(records, head, aborting)
            continue  # before the range (a fetch answers from the batch holding position)
        start, stop = max(position, head.base), min(head.next_offset, end)
        if head.magic == 2 and head.attributes & CONTROL:
            _note_marker(records, head, aborting)
            yield Step(SKIP, head, start, stop)
        elif head.magic == 2 and head.attributes & TRANSACTIONAL and head.producer_id in aborting:
            yield Step(SKIP, head, start, stop)
        elif (reason := _not_as_bytes(head, position, end)) is not None:
            yield Step(RECORDS, head, start, stop, reason)
        else:
            yield Step(COPY, head, start, stop)
        position = stop


def small_batches(found: list[Step]) -> str | None:
    """Why one fetch's batches of a partition are better copied record by record: many
    compressed batches of few records each, which the byte copy cannot merge (None: they
    are not)."""
    copies = [
        step.head.count for step in found if step.kind == COPY and step.head.attributes & CODEC
    ]
    if len(copies) < SMALL_JUDGED or sum(copies) >= SMALL_RECORDS * len(copies):
        return None
    return f"small batches ({sum(copies) / len(copies):.1f} records each on average)"


def _note_marker(records: bytes | memoryview, head: Head, aborting: set[int]) -> None:
    if head.magic == 2 and head.attributes & CONTROL and marker_type(records, head) == ABORT:
        aborting.discard(head.producer_id)


def _not_as_bytes(head: Head, position: int, end: int) -> str | None:
    """Why a broker would not store ``head``'s batch, sent by the copier, as the same
    records at consecutive offsets (None: it would)."""
    if head.magic != 2:
        return f"message format v{head.magic} (only v2 batches are copied as bytes)"
    if head.attributes & LOG_APPEND_TIME:
        return "LogAppendTime timestamps (a producer's batch is stored as CreateTime)"
    if head.offsets != head.count:
        return "offsets missing inside a batch (compaction; a broker refuses such a batch)"
    if head.base < position or head.next_offset > end:
        return STRADDLES
    return None


def as_producer(
    records: bytes | memoryview, head: Head, producer_id: int, epoch: int, sequence: int
) -> tuple[bytes, memoryview]:
    """``head``'s batch as the copier's idempotent producer sends it: its new 61-byte
    header (base offset 0, producer id, epoch and base sequence replaced, the
    transactional bit cleared, the CRC recomputed) and a view of its records, which are
    never copied here."""
    view = memoryview(records)
    header = bytearray(view[head.start : head.start + HEAD.size])
    _BASE.pack_into(header, 0, 0)  # brokers refuse a producer's batch not based at 0
    _ATTRIBUTES.pack_into(header, 21, head.attributes & ~TRANSACTIONAL)
    _IDENTITY.pack_into(header, 43, producer_id, epoch, sequence)
    body = view[head.start + HEAD.size : head.end]
    return with_crc(header, body), body


def with_crc(header: bytearray, body: bytes | bytearray | memoryview) -> bytes:
    """A batch's 61-byte ``header`` with the CRC-32C of its attributes onwards and of
    ``body`` (its records) written in."""
    _CRC.pack_into(header, 17, crc32c.crc32c(body, crc32c.crc32c(bytes(header[21:]))))
    return bytes(header)


def next_sequence(sequence: int, head: Head) -> int:
    return (sequence + head.offsets) % SEQUENCES
