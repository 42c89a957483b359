"""`mirror status` for people: per link its header, one row per topic (or per partition
with --partitions), those that need attention first, at most --limit rows and one line
for the rest, then the totals, the clusters that did not answer and the gaps."""

from __future__ import annotations

from collections.abc import Sequence

from kmigrate.cli import render
from kmigrate.mirror.status import LinkStatus, PartitionStatus
from kmigrate.mirror.summary import (
    LinkSummary,
    TopicSummary,
    first,
    partitions_by_attention,
    summarise,
)

TOPIC_COLUMNS = (
    "topic",
    "state",
    "partitions",
    "lag",
    "lagging partitions",
    "lag s (max)",
    "records/s",
)
PARTITION_COLUMNS = (
    "topic",
    "partition",
    "state",
    "source end",
    "mirrored to",
    "target end",
    "lag",
    "lag s",
    "records/s",
)


def print_status(s: LinkStatus, limit: int, per_partition: bool) -> None:
    """The link, its topics (or partitions) cut to ``limit`` rows (0: all), its totals."""
    summary = summarise(s)
    reason = f" ({s.reason})" if s.reason else ""
    rate = f", {s.run.records_per_s:,.0f} records/s" if s.run and s.state == "running" else ""
    render.out.print(
        f"[bold]link {s.link.name}[/bold]: {s.link.source} -> {s.link.target}, "
        f"topics '{s.link.topics}', mirror {s.state}{reason}{rate}, lag {_n(s.lag)}"
    )
    if per_partition:
        _partitions(s, limit)
    else:
        _topics(summary.by_topic, limit)
    render.out.print(_totals(summary))
    for name, condition in s.unavailable.items():
        render.out.print(
            f"[yellow]cluster '{name}' unavailable now[/yellow] ({condition}): its offsets "
            "are not shown"
        )
    gaps = first(s.gaps, limit)
    for g in gaps.shown:
        render.out.print(
            f"[red]gap[/red] {g.topic}[{g.partition}] source offsets "
            f"{g.source_start}..{g.source_end - 1}: {g.reason}"
        )
    if gaps.rest:
        render.out.print(f"... and {len(gaps.rest):,} more gap(s); --json lists them all")


def _topics(topics: Sequence[TopicSummary], limit: int) -> None:
    if not topics:
        render.out.print("no topics yet")
        return
    cut = first(topics, limit)
    render.table(None, TOPIC_COLUMNS, [_topic_row(t) for t in cut.shown])
    if cut.rest:
        gaps = sum(t.gaps for t in cut.rest)
        render.out.print(more_line("topic", [t.lag for t in cut.rest], gaps))


def _topic_row(t: TopicSummary) -> tuple[object, ...]:
    state = t.state or ""
    if t.gaps:
        state += f" ({t.gaps} gap(s))"
    return (
        t.topic,
        state,
        t.partitions,
        _n(t.lag),
        t.lagging_partitions,
        _seconds(t.lag_s),
        f"{t.records_per_s:,.0f}",
    )


def _partitions(s: LinkStatus, limit: int) -> None:
    ordered = partitions_by_attention(s.partitions, s.gaps)
    if not ordered:
        render.out.print("no partitions yet")
        return
    cut = first(ordered, limit)
    topic_state = {t.topic: t.state.value for t in s.topics}
    render.table(None, PARTITION_COLUMNS, [_partition_row(p, topic_state) for p in cut.shown])
    if cut.rest:
        gapped = {(g.topic, g.partition) for g in s.gaps}
        gaps = sum(1 for p in cut.rest if (p.topic, p.partition) in gapped)
        render.out.print(more_line("partition", [p.lag for p in cut.rest], gaps))


def _partition_row(p: PartitionStatus, topic_state: dict[str, str]) -> tuple[object, ...]:
    return (
        p.topic,
        p.partition,
        topic_state.get(p.topic),
        _n(p.source_end),
        p.mirrored_to,
        _n(p.target_end),
        _n(p.lag),
        _seconds(p.lag_s),
        f"{p.records_per_s:,.0f}",
    )


def more_line(noun: str, lags: Sequence[int | None], gaps: int) -> str:
    """One line for the rows left out (``lags``: theirs): all caught up, or their lag
    added up (and for how many it is unknown)."""
    what = f"... and {len(lags):,} more {noun}(s)"
    if gaps:
        what += f" ({gaps:,} with gaps)"
    known = sum(lag for lag in lags if lag is not None)
    unknown = sum(1 for lag in lags if lag is None)
    if not known and not unknown and not gaps:
        return f"{what}: all caught up"
    if unknown:
        return f"{what}: total lag {known:,}, unknown for {unknown:,} of them"
    return f"{what}: total lag {known:,}"


def _totals(summary: LinkSummary) -> str:
    return (
        f"topics {summary.topics:,}, partitions {summary.partitions:,}, "
        f"lagging partitions {summary.lagging_partitions:,}, total lag {_n(summary.lag)}"
    )


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"
