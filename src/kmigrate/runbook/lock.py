"""One command at a time per subject (a cluster's ZooKeeper move, a migration, ...).

A second command refuses with one line naming the holder; a lock left behind by a
process that died on this host (kill -9) is taken over, and the caller is told so it
can journal it.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kmigrate.errors import ConflictError, StoreError
from kmigrate.store import Store
from kmigrate.store.locks import Holder, holder, pid_alive, release, take


@contextmanager
def held(
    store: Store,
    subject: str,
    command: str,
    *,
    what: str,
    on_takeover: Callable[[Holder], None],
) -> Iterator[None]:
    """Hold ``subject``'s lock while the block runs; ``what`` names the subject in the
    refusal ("the ZooKeeper move of cluster 'legacy'")."""
    found = holder(store, subject)
    dead = found if found is not None and _died_here(found) else None
    try:
        take(store, subject, command, replacing=dead)
    except StoreError:
        busy = holder(store, subject)
        if busy is None:
            raise
        raise ConflictError(
            f"{what} is busy: `kmigrate {busy.command}` (pid {busy.pid} on {busy.host}) "
            "acts on it; wait for it to finish"
        ) from None
    if dead is not None:
        on_takeover(dead)
    try:
        yield
    finally:
        release(store, subject)


def _died_here(found: Holder) -> bool:
    """The holder ran on this host and runs no more (a lock elsewhere is never taken)."""
    return found.host == socket.gethostname() and not pid_alive(found.pid)
