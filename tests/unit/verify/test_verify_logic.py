"""verify's pure logic: which ranges are compared, and how a difference is classified."""

from __future__ import annotations

from kmigrate.model.links import Gap
from kmigrate.model.offsets import OffsetRun, PartitionOffsetMap
from kmigrate.verify.compare import (
    CHANGED,
    EXTRA_ON_TARGET,
    MISSING_ON_TARGET,
    SWAPPED,
    WRONG_OFFSET,
    Chunk,
    RecordView,
    first_difference,
    first_differing_chunk,
)
from kmigrate.verify.ranges import (
    LOST_BEFORE_MIRRORING,
    NOT_MIRRORED_YET,
    RETENTION,
    UNMAPPED_TARGET,
    Note,
    Span,
    mapped_records,
    plan_linked,
)
from kmigrate.verify.report import preview

# Source 10..19 -> target 0..9, a gap (markers) at 20..21, then 22..31 -> 10..19.
MAP = PartitionOffsetMap((OffsetRun(10, 0, 10), OffsetRun(22, 10, 10)), 32, 10)


def test_whole_map_is_compared_when_both_sides_hold_it() -> None:
    check = plan_linked("t", 0, MAP, Span(10, 32), Span(0, 20))
    assert (check.source, check.target, check.notes) == (Span(10, 32), Span(0, 20), ())
    assert mapped_records(check) == 20


def test_retention_on_either_side_moves_both_starts_to_the_first_retained_pair() -> None:
    check = plan_linked("t", 0, MAP, Span(12, 32), Span(14, 20))
    assert (check.source, check.target) == (Span(26, 32), Span(14, 20))
    assert Note(RETENTION, "source", 10, 12) in check.notes
    assert Note(RETENTION, "target", 0, 14) in check.notes
    assert mapped_records(check) == 6


def test_unmirrored_source_tail_unmapped_target_tail_and_recorded_loss_are_notes() -> None:
    gap = Gap("t", 0, 5, 10, "retention")
    check = plan_linked("t", 0, MAP, Span(10, 40), Span(0, 23), [gap])
    assert Note(NOT_MIRRORED_YET, "source", 32, 40) in check.notes
    assert Note(UNMAPPED_TARGET, "target", 20, 23) in check.notes
    assert Note(LOST_BEFORE_MIRRORING, "source", 5, 10) in check.notes
    assert (check.source, check.target) == (Span(10, 32), Span(0, 20))


def test_nothing_to_compare_when_retention_took_everything_mirrored() -> None:
    check = plan_linked("t", 0, MAP, Span(40, 40), Span(0, 20))
    assert check.source is None and check.target is None


def _rec(offset: int, fp: int, value: bytes = b"v") -> RecordView:
    return RecordView(offset, b"k", value, (), 1000, 0, (fp, fp))


def _seq(fps: list[int], start: int = 0) -> list[RecordView]:
    return [_rec(start + i, fp) for i, fp in enumerate(fps)]


def test_classifies_extra_missing_swapped_and_changed() -> None:
    src = _seq([1, 2, 3, 4, 5, 6])
    assert first_difference(src, _seq([1, 2, 3, 4, 5, 6])) is None
    extra = first_difference(src, _seq([1, 2, 99, 3, 4, 5, 6]))
    assert (extra.kind, extra.source_offset, extra.target_offset) == (EXTRA_ON_TARGET, 2, 2)
    missing = first_difference(src, _seq([1, 2, 4, 5, 6]))
    assert (missing.kind, missing.source_offset) == (MISSING_ON_TARGET, 2)
    swapped = first_difference(src, _seq([1, 2, 4, 3, 5, 6]))
    assert (swapped.kind, swapped.target_offset) == (SWAPPED, 2)
    tgt = _seq([1, 2, 3, 4, 5, 6])
    tgt[3] = RecordView(3, b"k", b"other", (), 1000, 0, (77, 77))
    changed = first_difference(src, tgt)
    assert (changed.kind, changed.fields, changed.source_offset) == (CHANGED, ("value",), 3)


def test_a_side_running_out_is_missing_or_extra() -> None:
    src = _seq([1, 2, 3])
    assert first_difference(src, _seq([1, 2])).kind == MISSING_ON_TARGET
    extra = first_difference(src, _seq([1, 2, 3, 4]))
    assert extra.kind == EXTRA_ON_TARGET
    assert (
        extra.describe() == "extra record on the target at offset 3 (after the last source record)"
    )


def test_equal_records_at_the_wrong_target_offset_differ_under_a_map() -> None:
    src = _seq([1, 2, 3], start=10)
    assert first_difference(src, _seq([1, 2, 3], start=0), MAP) is None
    wrong = first_difference(src, _seq([1, 2, 3], start=5), MAP)
    assert (wrong.kind, wrong.source_offset, wrong.target_offset) == (WRONG_OFFSET, 10, 5)


def test_first_differing_chunk() -> None:
    a = [Chunk(0, 0, 9, 10, 100, b"a"), Chunk(1, 10, 19, 10, 100, b"b")]
    assert first_differing_chunk(a, list(a)) is None
    assert first_differing_chunk(a, [a[0], Chunk(1, 10, 19, 10, 100, b"x")]) == 1
    assert first_differing_chunk(a, a[:1]) == 1
    moved = [Chunk(0, 10, 19, 10, 100, b"a"), Chunk(1, 22, 31, 10, 100, b"b")]
    shifted = [Chunk(0, 1, 10, 10, 100, b"a"), Chunk(1, 11, 20, 10, 100, b"b")]
    assert first_differing_chunk(moved, [Chunk(0, 0, 9, 10, 100, b"a"), a[1]], MAP) is None
    assert first_differing_chunk(moved, shifted, MAP) == 0


def test_preview_is_binary_safe_and_short() -> None:
    assert preview(None) is None
    assert preview(b"ab\x00\xff\\") == "ab\\x00\\xff\\\\"
    assert preview(b"x" * 100, limit=4) == "xxxx…"
