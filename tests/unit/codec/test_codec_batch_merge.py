"""Small batches merged into one by the byte copy (pure): every record's offset,
timestamp, key, value and headers as they were, the header the copier's own, the CRC
right; only consecutive uncompressed batches merge, within the size cap."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.codec import batch_merge
from kmigrate.codec.batch_copy import HEAD, Head, heads
from kmigrate.codec.records import read_varint

_HEADER = struct.Struct(">qiibIhiqqqhii")
Rec = tuple[int, bytes | None, bytes, tuple[tuple[str, bytes], ...]]  # ts, key, value, headers


def _varint(value: int) -> bytes:
    zigzag, out = (value << 1) ^ (value >> 63), bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    return bytes([*out, zigzag])


def _field(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def _batch(base: int, base_ts: int, records: list[Rec], attrs: int = 0) -> bytes:
    """One magic-2 batch at source offset ``base`` holding ``records``."""
    body = bytearray()
    for delta, (ts, key, value, headers) in enumerate(records):
        record = b"\x00" + _varint(ts - base_ts) + _varint(delta) + _field(key) + _field(value)
        record += _varint(len(headers))
        for name, data in headers:
            record += _field(name.encode()) + _field(data)
        body += _varint(len(record)) + record
    max_ts = max(ts for ts, *_ in records)
    n = len(records)
    head = _HEADER.pack(base, 49 + len(body), 5, 2, 0, attrs, n - 1, base_ts, max_ts, 77, 3, 9, n)
    return head + bytes(body)


def _decode(batch: bytes) -> list[tuple[int, Rec]]:
    """(offset delta, record) of every record of one uncompressed batch."""
    *_, base_ts, _max_ts, _pid, _epoch, _seq, count = _HEADER.unpack_from(batch)
    view, at, found = memoryview(batch), HEAD.size, []
    for _ in range(count):
        length, at = read_varint(view, at)
        end, at = at + length, at + 1
        ts, at = read_varint(view, at)
        offset, at = read_varint(view, at)
        key, at = _read(view, at)
        value, at = _read(view, at)
        n, at = read_varint(view, at)
        headers = []
        for _ in range(n):
            name, at = _read(view, at)
            data, at = _read(view, at)
            headers.append((bytes(name or b"").decode(), bytes(data or b"")))
        assert at == end, "a record's length is its bytes'"
        found.append((offset, (base_ts + ts, key, bytes(value or b""), tuple(headers))))
    return found


def _read(view: memoryview, at: int) -> tuple[bytes | None, int]:
    length, at = read_varint(view, at)
    return (None, at) if length < 0 else (bytes(view[at : at + length]), at + length)


_record = st.tuples(
    st.integers(1_700_000_000_000 - 10**6, 1_700_000_000_000 + 10**6),  # earlier or later
    st.one_of(st.none(), st.binary(max_size=20)),
    st.binary(max_size=300),
    st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=8)), max_size=2).map(tuple),
)


@given(st.lists(st.lists(_record, min_size=1, max_size=6), min_size=2, max_size=12),
       st.integers(0, 10**9))  # fmt: skip
def test_every_record_keeps_its_offset_timestamp_key_value_and_headers(
    batches: list[list[Rec]], base: int
) -> None:
    fetched, at = bytearray(), base
    for records in batches:
        fetched += _batch(at, records[0][0], records)
        at += len(records)
    group = batch_merge.Group()
    for head in heads(bytes(fetched)):
        assert group.takes(head)
        group.add(head)
    header, body = batch_merge.merge(bytes(fetched), group.heads, 4242, 7, 100)
    merged = header + body
    (_, length, _, magic, crc, attrs, last, _ts, max_ts, pid, epoch, seq, count) = (
        _HEADER.unpack_from(merged)
    )
    expected = [r for records in batches for r in records]
    assert _decode(merged) == list(enumerate(expected))
    assert (length, magic, attrs, last, count) == (len(merged) - 12, 2, 0, len(expected) - 1,
                                                   len(expected))  # fmt: skip
    assert (pid, epoch, seq) == (4242, 7, 100) and max_ts == max(r[0] for r in expected)
    assert crc == crc32c.crc32c(merged[21:]), "the CRC the target checks"
    counted = batch_merge.merged_head(group.heads)
    assert (counted.base, counted.offsets, counted.count) == (base, len(expected), len(expected))


def _head(base: int, n: int, size: int = 200, attrs: int = 0) -> Head:
    return Head(0, HEAD.size + size, base, n - 1, attrs, -1, n)


def test_only_consecutive_uncompressed_batches_merge_within_the_cap() -> None:
    group = batch_merge.Group()
    group.add(_head(10, 3))
    assert group.takes(_head(13, 2))
    assert not group.takes(_head(14, 2)), "a gap (a marker, an aborted batch) between them"
    assert not group.takes(_head(13, 2, attrs=3)), "lz4: compressed records are not merged"
    assert not group.takes(_head(13, 2, attrs=0x40)), "a delete horizon, not a timestamp"
    assert not group.takes(_head(13, 2, size=batch_merge.MERGE_BYTES)), "over the cap"
    compressed = batch_merge.Group()
    compressed.add(_head(10, 3, attrs=1))
    assert not compressed.takes(_head(13, 2)), "nothing merges after a compressed batch"
    assert batch_merge.Group().takes(_head(0, 1, attrs=1)), "any batch starts a group"


@given(st.lists(_record, min_size=1, max_size=20), st.integers(-(10**12), 10**12),
       st.integers(0, 2**31))  # fmt: skip
def test_the_c_loop_writes_what_the_python_loop_writes(
    records: list[Rec], shift_ts: int, shift_offset: int
) -> None:
    """`make install` builds kmigrate.codec._shift where a C compiler is (this machine:
    its absence fails here, not silently slower in production)."""
    assert batch_merge.NATIVE, "kmigrate.codec._shift was not built"
    body = memoryview(_batch(0, records[0][0], records))[HEAD.size :]
    expected = bytearray()
    batch_merge.shifted(body, len(records), shift_ts, shift_offset, expected)
    native = batch_merge._native()
    assert native is not None
    assert native(body, len(records), shift_ts, shift_offset) == bytes(expected)


def test_the_c_loop_refuses_records_cut_short() -> None:
    native = batch_merge._native()
    assert native is not None
    body = _batch(0, 0, [(0, b"k", b"value", ())])[HEAD.size :]
    with pytest.raises(ValueError, match="cut short"):
        native(memoryview(body[:-3]), 1, 0, 0)
    with pytest.raises(ValueError, match="more records than bytes"):
        native(memoryview(body), len(body) + 1, 0, 0)
