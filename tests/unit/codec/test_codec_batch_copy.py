"""What the byte copy does with each fetched batch, and the batch it sends (pure)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.codec import batch_copy
from kmigrate.codec.batch_copy import COPY, RECORDS, SKIP, STRADDLES, Head, as_producer, steps
from kmigrate.codec.batches import crc_ok, sequence_of
from kmigrate.codec.records import decode, encode_batch

_HEADER = struct.Struct(">qiibIhiqqqhii")


def _batch(base: int, n: int, *, pid: int = -1, attrs: int = 0, holes: bool = False) -> bytes:
    """A batch of ``n`` records at source offsets base.. (CRC not recomputed: the
    copier never checks a fetched batch's CRC, the target does)."""
    out = bytearray(encode_batch([(None, f"v{base + i}".encode()) for i in range(n)], 1000))
    struct.pack_into(">q", out, 0, base)
    struct.pack_into(">h", out, 21, attrs)
    struct.pack_into(">q", out, 43, pid)
    if holes:  # compaction kept the count but the offsets span more
        struct.pack_into(">i", out, 23, n)
    return bytes(out)


def _marker(base: int, pid: int, commit: bool) -> bytes:
    """A control batch: one record whose key is (version 0, type)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    record = b"\x00" + bytes([0, 0]) + bytes([len(key) * 2]) + key + bytes([0, 0])
    body = bytes([len(record) * 2]) + record
    head = _HEADER.pack(base, 49 + len(body), 0, 2, 0, 0x30, 0, 0, 0, pid, 0, -1, 1)
    return head + body


@st.composite
def _log(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, int]], set[int], int]:
    """A partition's log: plain batches and two producers' transactions, committed or
    aborted, interleaved; the fetch answer's aborted list; the offsets a
    read_committed consumer reads below the last stable offset; that offset."""
    out, aborted, readable = bytearray(), [], set()
    offset = 0
    open_: dict[int, tuple[int, bool]] = {}
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["plain", "txn", "end"]))
        pid = draw(st.sampled_from([7, 8]))
        n = draw(st.integers(1, 4))
        if kind == "plain":
            out += _batch(offset, n)
            readable |= set(range(offset, offset + n))
            offset += n
        elif kind == "txn":
            if pid not in open_:
                open_[pid] = (offset, draw(st.booleans()))
            first, commit = open_[pid]
            out += _batch(offset, n, pid=pid, attrs=batch_copy.TRANSACTIONAL)
            if commit:
                readable |= set(range(offset, offset + n))
            offset += n
        elif pid in open_:
            first, commit = open_.pop(pid)
            if not commit:
                aborted.append((pid, first))
            out += _marker(offset, pid, commit)
            offset += 1
    stable = min([first for first, _ in open_.values()] + [offset])  # the LSO
    return bytes(out), aborted, {o for o in readable if o < stable}, stable


@given(_log(), st.data())
def test_steps_copy_exactly_what_a_read_committed_consumer_reads(log, data) -> None:  # type: ignore[no-untyped-def]
    records, aborted, readable, stable = log
    ends = [h.next_offset for h in batch_copy.heads(records) if h.next_offset <= stable]
    if not ends:
        return
    end = data.draw(st.sampled_from(ends))  # a range ends where a batch ends (<= the LSO)
    copied, position = set(), 0
    for step in steps(records, aborted, 0, end):
        assert step.kind != RECORDS, step
        assert step.start == position, "every offset is accounted for, in order"
        if step.kind == COPY:
            copied |= set(range(step.start, step.stop))
        position = step.stop
    assert position == end
    assert copied == {o for o in readable if o < end}


def test_a_batch_across_either_edge_of_the_range_goes_record_by_record() -> None:
    records = _batch(0, 5) + _batch(5, 5) + _batch(10, 5)
    found = list(steps(records, [], 3, 12))
    assert [(s.kind, s.start, s.stop, s.reason) for s in found] == [
        (RECORDS, 3, 5, STRADDLES),
        (COPY, 5, 10, ""),
        (RECORDS, 10, 12, STRADDLES),
    ]


def test_batches_a_broker_would_store_differently_go_record_by_record() -> None:
    appended = _batch(0, 2, attrs=batch_copy.LOG_APPEND_TIME)
    compacted = _batch(0, 2, holes=True)
    ((step,),) = [list(steps(appended, [], 0, 2))]
    assert step.kind == RECORDS and "LogAppendTime" in step.reason
    ((step,),) = [list(steps(compacted, [], 0, 3))]
    assert step.kind == RECORDS and "compaction" in step.reason


def test_a_batch_cut_short_by_the_fetch_size_waits_for_the_next_fetch() -> None:
    records = _batch(0, 3) + _batch(3, 3)[:-4]
    assert [(s.kind, s.start, s.stop) for s in steps(records, [], 0, 6)] == [(COPY, 0, 3)]


def test_markers_before_the_position_still_end_an_aborted_transaction() -> None:
    records = (
        _batch(0, 2, pid=7, attrs=batch_copy.TRANSACTIONAL)
        + _marker(2, 7, commit=False)
        + _batch(3, 2, pid=7, attrs=batch_copy.TRANSACTIONAL)
    )
    kinds = [(s.kind, s.start) for s in steps(records, [(7, 0), (7, 3)], 3, 5)]
    assert kinds == [(SKIP, 3)]
    kinds = [(s.kind, s.start) for s in steps(records, [(7, 0)], 3, 5)]
    assert kinds == [(COPY, 3)], "a later transaction of that producer that committed is read"


@given(
    st.integers(1, 30), st.integers(0, 2**40), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1)
)
def test_the_batch_sent_is_the_copiers_own_with_the_same_records(
    n: int, pid: int, epoch: int, sequence: int
) -> None:
    fetched = _batch(100, n, pid=9, attrs=batch_copy.TRANSACTIONAL)
    (head,) = batch_copy.heads(fetched)
    header, body = as_producer(fetched, head, pid, epoch, sequence)
    sent = header + bytes(body)
    assert crc_ok(sent)
    assert sequence_of(sent) == (pid, epoch, sequence)
    assert struct.unpack_from(">q", sent, 0)[0] == 0
    assert not struct.unpack_from(">h", sent, 21)[0] & batch_copy.TRANSACTIONAL
    assert [r.value for r in decode(sent)] == [f"v{100 + i}".encode() for i in range(n)]
    assert batch_copy.next_sequence(sequence, head) == (sequence + n) % 2**31


def test_an_old_message_format_is_named() -> None:
    old = struct.pack(">qiIbb", 0, 14, 0, 1, 0) + b"\0" * 8
    (step,) = steps(old, [], 0, 1)
    assert step.kind == RECORDS and "v1" in step.reason
    assert isinstance(step.head, Head)


@pytest.mark.parametrize("end", [0, 4])
def test_nothing_at_or_past_the_end_is_touched(end: int) -> None:
    records = _batch(4, 3)
    assert list(steps(records, [], 0, end)) == []


def test_many_small_compressed_batches_are_left_to_the_record_copier() -> None:
    lz4 = 3
    tiny = b"".join(_batch(i * 2, 2, attrs=lz4) for i in range(8))
    reason = batch_copy.small_batches(list(steps(tiny, [], 0, 16)))
    assert reason == "small batches (2.0 records each on average)"
    few = b"".join(_batch(i * 2, 2, attrs=lz4) for i in range(7))
    assert batch_copy.small_batches(list(steps(few, [], 0, 14))) is None, "too few to judge"
    full = b"".join(_batch(i * 16, 16, attrs=lz4) for i in range(8))
    assert batch_copy.small_batches(list(steps(full, [], 0, 128))) is None
    plain = b"".join(_batch(i * 2, 2) for i in range(8))
    assert batch_copy.small_batches(list(steps(plain, [], 0, 16))) is None, "merged instead"
