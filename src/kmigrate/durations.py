"""Lengths of time as users write them: ``90`` (seconds), ``90s``, ``15m``, ``1h30m``.
One parser for the CLI's DURATION options and the REST API's duration fields, and one
way to print a duration back (:func:`duration_text`)."""

from __future__ import annotations

import re

_DURATION = re.compile(r"\s*(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?\s*")


def parse_duration(text: str) -> float | None:
    """Seconds in ``text`` (90, 90s, 15m, 1h30m, 1.5h), or None if it is not a duration."""
    found = _DURATION.fullmatch(text)
    if found is None or not any(found.groups()):
        return None
    hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return total if total > 0 else None


def seconds_of(value: object) -> float:
    """A number of seconds, or a duration text, as seconds; ValueError names the value."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError(f"{value!r} is not a duration: it must be positive")
        return float(value)
    seconds = parse_duration(str(value))
    if seconds is None:
        raise ValueError(f"'{value}' is not a duration; write e.g. 90s, 15m or 1h30m")
    return seconds


def duration_text(seconds: float) -> str:
    """90 -> "1m30s", 3600 -> "1h", 4.2 -> "4s"."""
    total = max(round(seconds), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    parts.append(f"{secs}s" if secs or not (hours or minutes) else "")
    return "".join(parts)
