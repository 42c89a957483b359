"""Partition migrations through the gateway (seed 000) and the virtual offsets they give
clients. Pure.

A partition starts on one cluster, where the offsets clients see are that cluster's.
Each migration moves where the partition is written, and records the virtual offset at
which the new cluster's records begin (``end_offset``, the origin's end offset when its
writes stopped) and the physical offset on the target that stands there
(``target_base``, 0 for a new topic):

    virtual offset  0 ............ end_offset ........................
    origin          0 ............ end_offset  (reads below end_offset)
    target                         target_base ...  (virtual - end_offset + target_base)

The seed's rule (client offset = endOffset + target offset) is the case target_base = 0.
A virtual offset always names the same record, whatever happens to the origin later:
nothing at or above ``end_offset`` is ever read from the origin, and nothing below it
from the target. Migrations chain (A to B, later B to C); each one's origin is where
the previous one left the partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kmigrate.errors import ConfigError


class Status(StrEnum):
    MIGRATING = "Migrating"  # writes fenced on every instance; not flipped yet
    MIGRATED = "Migrated"  # written on the target; reads below end_offset from the origin
    AGED = "Aged"  # the origin's retention passed end_offset: nothing left to read there


class Mode(StrEnum):
    SMOOTH = "smooth"  # origin healthy: fence, read its end offset, flip
    FAILOVER = "failover"  # origin down: end_offset is the last high watermark seen


@dataclass(frozen=True)
class Migration:
    origin: str
    target: str
    status: Status
    epoch: int  # grows with every change of this record
    mode: Mode = Mode.SMOOTH
    end_offset: int | None = None  # virtual; None while Migrating
    target_base: int = 0  # the target's physical offset at end_offset
    ignore_origin: bool = False  # reads never go to the origin (its records are skipped)
    keep_origin: bool = False  # once aged, do not delete the origin's topic
    # Per idempotent client producer ("id:epoch"), the last sequence number the origin
    # holds for this partition: a retry of it sent to the target is answered as written.
    writers: Mapping[str, int] = field(default_factory=dict)
    started_ms: int = 0
    changed_ms: int = 0
    # Failover: the origin's end offset found once it answered again (None: not yet).
    origin_end: int | None = None

    @property
    def unavailable(self) -> tuple[int, int] | None:
        """Origin offsets [first, end) a failover could not serve: written on the origin
        after the last high watermark the gateway recorded. Never served (their virtual
        offsets belong to the target's records); reported so they are not lost silently."""
        if self.origin_end is None or self.end_offset is None:
            return None
        return (self.end_offset, self.origin_end) if self.origin_end > self.end_offset else None

    @property
    def flipped(self) -> bool:
        return self.status is not Status.MIGRATING and self.end_offset is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "target": self.target,
            "status": self.status.value,
            "epoch": self.epoch,
            "mode": self.mode.value,
            "end_offset": self.end_offset,
            "target_base": self.target_base,
            "ignore_origin": self.ignore_origin,
            "keep_origin": self.keep_origin,
            "writers": dict(sorted(self.writers.items())),
            "started_ms": self.started_ms,
            "changed_ms": self.changed_ms,
            "origin_end": self.origin_end,
            "unavailable": list(self.unavailable) if self.unavailable else None,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Migration:
        end = body.get("end_offset")
        return cls(
            origin=str(body["origin"]),
            target=str(body["target"]),
            status=Status(body["status"]),
            epoch=int(body["epoch"]),
            mode=Mode(body.get("mode", "smooth")),
            end_offset=None if end is None else int(end),
            target_base=int(body.get("target_base", 0)),
            ignore_origin=bool(body.get("ignore_origin", False)),
            keep_origin=bool(body.get("keep_origin", False)),
            writers={str(k): int(v) for k, v in body.get("writers", {}).items()},
            started_ms=int(body.get("started_ms", 0)),
            changed_ms=int(body.get("changed_ms", 0)),
            origin_end=None if body.get("origin_end") is None else int(body["origin_end"]),
        )


@dataclass(frozen=True)
class Segment:
    """A run of virtual offsets served by one cluster."""

    cluster: str
    start: int  # first virtual offset
    base: int  # the physical offset at ``start``
    end: int | None  # first virtual offset of the next segment; None: the last one
    readable: bool = True  # False once aged, or skipped with ignore_origin

    @property
    def delta(self) -> int:
        """virtual = physical + delta"""
        return self.start - self.base

    def to_physical(self, virtual: int) -> int:
        return virtual - self.delta

    def to_virtual(self, physical: int) -> int:
        return physical + self.delta

    def clamp(self, virtual: int) -> int:
        """``virtual`` kept inside this segment's offsets."""
        low = max(virtual, self.start)
        return low if self.end is None else min(low, self.end)


def segments(home: str, chain: Sequence[Migration]) -> list[Segment]:
    """The offset space of a partition first written on ``home`` and migrated by
    ``chain`` (oldest first). A migration not flipped yet adds nothing."""
    found = [Segment(chain[0].origin if chain else home, 0, 0, None)]
    for m in chain:
        if not m.flipped:
            break
        assert m.end_offset is not None
        last = found[-1]
        readable = m.status is not Status.AGED and not m.ignore_origin
        found[-1] = Segment(last.cluster, last.start, last.base, m.end_offset, readable)
        found.append(Segment(m.target, m.end_offset, m.target_base, None))
    return found


def locate(space: Sequence[Segment], virtual: int) -> Segment:
    """The segment holding ``virtual`` (offsets past the end: the last segment)."""
    for segment in space:
        if segment.end is None or virtual < segment.end:
            return segment
    return space[-1]


def first_readable(space: Sequence[Segment]) -> Segment:
    return next((s for s in space if s.readable), space[-1])


def writers_key(producer_id: int, epoch: int) -> str:
    return f"{producer_id}:{epoch}"


# ---------------------------------------------------------------- planning a change


def check_start(
    topic: str,
    partitions: Iterable[int],
    current: Mapping[int, str],
    chains: Mapping[int, Sequence[Migration]],
    target: str,
    count: int,
) -> None:
    """Refuse a migration the partition's state does not allow (one line each)."""
    for p in partitions:
        if not 0 <= p < count:
            raise ConfigError(f"topic '{topic}' has {count} partition(s); no partition {p}")
        if current[p] == target:
            raise ConfigError(f"{topic}[{p}] is already written on '{target}'")
        chain = chains.get(p, ())
        if chain and not chain[-1].flipped:
            raise ConfigError(
                f"{topic}[{p}] is being migrated to '{chain[-1].target}' (epoch "
                f"{chain[-1].epoch}); run the same command again to finish it first"
            )


def begin(
    origin: str, target: str, epoch: int, mode: Mode, ignore: bool, now: int, keep: bool = False
) -> Migration:
    return Migration(
        origin, target, Status.MIGRATING, epoch, mode, None, 0, ignore, keep, {}, now, now
    )


def held_text(fence_ms: int, steps: Mapping[str, int], while_fenced: str = "while fenced") -> str:
    """``writes held 812 ms (acknowledged 120, ..., flip 9)``: a smooth move's fence and
    where its time went (kmigrate.gateway.control.mover.Moved)."""
    named = {(while_fenced if name == "while fenced" else name): ms for name, ms in steps.items()}
    laps = ", ".join(f"{name} {ms}" for name, ms in named.items())
    return f"writes held {fence_ms} ms" + (f" ({laps})" if laps else "")
