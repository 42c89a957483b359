"""Partition migrations through the gateway, pure parts: the offset space a chain of
migrations gives a partition, its records in the routing table, rebased batches, the
translation of Fetch / ListOffsets / Produce, and a write fence on one instance."""

from __future__ import annotations

import asyncio
import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition
from kio.schema.fetch.v12.response import PartitionData
from kio.schema.list_offsets.v7.request import ListOffsetsPartition
from kio.schema.list_offsets.v7.response import ListOffsetsPartitionResponse
from kio.static.primitive import Records

from kmigrate.codec import batches
from kmigrate.errors import ConfigError
from kmigrate.gateway.control.fences import Fences
from kmigrate.gateway.control.partition_moves import (
    Migration,
    Mode,
    Status,
    begin,
    check_start,
    locate,
    segments,
)
from kmigrate.gateway.control.routes import RoutingTable, parse_table
from kmigrate.gateway.serving import virtual


def _migrated(origin: str, target: str, end: int, base: int = 0, **kw: object) -> Migration:
    return Migration(origin, target, Status.MIGRATED, 1, Mode.SMOOTH, end, base, **kw)  # type: ignore[arg-type]


def _chain(ends: list[int], bases: list[int]) -> list[Migration]:
    clusters = [f"c{i}" for i in range(len(ends) + 1)]
    return [_migrated(clusters[i], clusters[i + 1], ends[i], bases[i]) for i in range(len(ends))]


@st.composite
def chains(draw: st.DrawFn) -> list[Migration]:
    n = draw(st.integers(0, 4))
    gaps = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    ends, total = [], 0
    for gap in gaps:
        total += gap
        ends.append(total)
    bases = draw(st.lists(st.integers(0, 10**9), min_size=n, max_size=n))
    return _chain(ends, bases)


@given(chains(), st.integers(0, 10_000))
def test_every_virtual_offset_names_one_record_of_one_cluster(
    chain: list[Migration], offset: int
) -> None:
    space = segments("c0", chain)
    segment = locate(space, offset)
    physical = segment.to_physical(offset)
    assert segment.to_virtual(physical) == offset
    # no other segment claims that virtual offset
    owners = [s for s in space if s.start <= offset and (s.end is None or offset < s.end)]
    assert owners == [segment]
    # physical offsets of a segment are the target's, from its base on
    assert physical >= segment.base


def test_the_seeds_rule_is_end_offset_plus_target_offset() -> None:
    space = segments("a", [_migrated("a", "b", 1000)])
    assert [(s.cluster, s.start, s.end) for s in space] == [("a", 0, 1000), ("b", 1000, None)]
    assert locate(space, 999).cluster == "a" and locate(space, 999).to_physical(999) == 999
    assert locate(space, 1000).cluster == "b" and locate(space, 1000).to_physical(1000) == 0
    assert locate(space, 1234).to_physical(1234) == 234


def test_a_migration_not_flipped_changes_no_offset() -> None:
    pending = begin("a", "b", 1, Mode.SMOOTH, False, 0)
    assert segments("a", [pending]) == segments("a", [])


def test_aged_or_ignored_origins_are_not_read() -> None:
    aged = _migrated("a", "b", 50)
    aged = Migration("a", "b", Status.AGED, 2, Mode.SMOOTH, 50, 0)
    assert not segments("a", [aged])[0].readable
    ignored = _migrated("a", "b", 50, ignore_origin=True)
    space = segments("a", [ignored])
    item = FetchPartition(partition=0, fetch_offset=10, partition_max_bytes=1000)
    assert virtual.fetch(space, item) == ErrorCode.offset_out_of_range


def test_records_round_trip_through_the_routing_table() -> None:
    table = RoutingTable().with_route("t", "a")
    table = table.with_migration(
        "t", 3, begin("a", "b", 1, Mode.SMOOTH, False, 5), replace_last=False
    )
    assert table.topics["t"].migrating(3) is not None
    assert table.cluster_of("t", 3) == "a"  # fenced, not flipped: still written on a
    done = _migrated("a", "b", 70, 0, writers={"5:0": 41})
    table = table.with_migration("t", 3, done, replace_last=True).with_shield("x", True)
    assert table.cluster_of("t", 3) == "b" and table.topics["t"].migrating(3) is None
    back = parse_table(table.to_json(), 4)
    assert back.topics["t"].migrations[3] == (done,)
    assert back.shielded == frozenset({"x"})
    assert back.topics["t"].space(3) == table.topics["t"].space(3)


