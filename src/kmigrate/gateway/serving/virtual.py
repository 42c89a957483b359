"""Requests and answers of a migrated partition, between the client's virtual offsets
and a backend's physical ones (kmigrate.gateway.control.partition_moves). Pure: each function takes
the partition's segments and the client's item, and says which cluster serves it, the
item as that cluster must see it, and how to make its answer virtual.

Leader epochs do not compare across clusters, so a migrated partition has none for its
clients: Metadata and fetched batches carry -1 (clients then skip epoch validation, as
with brokers from before KIP-320) and requests go to backends without one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import Records

from kmigrate.codec import batches
from kmigrate.gateway.control.partition_moves import Segment, first_readable, locate

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
# "Your epoch is valid at every offset": the virtual log is never truncated.
NO_TRUNCATION = 2**62


@dataclass(frozen=True)
class Part:
    cluster: str
    item: Any
    fix: Callable[[Any], Any]


def _no_epoch(item: Any) -> Any:
    if getattr(item, "current_leader_epoch", -1) != -1:
        return dataclasses.replace(item, current_leader_epoch=-1)
    return item


def fetch(space: Sequence[Segment], item: Any) -> Part | ErrorCode:
    """A fetch at a virtual offset: from the segment holding it, never past its end."""
    offset = int(item.fetch_offset)
    readable = first_readable(space)
    if offset < readable.start:
        return ErrorCode.offset_out_of_range
    segment = locate(space, offset)
    changes: dict[str, Any] = {"fetch_offset": segment.to_physical(offset)}
    if hasattr(item, "log_start_offset"):
        changes["log_start_offset"] = -1
    if hasattr(item, "last_fetched_epoch"):
        changes["last_fetched_epoch"] = -1
    if hasattr(item, "current_leader_epoch"):
        changes["current_leader_epoch"] = -1
    last = space[-1]

    def fix(reply: Any) -> Any:
        def virtual(physical: int) -> int:
            return physical if physical < 0 else segment.clamp(segment.to_virtual(physical))

        changes: dict[str, Any] = {"high_watermark": virtual(int(reply.high_watermark))}
        if hasattr(reply, "last_stable_offset"):
            changes["last_stable_offset"] = virtual(int(reply.last_stable_offset))
        if hasattr(reply, "log_start_offset") and reply.log_start_offset >= 0:
            changes["log_start_offset"] = _log_start(space, segment, int(reply.log_start_offset))
        if reply.records:
            changes["records"] = Records(
                batches.rebase(bytes(reply.records), segment.delta, segment.end)
            )
        if reply.aborted_transactions:
            changes["aborted_transactions"] = tuple(
                dataclasses.replace(a, first_offset=segment.to_virtual(int(a.first_offset)))
                for a in reply.aborted_transactions
            )
        if segment is not last and segment.end is not None:
            # Records go on in the next segment: the client must not wait here.
            changes["high_watermark"] = max(changes["high_watermark"], segment.end)
        return dataclasses.replace(reply, **changes)

    return Part(segment.cluster, dataclasses.replace(item, **changes), fix)


def list_offsets(space: Sequence[Segment], item: Any, attempt: int = 0) -> Part | ErrorCode:
    """ListOffsets of a migrated partition. By timestamp, the lookup starts in the first
    readable segment; ``attempt`` n asks the n-th readable segment after it, for a
    timestamp the earlier ones have no record at or after."""
    which = int(item.timestamp)
    readable = [s for s in space if s.readable] or [space[-1]]
    if which in (LATEST, MAX_TIMESTAMP):
        segment = space[-1]
    elif which == EARLIEST:
        segment = readable[0]
    elif attempt < len(readable):
        segment = readable[attempt]
    else:
        return ErrorCode.offset_not_available

    def fix(reply: Any) -> Any:
        offset = int(reply.offset)
        if offset < 0:
            return dataclasses.replace(reply, leader_epoch=-1)
        return dataclasses.replace(
            reply, offset=segment.clamp(segment.to_virtual(offset)), leader_epoch=-1
        )

    return Part(segment.cluster, _no_epoch(item), fix)


def needs_next(space: Sequence[Segment], item: Any, reply: Any, attempt: int) -> bool:
    """Whether a by-timestamp answer (already virtual) found nothing in its segment, so
    the next readable segment must be asked."""
    if int(item.timestamp) < 0 or reply.error_code != ErrorCode.none:
        return False
    readable = [s for s in space if s.readable] or [space[-1]]
    if attempt + 1 >= len(readable):
        return False
    end = readable[attempt].end
    return int(reply.offset) < 0 or (end is not None and int(reply.offset) >= end)


def produce_fix(space: Sequence[Segment]) -> Callable[[Any], Any]:
    """A Produce answer from the partition's current cluster, in virtual offsets."""
    last = space[-1]

    def fix(reply: Any) -> Any:
        changes: dict[str, Any] = {}
        if reply.base_offset >= 0:
            changes["base_offset"] = last.to_virtual(int(reply.base_offset))
        if getattr(reply, "log_start_offset", -1) >= 0:
            changes["log_start_offset"] = _log_start(space, last, int(reply.log_start_offset))
        return dataclasses.replace(reply, **changes) if changes else reply

    return fix


def _log_start(space: Sequence[Segment], segment: Segment, physical: int) -> int:
    """The partition's virtual log start, from ``segment``'s physical one: where the
    first readable segment begins when that is an earlier one."""
    readable = first_readable(space)
    if segment == readable:
        return segment.clamp(segment.to_virtual(physical))
    return readable.start


def leader_epoch_answer(reply_type: type, item: Any) -> Any:
    """OffsetForLeaderEpoch of a migrated partition: no epoch of the client's was ever
    truncated in the virtual log."""
    return reply_type(
        error_code=ErrorCode.none,
        partition=item.partition,
        leader_epoch=item.leader_epoch,
        end_offset=NO_TRUNCATION,
    )
