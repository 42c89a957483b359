"""The values a mirror link is made of, as the store keeps them.

A *link* copies the topics of one source cluster that match a regex to a target
cluster. It owns its target topics (one writer until promote), its offset maps
and its run state (:mod:`kmigrate.model.runs`). Pure data: the store persists
these, the job and the CLI read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from kmigrate.errors import ConfigError
from kmigrate.model.offsets import PartitionOffsetMap

LINK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def default_link_name(source: str, target: str) -> str:
    return f"{source}-to-{target}"


def check_link_name(name: str) -> str:
    if not LINK_NAME.match(name):
        raise ConfigError(
            f"link name '{name}' is not allowed; use letters, digits, '.', '_' and '-'"
        )
    return name


def compile_topics(regex: str) -> re.Pattern[str]:
    """The topic regex, matched against whole topic names (as Kafka's subscribePattern)."""
    try:
        return re.compile(regex)
    except re.error as exc:
        raise ConfigError(f"--topics '{regex}' is not a valid regular expression: {exc}") from None


@dataclass(frozen=True)
class StartPosition:
    """Where a link starts reading partitions it has never mirrored."""

    kind: str  # "earliest" | "latest" | "timestamp"
    timestamp_ms: int | None = None

    @classmethod
    def parse(cls, text: str) -> StartPosition:
        if text in ("earliest", "latest"):
            return cls(text)
        if text.startswith("@") and text[1:].isdigit():
            return cls("timestamp", int(text[1:]))
        raise ConfigError(f"--from '{text}' must be earliest, latest or @EPOCH_MS")

    def __str__(self) -> str:
        return f"@{self.timestamp_ms}" if self.kind == "timestamp" else self.kind


@dataclass(frozen=True)
class Link:
    name: str
    source: str
    target: str
    topics: str  # regex over source topic names
    start: StartPosition = field(default_factory=lambda: StartPosition("earliest"))
    replication_factor: int | None = None

    def matches(self, topic: str) -> bool:
        return compile_topics(self.topics).fullmatch(topic) is not None


class TopicState(Enum):
    MIRRORING = "mirroring"
    PROMOTING = "promoting"  # promote requested: mirror until lag 0, then stop
    PROMOTED = "promoted"  # no longer mirrored; the target topic is writable
    SOURCE_DELETED = "source-deleted"


@dataclass(frozen=True)
class LinkTopic:
    link: str
    topic: str
    partitions: int
    state: TopicState


@dataclass(frozen=True)
class Gap:
    """Source records the map does not cover although they were in its range."""

    topic: str
    partition: int
    source_start: int
    source_end: int
    reason: str


@dataclass(frozen=True)
class PartitionState:
    """One mirrored partition: its offset map and what the mirror knows about its progress."""

    topic: str
    partition: int
    map: PartitionOffsetMap
    # The target partition's end offset when the link adopted it (0 for a new topic).
    target_start: int
    mirrored: int  # records written by this link
    last_timestamp: int | None  # timestamp of the last mirrored record (ms)
    updated_ms: int
    records_per_s: float = 0.0  # over the partition's last batch

    @property
    def expected_target_end(self) -> int:
        """Where the target partition must end if only the mirror wrote to it."""
        nxt = self.map.target_next
        return self.target_start if nxt is None else nxt
