"""The DIS API's pure parts: record batches it writes and reads, partition ids, and
signed cursors."""

from __future__ import annotations

import gzip
import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.codec import batches, records
from kmigrate.gateway.control import dis


@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.binary(max_size=300)),
        min_size=1,
        max_size=20,
    ),
    st.integers(0, 2**41),
)
def test_an_encoded_batch_decodes_to_its_records(
    values: list[tuple[bytes | None, bytes]], timestamp: int
) -> None:
    raw = records.encode_batch(values, timestamp)
    assert batches.crc_ok(raw)
    at_100 = batches.rebase(raw, 100)  # as a broker or the gateway numbers it
    found = list(records.decode(at_100))
    assert [(r.key, r.value) for r in found] == values
    assert [r.offset for r in found] == list(range(100, 100 + len(values)))
    assert all(r.timestamp_ms == timestamp for r in found)


def test_gzip_batches_decode_and_other_codecs_are_named() -> None:
    plain = records.encode_batch([(b"k", b"v1"), (None, b"v2")], 5)
    body = plain[61:]
    head = bytearray(plain[:61])
    struct.pack_into(">h", head, 21, 1)  # gzip
    packed = gzip.compress(body)
    struct.pack_into(">i", head, 8, 49 + len(packed))
    gz = bytes(head) + packed
    crc = crc32c.crc32c(gz[21:])
    gz = gz[:17] + struct.pack(">I", crc) + gz[21:]
    assert [r.value for r in records.decode(gz)] == [b"v1", b"v2"]
    lz4 = bytearray(gz)
    struct.pack_into(">h", lz4, 21, 3)
    with pytest.raises(records.RecordsError, match="compressed with lz4"):
        list(records.decode(bytes(lz4)))


def test_a_batch_cut_by_the_fetch_size_is_left_out() -> None:
    raw = records.encode_batch([(None, b"a")], 1) + records.encode_batch([(None, b"b")], 1)[:-3]
    assert [r.value for r in records.decode(raw)] == [b"a"]


@pytest.mark.parametrize(("text", "partition"), [("shardId-0000000003", 3), ("7", 7)])
def test_both_partition_id_forms(text: str, partition: int) -> None:
    assert dis.parse_partition(text) == partition
    assert dis.parse_partition(dis.shard_id(partition)) == partition


def test_a_bad_partition_id_is_one_line() -> None:
    with pytest.raises(dis.BadRequest, match="shardId-0000000003 or 3"):
        dis.parse_partition("shard-3")


@given(st.text(min_size=1, max_size=40), st.integers(0, 10**4), st.integers(0, 2**62))
def test_a_cursor_reads_back_and_a_changed_one_is_refused(
    stream: str, partition: int, offset: int
) -> None:
    secret = b"s" * 32
    cursor = dis.Cursor(stream, partition, offset)
    text = dis.sign(cursor, secret)
    assert dis.verify(text, secret) == cursor
    forged = dis.sign(dis.Cursor(stream, partition, offset + 1), b"x" * 32)
    with pytest.raises(dis.BadRequest, match="not one this gateway issued"):
        dis.verify(forged, secret)
    with pytest.raises(dis.BadRequest):
        dis.verify(text[:-2] + ("AA" if not text.endswith("AA") else "BB"), secret)
