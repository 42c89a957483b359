"""Command locks as rows: one per subject (a cluster's ZooKeeper move, a migration, ...),
naming the process that holds it. Who may take a lock over is the runbook's decision
(kmigrate.runbook.lock); this module only reads and writes the rows.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from sqlalchemy import select

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
    with store.reading() as conn:
        row = conn.execute(select(command_locks).where(command_locks.c.subject == subject)).first()
    return Holder(row.pid, row.host, row.command, row.acquired_ms) if row else None


def take(store: Store, subject: str, command: str, *, replacing: Holder | None = None) -> None:
    """This process holds ``subject`` (``replacing`` a holder's row first, in the same
    transaction); StoreError when another holds it."""
    mine = {"pid": os.getpid(), "host": socket.gethostname(), "command": command}
    with store.transaction() as conn:
        if replacing is not None:
            conn.execute(
                command_locks.delete().where(
                    (command_locks.c.subject == subject) & (command_locks.c.pid == replacing.pid)
                )
            )
        conn.execute(command_locks.insert().values(subject=subject, acquired_ms=now_ms(), **mine))


def release(store: Store, subject: str) -> None:
    """This process no longer holds ``subject`` (nothing if it did not)."""
    with store.transaction() as conn:
        conn.execute(
            command_locks.delete().where(
                (command_locks.c.subject == subject) & (command_locks.c.pid == os.getpid())
            )
        )
