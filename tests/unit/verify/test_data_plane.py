"""Pure logic of the data plane: chunk runs from edge deliveries, batch ranges, verify's
fingerprints and its planning of target records past the map."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.mirror.batch import plan_reads
from kmigrate.model.links import PartitionState
from kmigrate.model.offsets import (
    OffsetRun,
    PartitionOffsetMap,
    runs_from_deliveries,
    runs_of_chunk,
)
from kmigrate.verify.fingerprint import fingerprint
from kmigrate.verify.ranges import (
    AFTER_PROMOTE,
    IN_FLIGHT_BATCH,
    UNMAPPED_TARGET,
    Span,
    as_in_flight,
    plan_linked,
)

increasing = st.lists(st.integers(0, 10**6), min_size=1, max_size=200, unique=True).map(sorted)


@given(increasing, st.integers(0, 10**9))
def test_chunk_runs_equal_per_record_deliveries(sources: list[int], first: int) -> None:
    """What edge reports give equals what a report per record would have given."""
    per_record = runs_from_deliveries((s, first + i) for i, s in enumerate(sources))
    assert runs_of_chunk(sources, first) == per_record


def test_chunk_runs_split_at_source_gaps() -> None:
    assert runs_of_chunk([5, 6, 7, 10, 11], 100) == [OffsetRun(5, 100, 3), OffsetRun(10, 103, 2)]
    assert runs_of_chunk([], 0) == []


def test_chunk_runs_refuse_disorder() -> None:
    with pytest.raises(ValueError):
        runs_of_chunk([5, 4], 0)


def _state(source_next: int) -> PartitionState:
    return PartitionState("t", 0, PartitionOffsetMap((), source_next, 0), 0, 0, None, 0)


def test_batch_reads_from_the_map_to_the_stable_end_capped() -> None:
    states = {("t", 0): _state(10), ("t", 1): _state(50), ("t", 2): _state(0)}
    ends = {("t", 0): 30, ("t", 1): 50, ("t", 2): 5000}
    assert plan_reads(states, ends) == {("t", 0): (10, 30), ("t", 2): (0, 5000)}
    assert plan_reads(states, ends, 1000) == {("t", 0): (10, 30), ("t", 2): (0, 1000)}


def test_fingerprint_tells_every_field_apart() -> None:
    base = (b"k", b"v", [("h", b"1")], 1000, 0)
    variants = [
        (None, b"v", [("h", b"1")], 1000, 0),
        (b"", b"v", [("h", b"1")], 1000, 0),
        (b"k", None, [("h", b"1")], 1000, 0),
        (b"k", b"v", [("h", None)], 1000, 0),
        (b"k", b"v", [("h", b"1"), ("h", b"1")], 1000, 0),
        (b"k", b"v", [], 1000, 0),
        (b"k", b"v", [("h", b"1")], 1001, 0),
        (b"k", b"v", [("h", b"1")], 1000, 1),
        # Field boundaries matter: the same bytes split differently.
        (b"kv", b"", [("h", b"1")], 1000, 0),
        (b"k", b"v", [("h1", b"")], 1000, 0),
    ]
    prints = {fingerprint(*v) for v in variants}
    assert len(prints) == len(variants)
    assert fingerprint(*base) not in prints
    assert fingerprint(*base) == fingerprint(b"k", b"v", (("h", b"1"),), 1000, 0)


MAP = PartitionOffsetMap((OffsetRun(0, 0, 20),), 20, 0)


def test_target_records_past_the_map_are_a_tail_to_check() -> None:
    check = plan_linked("t", 0, MAP, Span(0, 25), Span(0, 23))
    assert check.tail == Span(20, 23)
    assert check.tail_source == Span(20, 25)
    assert [n.kind for n in check.notes if n.side == "target"] == [UNMAPPED_TARGET]
    assert [n.kind for n in as_in_flight(check).notes if n.side == "target"] == [IN_FLIGHT_BATCH]


def test_past_the_map_of_a_promoted_topic_is_the_new_owners() -> None:
    check = plan_linked("t", 0, MAP, Span(0, 20), Span(0, 27), promoted=True)
    assert check.tail is None
    notes = [n for n in check.notes if n.side == "target"]
    assert [(n.kind, n.start, n.end) for n in notes] == [(AFTER_PROMOTE, 20, 27)]
    assert "7 record(s) written after the topic was promoted" in notes[0].describe()


def test_an_empty_map_checks_everything_past_the_adopted_end() -> None:
    empty = PartitionOffsetMap((), 40, 40)
    check = plan_linked("t", 0, empty, Span(0, 45), Span(0, 9), target_start=6)
    assert (check.source, check.target) == (None, None)
    assert check.tail == Span(6, 9)
    assert check.tail_source == Span(40, 45)
