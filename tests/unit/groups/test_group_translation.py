"""Group commits translate exactly through the map; what cannot be translated says why."""

from __future__ import annotations

from kmigrate.groups.translation import (
    BELOW_START,
    NOT_IN_LINK,
    NOT_MIRRORED,
    SOURCE_UNREACHABLE,
    PartitionTranslation,
    translate_commits,
    translate_last_known,
    waiting_for_mirror,
)
from kmigrate.model.groups import GroupPosition
from kmigrate.model.links import PartitionState
from kmigrate.model.offsets import OffsetRun, PartitionOffsetMap

# Source offsets 100..104 -> target 0..4; 105..106 were a transaction's marker and an
# aborted record; 107..109 -> target 5..7; the mirror has read up to 112 (markers).
RUNS = (OffsetRun(100, 0, 5), OffsetRun(107, 5, 3))
STATE = PartitionState("t", 0, PartitionOffsetMap(RUNS, 112, 100), 0, 8, None, 0)
MAPS = {("t", 0): STATE}


def one(offset: int, topic: str = "t", partition: int = 0) -> PartitionTranslation:
    [result] = translate_commits([(topic, partition, offset)], MAPS, {"t", "u"})
    return result


def test_inside_a_run_the_translation_is_the_same_record() -> None:
    r = one(103)
    assert (r.exact, r.target_offset, r.reason) == (True, 3, None)


def test_in_a_gap_the_group_continues_with_the_next_mirrored_record() -> None:
    assert one(105).target_offset == 5
    assert one(106).target_offset == 5


def test_past_the_last_record_but_within_the_read_position_is_the_target_end() -> None:
    # A caught-up group commits the last stable offset, past trailing markers.
    assert one(110).target_offset == 8
    assert one(112).target_offset == 8


def test_beyond_the_read_position_waits_for_the_mirror_and_says_how_far() -> None:
    r = one(120)
    assert (r.exact, r.target_offset, r.reason, r.behind) == (False, None, NOT_MIRRORED, 8)
    assert waiting_for_mirror([r]) == [r]


def test_before_the_map_start_is_refused_with_the_missing_range() -> None:
    r = one(40)
    assert (r.usable, r.reason) == (False, BELOW_START)
    assert "40..99" in (r.detail or "")


def test_a_topic_outside_the_link_and_an_unstarted_partition() -> None:
    assert one(3, topic="other").reason == NOT_IN_LINK
    r = one(3, topic="u", partition=2)
    assert (r.reason, r.behind) == (NOT_MIRRORED, 3)


def test_a_new_topic_with_nothing_mirrored_yet_translates_to_the_target_start() -> None:
    empty = PartitionState("t", 0, PartitionOffsetMap((), 50, 50), 7, 0, None, 0)
    [r] = translate_commits([("t", 0, 50)], {("t", 0): empty}, {"t"})
    assert (r.exact, r.target_offset) == (True, 7)


def test_failover_translates_the_last_known_commit_and_bounds_the_repeats() -> None:
    [r] = translate_last_known([GroupPosition("t", 0, 102, 0)], MAPS, {"t"})
    # Target 2 is where the group continues if it stopped at 102; it may have consumed
    # up to everything mirrored (target end 8) before the source was lost.
    assert (r.exact, r.target_offset, r.reason, r.may_repeat) == (False, 2, SOURCE_UNREACHABLE, 6)
    assert "6 record(s) may repeat" in (r.detail or "")
