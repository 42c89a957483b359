"""Rewriting an idempotent producer's id in record batches (pure)."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.codec.batches import (
    BatchError,
    crc_ok,
    producer_of,
    sequence_of,
    with_producer,
)


def _batch(pid: int, epoch: int, payload: bytes, sequence: int = 0) -> bytes:
    """A magic-2 batch with one opaque 'record' (the gateway never reads records)."""
    after_crc = struct.pack(">hiqqqhii", 0, 0, 1000, 1000, pid, epoch, sequence, 1) + payload
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch, magic, crc, rest
    return struct.pack(">qiibI", 0, length, 0, 2, crc) + after_crc


@given(
    st.lists(st.binary(min_size=0, max_size=200), min_size=1, max_size=4),
    st.integers(0, 2**62),
    st.integers(0, 2**15 - 1),
)
def test_rewritten_batches_keep_their_records_and_a_valid_crc(
    payloads: list[bytes], pid: int, epoch: int
) -> None:
    records = b"".join(_batch(7, 1, p, sequence=i) for i, p in enumerate(payloads))
    assert producer_of(records) == (7, 1) and crc_ok(records)
    assert sequence_of(records) == (7, 1, 0)
    rewritten = with_producer(records, pid, epoch)
    assert producer_of(rewritten) == (pid, epoch)
    assert crc_ok(rewritten)
    assert len(rewritten) == len(records)
    for p in payloads:
        assert p in rewritten
    assert with_producer(rewritten, 7, 1) == records


def test_batches_of_producers_without_idempotence_pass_unchanged() -> None:
    records = _batch(-1, -1, b"plain")
    assert producer_of(records) is None and sequence_of(records) is None
    assert with_producer(records, 99, 3) == records


@pytest.mark.parametrize(
    ("records", "says"),
    [
        (b"\x00" * 20, "too few"),
        (_batch(1, 0, b"x")[:-1], "claims"),
        (_batch(1, 0, b"x")[:16] + b"\x01" + _batch(1, 0, b"x")[17:], "magic 1"),
    ],
)
def test_bytes_that_are_not_batches_are_refused(records: bytes, says: str) -> None:
    with pytest.raises(BatchError, match=says):
        with_producer(records, 1, 0)
