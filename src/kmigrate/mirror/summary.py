"""A link's status summarised per topic, ordered so what needs attention comes first,
and cut to what a screen can show: `mirror status` and the console read a link of
10,000 partitions as a few lines, and ask for the partitions of one topic on demand.

Pure: a `LinkStatus` in, values out; no store, no cluster."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kmigrate.mirror.status import LinkStatus, PartitionStatus
from kmigrate.model.links import Gap, TopicState

T = TypeVar("T")

# What a topic's state says about an unknown lag: nothing is wrong with a topic the
# source deleted (its end is not read) or one promoted (no longer mirrored).
_SETTLED = {TopicState.SOURCE_DELETED.value, TopicState.PROMOTED.value}


@dataclass(frozen=True)
class TopicSummary:
    """One topic of a link: its partitions' lag added up."""

    topic: str
    state: str | None  # the link's topic state; None for a partition of an unknown topic
    partitions: int
    lag: int | None  # None while some partition's source end is unknown (or none mapped yet)
    lagging_partitions: int  # partitions with lag > 0
    unknown_partitions: int  # partitions whose lag is unknown
    lag_s: float | None  # the largest among its lagging partitions
    records_per_s: float
    gaps: int


@dataclass(frozen=True)
class LinkSummary:
    """Totals over a link's partitions and its topics, most in need of attention first."""

    topics: int
    partitions: int
    lagging_partitions: int
    lag: int | None  # None while some partition's source end is unknown
    by_topic: tuple[TopicSummary, ...]


@dataclass(frozen=True)
class Cut(Generic[T]):
    """The first items of a longer list; ``rest`` are the ones left out."""

    shown: tuple[T, ...]
    rest: tuple[T, ...]


@dataclass(frozen=True)
class Page(Generic[T]):
    """Page ``number`` (from 1) of ``pages``; ``items`` are its items."""

    items: tuple[T, ...]
    number: int
    pages: int
    total: int
    first: int  # 1-based position of the first item shown (0 when there is none)


def summarise(status: LinkStatus) -> LinkSummary:
    """The link's totals and its topics in attention order (`attention`); the totals
    equal the sums over ``status.partitions`` (``lag`` is `LinkStatus.lag`)."""
    parts = status.partitions
    topics = tuple(by_topic(status))
    return LinkSummary(
        topics=len(topics),
        partitions=len(parts),
        lagging_partitions=sum(1 for p in parts if p.lag),
        lag=status.lag,
        by_topic=topics,
    )


def by_topic(status: LinkStatus) -> list[TopicSummary]:
    """One summary per topic the link knows (from its topics and its partitions),
    ordered by `attention`."""
    states = {t.topic: t.state.value for t in status.topics}
    grouped: dict[str, list[PartitionStatus]] = defaultdict(list)
    for p in status.partitions:
        grouped[p.topic].append(p)
    gaps = Counter(g.topic for g in status.gaps)
    names = set(states) | set(grouped) | set(gaps)
    found = [_topic(name, states.get(name), grouped.get(name, []), gaps[name]) for name in names]
    return sorted(found, key=attention)


def _topic(name: str, state: str | None, parts: list[PartitionStatus], gaps: int) -> TopicSummary:
    lags = [p.lag for p in parts]
    unknown = sum(1 for lag in lags if lag is None)
    ages = [p.lag_s for p in parts if p.lag and p.lag_s is not None]
    return TopicSummary(
        topic=name,
        state=state,
        partitions=len(parts),
        lag=None if unknown or not parts else sum(lag or 0 for lag in lags),
        lagging_partitions=sum(1 for lag in lags if lag),
        unknown_partitions=unknown,
        lag_s=max(ages) if ages else None,
        records_per_s=sum(p.records_per_s for p in parts),
        gaps=gaps,
    )


def attention(t: TopicSummary) -> tuple[int, float, float, str]:
    """Sort key: topics with gaps first, then those whose lag cannot be read now (a
    cluster down, or not mapped yet), then by lag and its age, largest first; caught-up
    and settled (promoted, deleted on the source) topics last, by name."""
    if t.gaps:
        return 0, -float(t.lag or 0), -(t.lag_s or 0.0), t.topic
    if t.lag is None and t.state not in _SETTLED:
        return 1, -float(t.unknown_partitions), 0.0, t.topic
    if t.lag:
        return 2, -float(t.lag), -(t.lag_s or 0.0), t.topic
    return 3, 0.0, 0.0, t.topic


def partitions_by_attention(
    partitions: Iterable[PartitionStatus], gaps: Iterable[Gap]
) -> list[PartitionStatus]:
    """``partitions`` ordered as `attention` orders topics: those with gaps, then those
    whose lag is unknown, then by lag and its age, largest first; the rest (caught up)
    in topic and partition order."""
    gapped = {(g.topic, g.partition) for g in gaps}

    def key(p: PartitionStatus) -> tuple[int, int, float, str, int]:
        rank = 0 if (p.topic, p.partition) in gapped else 1 if p.lag is None else 2 if p.lag else 3
        return rank, -(p.lag or 0), -(p.lag_s or 0.0), p.topic, p.partition

    return sorted(partitions, key=key)


def first(items: Sequence[T], limit: int) -> Cut[T]:
    """The first ``limit`` items (all of them when ``limit`` is 0)."""
    if limit < 0:
        raise ValueError(f"limit must be 0 (all) or more, not {limit}")
    if limit == 0 or len(items) <= limit:
        return Cut(tuple(items), ())
    return Cut(tuple(items[:limit]), tuple(items[limit:]))


def page(items: Sequence[T], number: int, size: int) -> Page[T]:
    """Page ``number`` of ``items`` cut in pages of ``size``; a number past the last
    page gives the last page, below 1 the first (a stale link still shows something)."""
    if size < 1:
        raise ValueError(f"page size must be at least 1, not {size}")
    pages = max(math.ceil(len(items) / size), 1)
    number = min(max(number, 1), pages)
    start = (number - 1) * size
    chosen = tuple(items[start : start + size])
    return Page(chosen, number, pages, len(items), start + 1 if chosen else 0)
