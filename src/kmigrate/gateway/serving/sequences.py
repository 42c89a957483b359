"""An idempotent producer's writes through the gateway, per client connection. Pure.

A broker connection fails all or nothing, in order: when one write of a partition
fails, the writes pipelined behind it fail too, and the client retries them in order
with the same sequence numbers, so the broker recognises any it already holds.
Through the gateway the pipelined writes of one partition are forwarded concurrently
and can meet different fates: the first refused (its backend just went away, or its
leader is not known yet), the next accepted by the backend that is back, which answers
OUT_OF_ORDER_SEQUENCE_NUMBER because the first never arrived. A client reads that as
a gap in its own sequence and bumps its epoch, renumbering every record not yet
acknowledged, including records whose answer was lost and which may already be in the
log: duplicates.

The guard keeps the broker's promise. A write the backend refused as out of order
while an earlier write of the same partition on this connection had failed or was
still unanswered is answered NOT_LEADER_OR_FOLLOWER instead: true (it was not
written), retriable, and the client retries in order without renumbering anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

MAX_REMEMBERED = 64  # failed writes kept per partition (a client has at most 5 in flight)
_WRITTEN = (ErrorCode.none, ErrorCode.duplicate_sequence_number)


@dataclass(frozen=True)
class Write:
    """The first batch of one partition's part of a Produce request."""

    topic: str
    partition: int
    producer: tuple[int, int]  # (producer id, epoch) as the client sent them
    sequence: int  # base sequence


@dataclass
class _Partition:
    producer: tuple[int, int]
    open: dict[int, bool] = field(default_factory=dict)  # base sequence -> failed


class SequenceGuard:
    def __init__(self) -> None:
        self._partitions: dict[tuple[str, int], _Partition] = {}

    def sent(self, write: Write) -> None:
        key = (write.topic, write.partition)
        state = self._partitions.get(key)
        if state is None or state.producer != write.producer:
            # a new producer or epoch starts its sequence afresh
            state = self._partitions[key] = _Partition(write.producer)
        state.open[write.sequence] = False

    def answered(self, write: Write, code: ErrorCode) -> ErrorCode:
        """The error code to give the client for ``write``, which the backend (or the
        gateway) answered with ``code``."""
        state = self._partitions.get((write.topic, write.partition))
        if state is None or state.producer != write.producer:
            return code
        state.open.pop(write.sequence, None)
        if code in _WRITTEN:
            # the sequence continues past every earlier write: none is failed any more
            for sequence, failed in list(state.open.items()):
                if failed and sequence < write.sequence:
                    del state.open[sequence]
            return code
        earlier = any(sequence < write.sequence for sequence in state.open)
        state.open[write.sequence] = True
        while len(state.open) > MAX_REMEMBERED:
            del state.open[min(state.open)]
        if code == ErrorCode.out_of_order_sequence_number and earlier:
            return ErrorCode.not_leader_or_follower
        return code