def test_a_table_of_the_first_format_still_reads() -> None:
    old = b'{"format": 1, "topics": {"t": {"cluster": "a", "partitions": {"1": "b"}}}}'
    table = parse_table(old, 2)
    assert table.cluster_of("t", 1) == "b" and not table.topics["t"].migrations


def test_refusals_name_the_partition() -> None:
    pending = begin("a", "b", 1, Mode.SMOOTH, False, 0)
    with pytest.raises(ConfigError, match=r"no partition 9"):
        check_start("t", [9], {9: "a"}, {}, "b", 4)
    with pytest.raises(ConfigError, match=r"t\[1\] is already written on 'b'"):
        check_start("t", [1], {1: "b"}, {}, "b", 4)
    with pytest.raises(ConfigError, match=r"t\[1\] is being migrated to 'b'"):
        check_start("t", [1], {1: "a"}, {1: (pending,)}, "c", 4)


# ---------------------------------------------------------------- batches


def _batch(base: int, count: int, epoch: int = 7, sequence: int = 0) -> bytes:
    after_crc = struct.pack(">hiqqqhii", 0, count - 1, 1000, 1000, 5, 0, sequence, count)
    after_crc += b"r" * count
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", base, length, epoch, 2, crc32c.crc32c(after_crc)) + after_crc


def _bases(records: bytes) -> list[int]:
    found, start = [], 0
    while start < len(records):
        found.append(struct.unpack_from(">q", records, start)[0])
        start += 12 + struct.unpack_from(">i", records, start + 8)[0]
    return found


@given(st.lists(st.integers(1, 5), min_size=1, max_size=6), st.integers(-(10**6), 10**6))
def test_rebased_batches_keep_records_and_crc(counts: list[int], delta: int) -> None:
    base, parts = 10**6, []
    for c in counts:
        parts.append(_batch(base, c))
        base += c
    records = b"".join(parts)
    moved = batches.rebase(records, delta)
    assert batches.crc_ok(moved) and len(moved) == len(records)
    assert _bases(moved) == [b + delta for b in _bases(records)]
    assert all(struct.unpack_from(">i", moved, s + 12)[0] == -1 for s in _starts(moved))


@given(st.lists(st.integers(1, 5), min_size=1, max_size=6))
def test_a_written_batch_marks_its_end_so_a_failover_never_starts_inside_one(
    counts: list[int],
) -> None:
    """A produce answer's mark is base offset + the offsets its batches take: a mark
    inside a batch would make the origin's part of it unreadable (rebase serves whole
    batches below the segment's end only), and a consumer just below it would wait
    forever for records the gateway never sends."""
    records = b"".join(_batch(100 + sum(counts[:i]), c) for i, c in enumerate(counts))
    end = 100 + batches.offsets_taken(records)
    assert end == 100 + sum(counts)
    assert _bases(batches.rebase(records, 0, end)) == _bases(records)  # all served


def _starts(records: bytes) -> list[int]:
    found, start = [], 0
    while start < len(records):
        found.append(start)
        start += 12 + struct.unpack_from(">i", records, start + 8)[0]
    return found


def test_rebase_drops_a_cut_batch_and_batches_past_the_segment() -> None:
    records = _batch(0, 3) + _batch(3, 3) + _batch(6, 3)
    assert _bases(batches.rebase(records[:-5], 0)) == [0, 3]
    assert _bases(batches.rebase(records, 0, below=6)) == [0, 3]
    assert _bases(batches.rebase(records, 100, below=106)) == [100, 103]


def test_last_sequence_counts_the_records_of_the_last_batch() -> None:
    records = _batch(0, 3, sequence=10) + _batch(3, 4, sequence=13)
    assert batches.last_sequence_of(records) == 16


# ---------------------------------------------------------------- translation


