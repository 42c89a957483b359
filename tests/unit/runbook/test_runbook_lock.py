"""One command at a time per subject: a second refuses naming the first; the lock of a
process that died is taken over (and the caller told)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from kmigrate.errors import ConflictError
from kmigrate.runbook.lock import held
from kmigrate.store import open_store
from kmigrate.store.database import Store
from kmigrate.store.locks import Holder, holder
from kmigrate.store.schema import command_locks


def _hold(
    store: Store, command: str, taken: list[Holder] | None = None
) -> AbstractContextManager[None]:
    return held(
        store,
        "zk-move:legacy",
        command,
        what="the ZooKeeper move of cluster 'legacy'",
        on_takeover=(taken if taken is not None else []).append,
    )


def test_a_second_command_is_refused_naming_the_first(tmp_path: Path) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    with _hold(store, "zk migrate move.yaml"):
        with pytest.raises(ConflictError) as refused, _hold(store, "zk cleanup"):
            pytest.fail("two commands held the lock")
        assert str(refused.value) == (
            "the ZooKeeper move of cluster 'legacy' is busy: `kmigrate zk migrate move.yaml` "
            f"(pid {os.getpid()} on {socket.gethostname()}) acts on it; wait for it to finish"
        )
    assert holder(store, "zk-move:legacy") is None, "released when the command ends"
    with _hold(store, "zk cleanup"):
        assert holder(store, "zk-move:legacy").command == "zk cleanup"  # type: ignore[union-attr]


def test_the_lock_of_a_killed_command_is_taken_over(tmp_path: Path) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that no longer runs: the holder killed with -9
    dead = Holder(child.pid, socket.gethostname(), "zk migrate move.yaml", 0)
    with store.transaction() as conn:
        conn.execute(
            command_locks.insert().values(
                subject="zk-move:legacy",
                pid=dead.pid,
                host=dead.host,
                command=dead.command,
                acquired_ms=0,
            )
        )
    taken: list[Holder] = []
    with _hold(store, "zk migrate move.yaml", taken):
        assert holder(store, "zk-move:legacy").pid == os.getpid()  # type: ignore[union-attr]
    assert taken == [dead]
