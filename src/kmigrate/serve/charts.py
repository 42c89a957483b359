"""Small charts for the console, drawn on the server as SVG paths (no chart library,
no script): a value over the last hour, with gaps where it was unknown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 240.0, 48.0


@dataclass(frozen=True)
class Chart:
    path: str  # SVG path data in a WIDTH x HEIGHT box ("" with nothing known)
    top: float  # the value at the box's top edge
    last: float | None  # the newest known value
    width: float = WIDTH
    height: float = HEIGHT


def line(points: Sequence[tuple[int, float | None]], now_ms: int, span_s: float = 3600.0) -> Chart:
    """``points`` (time in ms, value or None) from ``now_ms - span_s`` to ``now_ms``,
    left to right; a None breaks the line (a cluster was down)."""
    start = now_ms - span_s * 1000
    shown = [(t, v) for t, v in points if t >= start]
    known = [v for _, v in shown if v is not None]
    top = max(max(known, default=0.0), 1.0)
    parts: list[str] = []
    pen_down = False
    for t, v in shown:
        if v is None:
            pen_down = False
            continue
        x = (t - start) / (span_s * 1000) * WIDTH
        y = HEIGHT - (v / top) * (HEIGHT - 2) - 1
        parts.append(f"{'L' if pen_down else 'M'}{x:.1f},{y:.1f}")
        pen_down = True
    return Chart(" ".join(parts), top, known[-1] if known else None)
