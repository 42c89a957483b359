"""Which of a migration's topics or groups a step is about: a regex that must match
whole names (the CLI's ``--topics``/``--groups``, the API's ``"topics": "REGEX"``), a
wave of the plan (``--wave N``), or exact names (the older form; each is checked by the
step itself)."""

from __future__ import annotations

import re

from kmigrate.errors import NotFoundError
from kmigrate.migration.plan import Plan, PlannedWave
from kmigrate.migration.session import Migration


def chosen(
    m: Migration,
    kind: str,
    regex: str | None,
    names: list[str] | tuple[str, ...],
    wave: int | None = None,
) -> list[str]:
    """The names ``regex`` matches among the migration's ``kind``s ("topic" or "group"),
    the ``kind``s of its plan's ``wave``, or ``names`` as given; none matching is a named
    thing that does not exist."""
    if wave is not None:
        return in_wave(m.plan, kind, wave, f"migration '{m.name}'")
    if names:
        return list(names)
    assert regex is not None
    known = m.plan.topic_names() if kind == "topic" else [g.name for g in m.plan.groups]
    found = [n for n in known if re.fullmatch(regex, n)]
    if not found:
        raise NotFoundError(
            f"no {kind} of migration '{m.name}' matches '{regex}' "
            f"(its {kind}s: {', '.join(known) or 'none'})"
        )
    return found


def in_wave(plan: Plan, kind: str, number: int, what: str) -> list[str]:
    """The topics (or groups) of ``plan``'s wave ``number``; a wave that does not exist,
    or a wave without groups asked for its groups, is a named thing that does not exist."""
    wave = plan_wave(plan, number, what)
    names = wave.topics if kind == "topic" else wave.groups
    if not names:
        raise NotFoundError(
            f"wave {number} of {what} has no {kind}s (its topics: {', '.join(wave.topics)})"
        )
    return list(names)


def plan_wave(plan: Plan, number: int, what: str) -> PlannedWave:
    """Wave ``number`` of ``plan`` (``what`` names the plan in the error)."""
    if not plan.waves:
        raise NotFoundError(f"{what} has no waves (its plan fits in one); drop --wave")
    for wave in plan.waves:
        if wave.number == number:
            return wave
    raise NotFoundError(f"{what} has no wave {number} (its waves: 1-{len(plan.waves)})")
