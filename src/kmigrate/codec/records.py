"""Kafka records inside magic-2 batches, for the gateway's DIS HTTP API: encoding the
records it writes (one uncompressed batch) and decoding the ones it reads (uncompressed
or gzip; batches compressed with snappy, lz4 or zstd are named, not decoded). Pure.

    record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
            keyLength varint, key, valueLength varint, value, headers count varint, ...
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c

_HEADER = struct.Struct(">qiibIhiqqqhii")  # through recordCount: 61 bytes
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class RecordsError(ValueError):
    """Bytes the DIS API cannot turn into records."""


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


def varint(value: int) -> bytes:
    """``value`` as a zig-zag varint."""
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if at >= len(data) or shift > 63:
            raise RecordsError("a record is cut short")
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at
        shift += 7


def _bytes_field(value: bytes | None) -> bytes:
    return varint(-1) if value is None else varint(len(value)) + value


def encode_batch(values: Sequence[tuple[bytes | None, bytes]], timestamp_ms: int) -> bytes:
    """One uncompressed batch of ``values`` ((key, value) pairs), not idempotent."""
    body = bytearray()
    for delta, (key, value) in enumerate(values):
        record = b"\x00" + varint(0) + varint(delta) + _bytes_field(key) + _bytes_field(value)
        record += varint(0)  # no headers
        body += varint(len(record)) + record
    count = len(values)
    after_crc = struct.pack(
        ">hiqqqhii", 0, count - 1, timestamp_ms, timestamp_ms, -1, -1, -1, count
    ) + bytes(body)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, length, -1, 2, crc32c.crc32c(after_crc)) + after_crc


def decode(records: bytes) -> Iterator[Record]:
    """The data records of fetched ``records`` (control batches skipped, a batch cut
    short by the fetch size ignored)."""
    start = 0
    while len(records) - start >= _HEADER.size:
        (base, length, _epoch, magic, _crc, attributes, _last, base_ts, _max_ts,
         _pid, _pe, _seq, count) = _HEADER.unpack_from(records, start)  # fmt: skip
        end = start + 12 + length
        if end > len(records):
            return
        if magic != 2:
            raise RecordsError(f"record batch magic {magic} (only 2 is read)")
        body = records[start + _HEADER.size : end]
        start = end
        if attributes & 0x20:  # a transaction marker
            continue
        codec = attributes & 0x07
        if codec == 1:
            body = zlib.decompress(body, wbits=31)
        elif codec:
            raise RecordsError(
                f"records compressed with {CODECS.get(codec, codec)} are not served by the "
                "DIS API (write them uncompressed or with gzip)"
            )
        yield from _records(body, count, base, base_ts)


def _records(body: bytes, count: int, base: int, base_ts: int) -> Iterator[Record]:
    at = 0
    for _ in range(count):
        length, at = read_varint(body, at)
        end = at + length
        at += 1  # attributes
        ts_delta, at = read_varint(body, at)
        offset_delta, at = read_varint(body, at)
        key, at = _read_bytes(body, at)
        value, at = _read_bytes(body, at)
        at = end  # headers are not part of a DIS record
        yield Record(base + offset_delta, base_ts + ts_delta, key, value)


def _read_bytes(body: bytes, at: int) -> tuple[bytes | None, int]:
    length, at = read_varint(body, at)
    if length < 0:
        return None, at
    return body[at : at + length], at + length
