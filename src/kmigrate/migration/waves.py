"""Waves: the order a big estate moves in (pure: sizes in, waves out).

Topics that one consumer group reads move together: a group moves to the target once
every topic it reads is in sync, so splitting its topics across waves would hold the
group (and the earlier wave) until the later wave caught up. The topics therefore fall
into connected components of the topic-group graph (union-find), and the components
are packed into waves bounded by bytes and by the estimated copy time (records over
the mirror's rate). A component bigger than one wave's bounds is a wave of its own,
marked with the reason, never split.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

_UNITS = {"TB": 1024**4, "GB": 1024**3, "MB": 1024**2, "KB": 1024, "B": 1}


@dataclass(frozen=True)
class TopicSize:
    """What moving one topic costs: its bytes on the source and its records."""

    name: str
    bytes: int
    records: int


@dataclass(frozen=True)
class Bounds:
    """The most one wave may hold: bytes, and seconds of copying at ``records_per_s``."""

    max_bytes: int
    max_seconds: float
    records_per_s: float

    def seconds(self, records: int) -> float:
        return records / self.records_per_s


@dataclass(frozen=True)
class Wave:
    number: int
    topics: tuple[str, ...]
    groups: tuple[str, ...]
    bytes: int
    records: int
    seconds: float
    over_bounds: str | None = None  # why this wave exceeds the bounds (one component)


@dataclass
class Component:
    """Topics that groups read together, with the groups and their total size."""

    topics: list[str]
    groups: list[str] = field(default_factory=list)
    bytes: int = 0
    records: int = 0


def plan_waves(
    sizes: Iterable[TopicSize], groups: Mapping[str, Iterable[str]], bounds: Bounds
) -> list[Wave]:
    """Every topic in exactly one wave; a group's topics (``groups``: group -> topics it
    reads) in one wave, which lists the group; each wave within ``bounds`` unless it is
    one component that alone exceeds them (``over_bounds`` says why). Deterministic: the
    same sizes and groups in any order give the same waves. Smallest waves come first,
    so the first wave proves the path cheaply; waves over the bounds come last."""
    parts = components(sizes, groups)
    fits = [c for c in parts if _over(c, bounds) is None]
    waves = [_wave(c, bounds, _over(c, bounds)) for c in parts if _over(c, bounds) is not None]
    waves += [_merged(b, bounds) for b in _first_fit(fits, bounds)]
    waves.sort(key=lambda w: (w.over_bounds is not None, w.bytes, w.records, w.topics[0]))
    return [replace(w, number=n) for n, w in enumerate(waves, start=1)]


def components(sizes: Iterable[TopicSize], groups: Mapping[str, Iterable[str]]) -> list[Component]:
    """The topics joined by the groups that read them together (union-find), largest
    first; topics a group reads that are not in ``sizes`` are ignored."""
    by_name = {s.name: s for s in sizes}
    parent = {name: name for name in by_name}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]  # path halving
            name = parent[name]
        return name

    read = {g: sorted(t for t in set(topics) if t in by_name) for g, topics in groups.items()}
    for topics in read.values():
        for other in topics[1:]:
            a, b = root(topics[0]), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    found: dict[str, Component] = {}
    for name in sorted(by_name):
        part = found.setdefault(root(name), Component([]))
        part.topics.append(name)
        part.bytes += by_name[name].bytes
        part.records += by_name[name].records
    for group in sorted(read):
        if read[group]:
            found[root(read[group][0])].groups.append(group)
    return sorted(found.values(), key=lambda c: (-c.bytes, -c.records, c.topics[0]))


def _first_fit(parts: list[Component], bounds: Bounds) -> list[list[Component]]:
    """First-fit decreasing: each component (largest first) in the first wave it fits."""
    bins: list[list[Component]] = []
    totals: list[tuple[int, int]] = []
    for part in parts:
        for i, (size, records) in enumerate(totals):
            if size + part.bytes <= bounds.max_bytes and (
                bounds.seconds(records + part.records) <= bounds.max_seconds
            ):
                bins[i].append(part)
                totals[i] = (size + part.bytes, records + part.records)
                break
        else:
            bins.append([part])
            totals.append((part.bytes, part.records))
    return bins


def _over(part: Component, bounds: Bounds) -> str | None:
    one = len(part.topics) == 1
    what = (
        f"topic {part.topics[0]} alone"
        if one
        else f"{len(part.topics)} topics read together by {_names(part.groups)}"
    )
    why = "a topic moves whole" if one else "a group's topics are never split"
    seconds = bounds.seconds(part.records)
    if part.bytes > bounds.max_bytes:
        over = f"{'holds' if one else 'hold'} {size_text(part.bytes)}, more than"
        bound = size_text(bounds.max_bytes)
    elif seconds > bounds.max_seconds:
        over = f"{'takes' if one else 'take'} ~{span_text(seconds)} to copy, longer than"
        bound = span_text(bounds.max_seconds)
    else:
        return None
    return f"{what} {over} one wave's {bound}; {why}"


def _names(groups: list[str]) -> str:
    shown = ", ".join(groups[:3]) + (f" and {len(groups) - 3} more" if len(groups) > 3 else "")
    return f"group{'s' if len(groups) > 1 else ''} {shown}"


def _wave(part: Component, bounds: Bounds, over: str | None) -> Wave:
    return Wave(
        0,
        tuple(part.topics),
        tuple(part.groups),
        part.bytes,
        part.records,
        bounds.seconds(part.records),
        over,
    )


def _merged(parts: list[Component], bounds: Bounds) -> Wave:
    records = sum(p.records for p in parts)
    return Wave(
        0,
        tuple(sorted(t for p in parts for t in p.topics)),
        tuple(sorted(g for p in parts for g in p.groups)),
        sum(p.bytes for p in parts),
        records,
        bounds.seconds(records),
    )


def parse_size(text: str) -> int | None:
    """Bytes in ``text`` ('50GB', '512MB', '1.5TB', '1048576'; units of 1024), or None
    if it is not a size above 0."""
    value = text.strip().upper()
    factor = next((f for unit, f in _UNITS.items() if value.endswith(unit)), 1)
    number = next((value.removesuffix(u) for u in _UNITS if value.endswith(u)), value)
    try:
        size = int(float(number) * factor)
    except (ValueError, OverflowError):  # not a number, nan, inf
        return None
    return size if size > 0 else None


def size_text(size: float) -> str:
    """``size`` bytes as people read them: 512 B, 3.2 MB, 50 GB (units of 1024)."""
    for unit, factor in _UNITS.items():
        if size >= factor > 1:
            return f"{size / factor:.3g} {unit}"
    return f"{size:.0f} B"


def span_text(seconds: float) -> str:
    """``seconds`` as people read them: 45s, 12m, 2h05m."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes}m"
    return f"{minutes // 60}h{minutes % 60:02d}m"
