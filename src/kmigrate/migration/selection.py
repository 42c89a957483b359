"""Which of a migration's topics or groups a step is about: a regex that must match
whole names (the CLI's ``--topics``/``--groups``, the API's ``"topics": "REGEX"``), or
exact names (the older form; each is checked by the step itself)."""

from __future__ import annotations

import re

from kmigrate.errors import NotFoundError
from kmigrate.migration.session import Migration


def chosen(
    m: Migration, kind: str, regex: str | None, names: list[str] | tuple[str, ...]
) -> list[str]:
    """The names ``regex`` matches among the migration's ``kind``s ("topic" or "group"),
    or ``names`` as given; none matching is a named thing that does not exist."""
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
