"""`mirror status` and the console summarise a link per topic, put what needs attention
first and cut the rest to one line (or pages): pure functions over a `LinkStatus`, no
store and no broker."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.cli.mirror_status import more_line
from kmigrate.mirror.status import LinkStatus, PartitionStatus
from kmigrate.mirror.summary import (
    TopicSummary,
    attention,
    by_topic,
    first,
    page,
    partitions_by_attention,
    summarise,
)
from kmigrate.model.links import Gap, Link, LinkTopic, TopicState
from kmigrate.serve.console import TOPICS_PER_PAGE, link_view

LINK = Link("l", "a", "b", ".*")


def part(
    topic: str, partition: int, lag: int | None, lag_s: float | None = None, rate: float = 0.0
) -> PartitionStatus:
    end = None if lag is None else 100 + lag
    return PartitionStatus(topic, partition, end, 100, 100, lag, lag_s, rate, 100)


def status(
    partitions: list[PartitionStatus],
    gaps: list[Gap] = [],  # noqa: B006  (never mutated)
    states: dict[str, TopicState] | None = None,
) -> LinkStatus:
    names = sorted({p.topic for p in partitions} | set(states or {}))
    topics = [
        LinkTopic("l", name, 4, (states or {}).get(name, TopicState.MIRRORING)) for name in names
    ]
    return LinkStatus(LINK, "running", None, None, topics, partitions, gaps)


def gap(topic: str, partition: int) -> Gap:
    return Gap(topic, partition, 10, 20, "deleted by retention")


def test_topics_that_need_attention_come_first() -> None:
    s = status(
        [
            part("calm", 0, 0),
            part("calm", 1, 0),
            part("small", 0, 3, 1.0),
            part("big", 0, 50, 2.0),
            part("big", 1, 0),
            part("old", 0, 3, 90.0),
            part("gapped", 0, 0),
            part("dark", 0, None),
            part("gone", 0, None),
            part("another-calm", 0, 0),
        ],
        [gap("gapped", 0)],
        {"gone": TopicState.SOURCE_DELETED},
    )
    order = [t.topic for t in by_topic(s)]
    # gaps, unknown lag, then lag (its age breaks a tie), then settled and caught up by name
    assert order == ["gapped", "dark", "big", "old", "small", "another-calm", "calm", "gone"]


def test_a_topic_adds_up_its_partitions() -> None:
    s = status(
        [
            part("t", 0, 5, 3.0, rate=10.0),
            part("t", 1, 0, 0.0, rate=2.5),
            part("t", 2, 7, 8.0),
            part("u", 0, None),
            part("u", 1, 4, 1.0),
        ],
        [gap("t", 1), gap("t", 1)],
    )
    t, u = sorted(by_topic(s), key=lambda x: x.topic)
    assert t == TopicSummary("t", "mirroring", 3, 12, 2, 0, 8.0, 12.5, 2)
    assert u.lag is None and u.unknown_partitions == 1 and u.lagging_partitions == 1


def test_a_known_topic_without_partitions_yet_has_no_known_lag() -> None:
    s = status([part("t", 0, 0)], states={"t": TopicState.MIRRORING, "new": TopicState.MIRRORING})
    new = next(t for t in by_topic(s) if t.topic == "new")
    assert (new.partitions, new.lag, new.state) == (0, None, "mirroring")
    assert by_topic(s)[0].topic == "new"  # not mapped yet: looked at before caught-up ones


lags = st.one_of(st.none(), st.integers(0, 1_000))
partitions = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 30), lags),
    unique_by=lambda p: (p[0], p[1]),
    max_size=60,
)


@given(partitions)
def test_the_totals_are_the_sums_over_partitions_and_topics(
    found: list[tuple[str, int, int | None]],
) -> None:
    s = status([part(t, p, lag) for t, p, lag in found])
    summary = summarise(s)
    assert summary.partitions == len(found) == sum(t.partitions for t in summary.by_topic)
    assert summary.topics == len({t for t, _, _ in found}) == len(summary.by_topic)
    assert summary.lagging_partitions == sum(1 for *_, lag in found if lag)
    assert summary.lagging_partitions == sum(t.lagging_partitions for t in summary.by_topic)
    assert summary.lag == s.lag
    if summary.lag is not None:
        assert summary.lag == sum(t.lag or 0 for t in summary.by_topic)
    assert list(summary.by_topic) == sorted(summary.by_topic, key=attention)


@given(partitions)
def test_partitions_by_attention_is_a_permutation_with_the_lagging_first(
    found: list[tuple[str, int, int | None]],
) -> None:
    parts = [part(t, p, lag) for t, p, lag in found]
    ordered = partitions_by_attention(parts, [])
    assert sorted(ordered, key=lambda p: (p.topic, p.partition)) == sorted(
        parts, key=lambda p: (p.topic, p.partition)
    )
    ranks = [0 if p.lag is None else 1 if p.lag else 2 for p in ordered]
    assert ranks == sorted(ranks)
    lagging = [p.lag for p in ordered if p.lag]
    assert lagging == sorted(lagging, reverse=True)
    caught_up = [(p.topic, p.partition) for p in ordered if p.lag == 0]
    assert caught_up == sorted(caught_up)  # the rest in natural order


def test_a_partition_with_a_gap_comes_first() -> None:
    ordered = partitions_by_attention([part("t", 0, 9), part("t", 1, 0)], [gap("t", 1)])
    assert [p.partition for p in ordered] == [1, 0]


@given(st.lists(st.integers(), max_size=40), st.integers(0, 50))
def test_first_cuts_at_the_limit_and_zero_means_all(items: list[int], limit: int) -> None:
    cut = first(items, limit)
    assert list(cut.shown) + list(cut.rest) == items
    if limit == 0:
        assert cut.rest == ()
    else:
        assert len(cut.shown) == min(limit, len(items))


@given(st.lists(st.integers(), max_size=200), st.integers(-3, 20), st.integers(1, 50))
def test_pages_cover_the_items_once_and_a_stale_number_shows_the_nearest(
    items: list[int], number: int, size: int
) -> None:
    shown = page(items, number, size)
    assert 1 <= shown.number <= shown.pages and shown.total == len(items)
    assert shown.number == min(max(number, 1), shown.pages)
    every = [x for n in range(1, shown.pages + 1) for x in page(items, n, size).items]
    assert every == items
    assert len(shown.items) <= size
    if shown.items:
        assert items[shown.first - 1] == shown.items[0]
    else:
        assert shown.first == 0 and items == []


def test_the_more_line_says_caught_up_or_adds_up_the_rest() -> None:
    assert more_line("topic", [0, 0, 0], 0) == "... and 3 more topic(s): all caught up"
    assert more_line("topic", [0, 1_500, 2], 0) == "... and 3 more topic(s): total lag 1,502"
    assert more_line("partition", [None, 4], 0) == (
        "... and 2 more partition(s): total lag 4, unknown for 1 of them"
    )
    assert more_line("topic", [0, 0], 1) == "... and 2 more topic(s) (1 with gaps): total lag 0"


def test_the_link_page_shows_one_page_of_topics_and_one_topics_partitions() -> None:
    parts = [part(f"t{i:03d}", p, 0) for i in range(120) for p in range(3)]
    parts[100] = part(parts[100].topic, parts[100].partition, 42, 5.0)  # t033[1]
    s = status(parts)
    first_page = link_view(s, 1, None)
    assert first_page["summary"].partitions == 360 and first_page["partitions"] is None
    shown = first_page["topics"]
    assert (shown.number, shown.pages, len(shown.items)) == (1, 3, TOPICS_PER_PAGE)
    assert shown.items[0].topic == "t033" and shown.items[0].lag == 42
    last = link_view(s, 99, "t033")["topics"]
    assert (last.number, len(last.items), last.first) == (3, 20, 101)
    partitions = link_view(s, 1, "t033")["partitions"]
    assert [(p.topic, p.partition) for p in partitions] == [("t033", 0), ("t033", 1), ("t033", 2)]
    assert link_view(s, 1, "nope")["partitions"] == []