def test_a_fetch_below_the_migration_offset_reads_the_origin_and_stops_there() -> None:
    space = segments("a", [_migrated("a", "b", 6, 100)])
    item = FetchPartition(
        partition=0, current_leader_epoch=4, fetch_offset=3, partition_max_bytes=10**6
    )
    part = virtual.fetch(space, item)
    assert isinstance(part, virtual.Part)
    assert part.cluster == "a" and part.item.fetch_offset == 3
    assert part.item.current_leader_epoch == -1
    reply = PartitionData(
        partition_index=0, error_code=ErrorCode.none, high_watermark=6, last_stable_offset=6,
        log_start_offset=0, aborted_transactions=None,
        records=Records(_batch(3, 3) + _batch(6, 2)),
    )  # fmt: skip
    fixed = part.fix(reply)
    assert _bases(bytes(fixed.records)) == [3]  # nothing at or above 6 from the origin
    assert fixed.high_watermark == 6


def test_a_fetch_above_it_reads_the_target_in_virtual_offsets() -> None:
    space = segments("a", [_migrated("a", "b", 6, 100)])
    item = FetchPartition(partition=0, fetch_offset=8, partition_max_bytes=10**6)
    part = virtual.fetch(space, item)
    assert isinstance(part, virtual.Part)
    assert part.cluster == "b" and part.item.fetch_offset == 102
    reply = PartitionData(
        partition_index=0, error_code=ErrorCode.none, high_watermark=110, last_stable_offset=110,
        log_start_offset=90, aborted_transactions=None, records=Records(_batch(102, 3)),
    )  # fmt: skip
    fixed = part.fix(reply)
    assert _bases(bytes(fixed.records)) == [8]
    assert (fixed.high_watermark, fixed.last_stable_offset) == (16, 16)
    assert fixed.log_start_offset == 0  # the origin's records are still readable


def test_list_offsets_earliest_latest_and_by_time_across_clusters() -> None:
    space = segments("a", [_migrated("a", "b", 6, 100)])

    def ask(ts: int, attempt: int = 0) -> virtual.Part:
        part = virtual.list_offsets(
            space, ListOffsetsPartition(partition_index=0, timestamp=ts), attempt
        )
        assert isinstance(part, virtual.Part)
        return part

    def reply(offset: int) -> ListOffsetsPartitionResponse:
        return ListOffsetsPartitionResponse(
            partition_index=0, error_code=ErrorCode.none, offset=offset, leader_epoch=3
        )

    assert ask(virtual.EARLIEST).cluster == "a"
    assert ask(virtual.LATEST).cluster == "b"
    assert ask(virtual.LATEST).fix(reply(130)).offset == 36
    by_time = ask(1234)
    assert by_time.cluster == "a"
    answered = by_time.fix(reply(-1))
    assert virtual.needs_next(space, by_time.item, answered, 0)
    assert ask(1234, 1).cluster == "b" and ask(1234, 1).fix(reply(101)).offset == 7
    assert not virtual.needs_next(space, by_time.item, by_time.fix(reply(2)), 0)


def test_a_produce_answer_is_in_virtual_offsets() -> None:
    from kio.schema.produce.v9.response import PartitionProduceResponse

    space = segments("a", [_migrated("a", "b", 6, 100)])
    reply = PartitionProduceResponse(
        index=0, error_code=ErrorCode.none, base_offset=105, log_start_offset=100,
        record_errors=(),
    )  # fmt: skip
    fixed = virtual.produce_fix(space)(reply)
    assert (fixed.base_offset, fixed.log_start_offset) == (11, 0)


# ---------------------------------------------------------------- the fence, one instance


