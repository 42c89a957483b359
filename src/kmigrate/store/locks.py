"""One command at a time per subject (a cluster's ZooKeeper move, ...).

A lock names the process holding it. A second command refuses with one line naming the
holder; a lock left behind by a process that died on this host (kill -9) is taken over,
and the caller is told so it can log it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import select

from kmigrate.errors import ConflictError, StoreError
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import command_locks


def pid_alive(pid: int) -> bool:
    try:
        # Our own child (a mirror this process started) that exited stays a zombie,
        # which signal 0 still reaches, until it is reaped: reap it here.
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass  # not our child: ask the kernel below
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Holder:
    pid: int
    host: str
    command: str
    acquired_ms: int


def holder(store: Store, subject: str) -> Holder | None:
    with store.transaction() as conn:
        row = conn.execute(select(command_locks).where(command_locks.c.subject == subject)).first()
    return Holder(row.pid, row.host, row.command, row.acquired_ms) if row else None


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
    dead = found is not None and found.host == socket.gethostname() and not pid_alive(found.pid)
    mine = {"pid": os.getpid(), "host": socket.gethostname(), "command": command}
    where = command_locks.c.subject == subject
    try:
        with store.transaction() as conn:
            if dead:
                assert found is not None
                conn.execute(
                    command_locks.delete().where(where & (command_locks.c.pid == found.pid))
                )
            conn.execute(
                command_locks.insert().values(subject=subject, acquired_ms=now_ms(), **mine)
            )
    except StoreError:
        busy = holder(store, subject)
        if busy is None:
            raise
        raise ConflictError(
            f"{what} is busy: `kmigrate {busy.command}` (pid {busy.pid} on {busy.host}) "
            "acts on it; wait for it to finish"
        ) from None
    if dead:
        assert found is not None
        on_takeover(found)
    try:
        yield
    finally:
        with store.transaction() as conn:
            conn.execute(command_locks.delete().where(where & (command_locks.c.pid == os.getpid())))
