"""A mirror process as it reports itself: its state, what it waits for, its heartbeat."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RunState(Enum):
    STARTING = "starting"
    RUNNING = "running"
    WAITING = "waiting"  # alive, waiting out a cluster outage (see MirrorRun.waiting)
    STOPPED = "stopped"
    FAILED = "failed"


# The states of a process that is alive and owns its link.
LIVE_STATES = frozenset({"starting", "running", "waiting"})


@dataclass(frozen=True)
class Waiting:
    """What a waiting mirror waits for: a cluster, the condition, since when."""

    cluster: str
    role: str  # source | target
    condition: str
    since_ms: int


@dataclass(frozen=True)
class MirrorRun:
    """The latest mirror process of a link, as it last reported itself."""

    link: str
    pid: int
    host: str
    state: RunState
    reason: str | None
    started_ms: int
    heartbeat_ms: int
    records_per_s: float
    log_path: str | None
    waiting: Waiting | None = None
    batch_s: float | None = None  # how long the last batch took (read, write, commit)
