"""The gateway keeps a client's idempotent writes in order per partition (pure): a
write the backend refused as out of order because an earlier one on the same client
connection failed or is unanswered is a retriable "not written", never a sequence gap
that makes the client renumber its records."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kmigrate.gateway.serving.sequences import MAX_REMEMBERED, SequenceGuard, Write

OOO = ErrorCode.out_of_order_sequence_number
NOT_LEADER = ErrorCode.not_leader_or_follower


def _write(sequence: int, epoch: int = 0, partition: int = 0) -> Write:
    return Write("t", partition, (7, epoch), sequence)


def test_out_of_order_behind_a_failed_write_is_a_retriable_not_written() -> None:
    guard = SequenceGuard()
    first, second = _write(10), _write(14)
    guard.sent(first)
    guard.sent(second)
    assert guard.answered(first, NOT_LEADER) == NOT_LEADER  # its backend was away
    assert guard.answered(second, OOO) == NOT_LEADER  # the backend is back, saw a gap


def test_out_of_order_behind_an_unanswered_write_is_a_retriable_not_written() -> None:
    guard = SequenceGuard()
    first, second = _write(10), _write(14)
    guard.sent(first)
    guard.sent(second)
    assert guard.answered(second, OOO) == NOT_LEADER
    assert guard.answered(first, ErrorCode.request_timed_out) == ErrorCode.request_timed_out


def test_a_genuine_gap_reaches_the_client() -> None:
    guard = SequenceGuard()
    alone = _write(10)
    guard.sent(alone)
    assert guard.answered(alone, OOO) == OOO


def test_once_the_retry_is_written_later_gaps_are_genuine_again() -> None:
    guard = SequenceGuard()
    first, second = _write(10), _write(14)
    guard.sent(first)
    assert guard.answered(first, NOT_LEADER) == NOT_LEADER
    guard.sent(first)  # the client's retry, same sequence
    assert guard.answered(first, ErrorCode.duplicate_sequence_number) == (
        ErrorCode.duplicate_sequence_number
    )
    guard.sent(second)
    assert guard.answered(second, OOO) == OOO


def test_a_new_epoch_or_another_partition_starts_afresh() -> None:
    guard = SequenceGuard()
    old = _write(10)
    guard.sent(old)
    assert guard.answered(old, NOT_LEADER) == NOT_LEADER
    bumped, other = _write(0, epoch=1), _write(3, partition=1)
    guard.sent(bumped)
    guard.sent(other)
    assert guard.answered(bumped, OOO) == OOO
    assert guard.answered(other, OOO) == OOO


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=300, unique=True))
def test_failed_writes_remembered_stay_bounded(sequences: list[int]) -> None:
    guard = SequenceGuard()
    for sequence in sequences:
        guard.sent(_write(sequence))
        guard.answered(_write(sequence), NOT_LEADER)
    state = guard._partitions[("t", 0)]
    assert len(state.open) <= MAX_REMEMBERED
    assert max(state.open) == max(sequences)  # the newest are the ones kept
