"""One error for a bulk request that failed for some of its items.

Kafka answers a bulk request (create many topics, grow many topics) item by item;
kmigrate reports every item that failed, not only the first: the message stays one
readable line (each distinct reason once, with the first items it applies to), and the
error's ``detail`` lists every failed item with its reason when the line could not.
"""

from __future__ import annotations

from collections.abc import Sequence

from kmigrate.errors import KMigrateError

NAMED = 10  # items (and reasons) a message names before it counts the rest


def together(
    failures: Sequence[tuple[str, KMigrateError]], *, total: int, noun: str, outcome: str
) -> KMigrateError:
    """One error for every failed item; ``failures`` pairs an item's name with its error.

    A request of one item fails with that item's error unchanged. Otherwise the error is
    of the first failure's class (its exit code is the first failure's), and its message
    gives each distinct reason once with the items it applies to, e.g. "2 of 5 topics
    could not be created on cluster 't': topic 'a' already exists on cluster 't';
    topic 'b': <reason>".
    """
    first = failures[0][1]
    if total == 1 and len(failures) == 1:
        return first
    reasons: dict[str, list[str]] = {}
    for name, error in failures:
        reasons.setdefault(str(error), []).append(name)
    parts = [_part(reason, names, noun) for reason, names in reasons.items()]
    shown = "; ".join(parts[:NAMED])
    if len(parts) > NAMED:
        shown += f"; and {len(parts) - NAMED} more reason(s)"
    message = f"{len(failures)} of {total} {noun}s {outcome}: {shown}"
    complete = len(parts) <= NAMED and all(len(n) <= NAMED for n in reasons.values())
    # Copied, not constructed: subclasses take keyword arguments of their own.
    combined = first.__class__.__new__(first.__class__)
    combined.__dict__.update(first.__dict__)
    combined.args = (message,)
    combined.message = message
    combined.detail = None if complete else "\n".join(f"{n}: {e}" for n, e in failures)
    return combined


def named(names: Sequence[str]) -> str:
    """``names`` quoted, the first NAMED of them, then how many more."""
    shown = ", ".join(f"'{n}'" for n in names[:NAMED])
    return shown + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")


def _part(reason: str, names: list[str], noun: str) -> str:
    if len(names) == 1 and f"'{names[0]}'" in reason:
        return reason  # the reason names its item already
    return f"{noun}{'s' if len(names) > 1 else ''} {named(names)}: {reason}"