def test_a_fence_is_acknowledged_once_writes_in_flight_end_and_releases_parked_ones() -> None:
    async def scenario() -> list[str]:
        events: list[str] = []

        async def acknowledge(topic: str, partition: int, epoch: int) -> None:
            events.append(f"ack {topic}[{partition}] {epoch}")

        fences = Fences(acknowledge, park_s=5)
        table = RoutingTable().with_route("t", "a")
        fenced = table.with_migration(
            "t", 0, begin("a", "b", 1, Mode.SMOOTH, False, 0), replace_last=False
        )
        with fences.writing([("t", 0)]):
            fences.follow(fenced)
            await asyncio.sleep(0.05)
            events.append("write answered")
        await asyncio.sleep(0.05)
        parked = asyncio.create_task(fences.admit([("t", 0)]))
        await asyncio.sleep(0.05)
        assert not parked.done() and fences.fenced(("t", 0))
        fences.follow(fenced.with_migration("t", 0, _migrated("a", "b", 9), replace_last=True))
        await asyncio.wait_for(parked, 1)
        events.append("released")
        assert not fences.fenced(("t", 0))
        return events

    assert asyncio.run(scenario()) == ["write answered", "ack t[0] 1", "released"]


def test_a_write_parked_too_long_is_refused_not_lost() -> None:
    async def scenario() -> bool:
        async def acknowledge(_t: str, _p: int, _e: int) -> None:
            return None

        fences = Fences(acknowledge, park_s=0.1)
        fences.follow(
            RoutingTable()
            .with_route("t", "a")
            .with_migration("t", 0, begin("a", "b", 1, Mode.SMOOTH, False, 0), replace_last=False)
        )
        await fences.admit([("t", 0)])  # returns after park_s
        return fences.fenced(("t", 0))  # the gateway then answers NOT_LEADER (retriable)

    assert asyncio.run(scenario())


def test_a_retry_of_a_write_the_origin_holds_is_recognised() -> None:
    from kio.schema.produce.v9.request import PartitionProduceData

    from kmigrate.gateway.serving.starts import written_on_origin

    done = _migrated("a", "b", 70, 0, writers={"5:0": 12})
    route = RoutingTable().with_route("t", "a").with_migration("t", 0, done, replace_last=False)
    topic_route = route.topics["t"]

    def write(sequence: int, count: int) -> PartitionProduceData:
        return PartitionProduceData(index=0, records=Records(_batch(0, count, sequence=sequence)))

    assert written_on_origin(topic_route, 0, write(10, 3))  # 10..12: held by the origin
    assert not written_on_origin(topic_route, 0, write(13, 2))  # new
    assert not written_on_origin(topic_route, 1, write(10, 3))  # another partition


def test_a_migration_ages_once_the_origin_deleted_everything_below_its_end() -> None:
    from kmigrate.gateway.control.aging import aged, deletable

    table = RoutingTable().with_route("t", "a")
    for p, end in ((0, 10), (1, 20)):
        table = table.with_migration("t", p, _migrated("a", "b", end), replace_last=False)
    table = table.normalized("t", 2)
    assert table.topics["t"].cluster == "b" and not table.topics["t"].partitions
    with pytest.raises(ConfigError, match="has partition migrations"):
        table.with_route("t", "c")
    half = aged(table, {("a", "t", 0): 10, ("a", "t", 1): 19})
    assert [half.topics["t"].migrations[p][-1].status for p in (0, 1)] == [
        Status.AGED,
        Status.MIGRATED,
    ]
    assert half.topics["t"].migrations[0][-1].epoch == 2
    assert deletable(half, "home") == []  # partition 1 still reads from a
    done = aged(half, {("a", "t", 1): None})  # the topic is gone from a
    assert deletable(done, "home") == [("a", "t")]
    assert deletable(done, "a") == []  # never the group home's copy
    # reads below the end offset are out of range once aged; earliest is the end offset
    space = done.topics["t"].space(0)
    assert space is not None and not space[0].readable
    item = ListOffsetsPartition(partition_index=0, timestamp=virtual.EARLIEST)
    part = virtual.list_offsets(space, item)
    assert isinstance(part, virtual.Part) and part.cluster == "b"


def test_an_origin_still_written_or_kept_is_not_deleted() -> None:
    from kmigrate.gateway.control.aging import deletable

    kept = Migration("a", "b", Status.AGED, 2, Mode.SMOOTH, 5, 0, keep_origin=True)
    table = RoutingTable().with_route("t", "a").with_migration("t", 0, kept, replace_last=False)
    assert deletable(table, "home") == []
    gone = Migration("a", "b", Status.AGED, 2, Mode.SMOOTH, 5, 0)
    table = RoutingTable().with_route("t", "a").with_migration("t", 0, gone, replace_last=False)
    assert table.cluster_of("t", 1) == "a"  # partition 1 still written on a
    assert deletable(table, "home") == []


