"""Where to kill a phased operation (pure: no processes, no clock): the step boundaries its
progress lines mark, the seeded choice of one kill point for a test, and the chain of
kills the kill-point sweep (bench/killpoints.py) runs through one operation.

A boundary is a progress line a kmigrate command prints between steps ("> roll1: broker
2 (migration mode)", "> phase check", "> moving 2 partition(s): ..."), reduced to a key
that reads the same on every run: its detail in parentheses, pids and durations dropped.
Status lines (what a wait waits for, a reassignment's copy progress) are not boundaries.

A chain kills one operation again and again until it finishes: each run is killed at the
first boundary no earlier run was killed at, or, for the inside kills a seed asks for (on
a run after one killed at a boundary), a seeded delay after the run began; a boundary not
killed at yet that comes first is killed at instead, so every boundary printed is killed
at exactly once and an inside kill lands in a step longer than its delay.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

_STATUS = (
    re.compile(r"^waiting\b"),
    re.compile(r"^reading the metadata again"),
    re.compile(r"^\d+/\d+ partitions moved"),
)
_PID = re.compile(r"\b(pid|process) \d+")
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|s)\b")


def boundary(line: str) -> str | None:
    """The boundary a line of a command's output marks, or None (not a progress line, or
    a status line). Progress lines start with "> " (kmigrate's render.progress)."""
    text = line.strip()
    if not text.startswith("> "):
        return None
    text = text[2:].strip()
    if any(p.search(text) for p in _STATUS):
        return None
    text = text.split(" (", maxsplit=1)[0]
    text = _DURATION.sub("N s", _PID.sub(r"\1 N", text))
    return text.rstrip(" .;:") or None


@dataclass(frozen=True)
class KillPoint:
    """Where one run is killed: ``delay_s`` after the first line whose boundary starts
    with ``after`` (at the boundary when 0); ``after`` None: after the run began, or at the
    first boundary a chain has not killed at yet (``delay_s`` 0)."""

    after: str | None
    delay_s: float = 0.0

    def describe(self) -> str:
        if self.delay_s == 0:
            return f"at '{self.after}'" if self.after else "at the next boundary not killed at"
        where = f"'{self.after}'" if self.after else "the run began"
        return f"{self.delay_s:.1f} s after {where}"


def choose(rng: random.Random, boundaries: list[str | None], span_s: float) -> KillPoint:
    """One kill point for a test's run: one of ``boundaries`` or, as often, a random moment
    of up to ``span_s`` after one of them (inside the step that follows it); None among
    them stands for the run's start (a kill there is always a random moment after it).
    ``span_s`` 0: boundaries only."""
    after = rng.choice(boundaries)
    if after is not None and (span_s <= 0 or rng.random() < 0.5):
        return KillPoint(after)
    return KillPoint(after, round(rng.uniform(0.1, span_s), 1))


@dataclass(frozen=True)
class Kill:
    """One run of a chain and how it ended: killed (at a boundary, or inside the step
    after ``last`` ``elapsed_s`` after that line), or finished with ``exit_code``."""

    point: KillPoint
    at: str | None  # the boundary killed at exactly
    last: str | None  # the last boundary the run printed before it was killed or ended
    elapsed_s: float  # since ``last`` (or the run's start) when it was killed
    exit_code: int | None = None  # the run finished by itself

    @property
    def where(self) -> str:
        if self.exit_code is not None:
            return f"finished (exit {self.exit_code}) before the kill"
        if self.at is not None:
            return f"at '{self.at}'"
        return f"inside the step after '{self.last or 'the start'}', {self.elapsed_s:.1f} s in"


@dataclass
class Chain:
    """The kills of one operation, seeded: ``inside`` of them a random delay of up to
    ``span_s`` into a run, alternating with kills at boundaries; the rest at boundaries."""

    seed: int
    inside: int = 0
    span_s: float = 10.0
    visited: list[str] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        self._delays = [round(rng.uniform(0.2, self.span_s), 1) for _ in range(self.inside)]

    def next_point(self) -> KillPoint:
        """Where to kill the next run: after a run killed at a boundary, while the seed's
        delays last, inside a step (a boundary not killed at yet that comes first is
        killed at instead, and the same delay tried on the next run); else at the next
        boundary not killed at yet."""
        inside = [k for k in self.kills if k.at is None and k.exit_code is None]
        if self.kills and len(inside) < len(self._delays) and self.kills[-1].at is not None:
            return KillPoint(None, self._delays[len(inside)])
        return KillPoint(None)

    def kill_here(self, line: str) -> str | None:
        """The boundary to kill at if ``line`` marks one not killed at yet (it is then
        counted as visited), else None."""
        key = boundary(line)
        if key is None or key in self.visited:
            return None
        self.visited.append(key)
        return key

    def record(self, kill: Kill) -> None:
        self.kills.append(kill)

    @property
    def finished(self) -> bool:
        return bool(self.kills) and self.kills[-1].exit_code is not None


def matches(point: KillPoint, line: str) -> bool:
    """Whether ``line`` is the boundary a test's ``point`` waits for."""
    key = boundary(line)
    return key is not None and point.after is not None and key.startswith(point.after)
