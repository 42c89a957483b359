"""The offset map translates every position exactly, across gaps, batches and restarts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.model.offsets import (
    Exactness,
    OffsetRun,
    PartitionOffsetMap,
    coalesce,
    runs_from_deliveries,
)


def test_consecutive_deliveries_form_one_run() -> None:
    assert runs_from_deliveries([(5, 0), (6, 1), (7, 2)]) == [OffsetRun(5, 0, 3)]


def test_a_source_gap_starts_a_new_run() -> None:
    # Offset 7 was a transaction marker (or compacted away): no record, new run.
    assert runs_from_deliveries([(5, 0), (6, 1), (8, 2)]) == [
        OffsetRun(5, 0, 2),
        OffsetRun(8, 2, 1),
    ]


@pytest.mark.parametrize("pairs", [[(5, 0), (5, 1)], [(5, 1), (6, 1)], [(6, 0), (5, 1)]])
def test_repeated_or_reordered_deliveries_are_refused(pairs: list[tuple[int, int]]) -> None:
    with pytest.raises(ValueError):
        runs_from_deliveries(pairs)


def test_coalesce_merges_runs_that_continue_each_other() -> None:
    assert coalesce([OffsetRun(0, 0, 2), OffsetRun(2, 2, 3), OffsetRun(6, 5, 1)]) == [
        OffsetRun(0, 0, 5),
        OffsetRun(6, 5, 1),
    ]


def test_translation_inside_a_run_in_a_gap_and_at_the_end() -> None:
    m = PartitionOffsetMap(
        (OffsetRun(10, 0, 3), OffsetRun(20, 3, 2)), source_next=25, source_start=10
    )
    assert m.translate(11).target_offset == 1
    assert m.translate(13).target_offset == 3  # gap 13..19: next record is source 20
    assert m.translate(19).target_offset == 3
    assert m.translate(21).target_offset == 4
    assert m.translate(22).target_offset == 5  # past the last record, within read position
    assert m.translate(25).target_offset == 5
    assert m.translate(26).exactness is Exactness.NOT_YET_MIRRORED
    assert m.translate(9).exactness is Exactness.BELOW_MAP_START


def test_empty_map_translates_to_the_target_start() -> None:
    m = PartitionOffsetMap((), source_next=40, source_start=40)
    assert m.translate(40, target_start=7).target_offset == 7
    assert m.translate(41).exactness is Exactness.NOT_YET_MIRRORED


def test_extend_refuses_overlap_and_backwards_position() -> None:
    m = PartitionOffsetMap((OffsetRun(0, 0, 5),), source_next=5, source_start=0)
    with pytest.raises(ValueError):
        m.extend([OffsetRun(4, 5, 1)], source_next=6)
    with pytest.raises(ValueError):
        m.extend([], source_next=4)


@st.composite
def mirrored_partition(draw: st.DrawFn) -> tuple[list[int], int, int, list[int]]:
    """A source partition's record offsets (with gaps), the mirror's start, the target's
    first offset, and batch boundaries (read positions) of the mirror."""
    gaps = draw(st.lists(st.integers(1, 4), min_size=0, max_size=60))
    offsets, position = [], draw(st.integers(0, 20))
    for gap in gaps:
        offsets.append(position)
        position += gap
    end = position  # the log end: maybe past the last record (trailing markers)
    start = draw(st.integers(0, end))
    cuts = sorted(set(draw(st.lists(st.integers(start, end), max_size=6))) | {end})
    return offsets, start, draw(st.integers(0, 50)), cuts


@given(mirrored_partition())
def test_translation_is_exact_for_every_position(
    case: tuple[list[int], int, int, list[int]],
) -> None:
    offsets, start, target_base, cuts = case
    mirrored = [o for o in offsets if o >= start]
    target_of = {o: target_base + i for i, o in enumerate(mirrored)}
    m = PartitionOffsetMap((), source_next=start, source_start=start)
    previous = start
    for cut in cuts:  # one batch per read position, as the mirror commits them
        batch = [(o, target_of[o]) for o in mirrored if previous <= o < cut]
        m = m.extend(runs_from_deliveries(batch), source_next=cut)
        previous = cut

    assert sum(r.length for r in m.runs) == len(mirrored)
    for c in range(start, cuts[-1] + 1):
        following = [target_of[o] for o in mirrored if o >= c]
        expected = following[0] if following else target_base + len(mirrored)
        got = m.translate(c, target_start=target_base)
        assert got.exactness is Exactness.EXACT
        assert got.target_offset == expected, (c, m)
    assert m.translate(cuts[-1] + 1).exactness is Exactness.NOT_YET_MIRRORED
    if start > 0:
        assert m.translate(start - 1).exactness is Exactness.BELOW_MAP_START


def test_a_target_position_maps_back_to_the_source_exactly() -> None:
    # source 100..104 -> target 0..4; a gap (markers) 105..109; 110..112 -> 5..7;
    # the mirror has read up to 115 (113, 114 were aborted records).
    m = PartitionOffsetMap((OffsetRun(100, 0, 5), OffsetRun(110, 5, 3)), 115, 100)
    assert m.source_position(0) == 100  # nothing consumed: where the mirror began
    assert m.source_position(3) == 103
    assert m.source_position(5) == 110  # the next record after the gap
    assert m.source_position(8) == 115  # everything consumed: the read position
    assert m.source_position(9) is None  # a record the mirror never wrote
    empty = PartitionOffsetMap((), 40, 40)
    assert empty.source_position(7, target_start=7) == 40
    assert empty.source_position(8, target_start=7) is None
    late = PartitionOffsetMap((OffsetRun(0, 10, 2),), 2, 0)
    assert late.source_position(9, target_start=10) is None  # before the mirrored records


def test_mapping_back_and_forth_lands_on_the_same_target_position() -> None:
    m = PartitionOffsetMap((OffsetRun(100, 0, 5), OffsetRun(110, 5, 3)), 115, 100)
    for source in range(100, 116):
        target = m.translate(source).target_offset
        assert target is not None
        back = m.source_position(target)
        assert back is not None and m.translate(back).target_offset == target
        # Moving back never skips a record the consumer has not seen on the target.
        assert back <= source or all(
            not r.source_start <= s < r.source_end for r in m.runs for s in range(source, back)
        )