def test_marks_keep_the_highest_offset_seen_over_instances() -> None:
    from kmigrate.gateway.control.marks import Marks, encode, merged

    one, two = Marks(), Marks()
    one.saw("a", "t", 0, 10)
    one.saw("a", "t", 0, 7)  # an older answer arriving late lowers nothing
    two.saw("a", "t", 0, 12)
    two.saw("a", "t", 1, 3)
    stored = [encode(m) for m in (one.take_changes(), two.take_changes()) if m] + [b"not json"]
    assert one.take_changes() is None  # nothing new since
    assert merged([s for s in stored if s]) == {("a", "t", 0): 12, ("a", "t", 1): 3}


def test_a_failover_names_what_the_origin_held_past_its_migration_offset() -> None:
    from kmigrate.gateway.control.aging import deletable, finalised

    record = Migration("a", "b", Status.MIGRATED, 1, Mode.FAILOVER, 100, 0)
    table = RoutingTable().with_route("t", "a").with_migration("t", 0, record, replace_last=False)
    table = table.normalized("t", 1)
    done = finalised(table, {("a", "t", 0): 104})
    found = done.topics["t"].migrations[0][-1]
    assert (found.origin_end, found.unavailable, found.epoch) == (104, (100, 104), 2)
    assert found.to_json()["unavailable"] == [100, 104]
    # offsets 100-103 stay the target's: the origin's extra records are never served
    space = done.topics["t"].space(0)
    assert space is not None and locate(space, 100).cluster == "b"
    aged = Migration("a", "b", Status.AGED, 3, Mode.FAILOVER, 100, 0, origin_end=104)
    kept = RoutingTable().with_route("t", "a").with_migration("t", 0, aged, replace_last=False)
    assert deletable(kept.normalized("t", 1), "home") == []  # its records wait for salvage
    again = finalised(done, {("a", "t", 0): 200})  # recorded once
    assert again.topics["t"].migrations[0][-1].origin_end == 104


def test_a_fence_is_taken_back_or_flipped_only_for_its_own_epoch() -> None:
    from kmigrate.errors import ConflictError
    from kmigrate.gateway.control.mover import _flipped, _unfenced

    table = RoutingTable().with_route("t", "a")
    for p in (0, 1):
        table = table.with_migration(
            "t", p, begin("a", "b", 3, Mode.SMOOTH, False, 0), replace_last=False
        )
    back = _unfenced(table, "t", {0: 3, 1: 9})  # partition 1 was fenced again meanwhile
    assert 0 not in back.topics["t"].migrations and back.topics["t"].migrating(1) is not None
    done = _flipped(table, "t", 2, {0: 3, 1: 3}, {0: 40, 1: 41}, {0: 0, 1: 7}, {0: {"5:0": 9}})
    assert done.topics["t"].cluster == "b" and not done.topics["t"].partitions  # normalized
    assert [done.topics["t"].migrations[p][-1].end_offset for p in (0, 1)] == [40, 41]
    assert done.topics["t"].migrations[0][-1].writers == {"5:0": 9}
    assert _unfenced(done, "t", {0: 3, 1: 3}) == done  # nothing to take back after a flip
    with pytest.raises(ConflictError, match=r"t\[1\]'s migration record changed"):
        _flipped(table, "t", 2, {0: 3, 1: 4}, {0: 1, 1: 1}, {0: 0, 1: 0}, {})


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_backends_get_acks_all_whatever_the_client_asks(acks: int) -> None:
    from datetime import timedelta

    from kio.schema.produce.v9.request import ProduceRequest

    from kmigrate.gateway.serving.produce import with_acks_all

    asked = ProduceRequest(
        transactional_id=None, acks=acks, timeout=timedelta(seconds=30), topic_data=()
    )
    assert with_acks_all(asked).acks == -1
    assert with_acks_all(asked).timeout == asked.timeout
