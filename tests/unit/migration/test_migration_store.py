"""A migration's state, audit log and lock on a real SQLite store (no broker)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kmigrate.errors import ConflictError, NotFoundError
from kmigrate.migration.plan import Plan, PlannedTopic
from kmigrate.migration.session import Migration, Step, locked
from kmigrate.store import Store, open_store
from kmigrate.store.migrations import (
    add_item,
    events_of,
    items_of,
    require_migration,
    save_migration,
    set_state,
)
from kmigrate.store.schema import command_locks

PLAN = Plan(name="m1", source="a", target="b", topics=[PlannedTopic(name="t", partitions=1)])


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'k.db'}")
    save_migration(s, "m1", "a", "b", PLAN.to_yaml())
    add_item(s, "m1", "topic", "t", "MIRRORING")
    yield s
    s.close()


def _holder(store: Store, pid: int) -> None:
    with store.transaction() as conn:
        conn.execute(
            command_locks.insert().values(
                subject="migration:m1",
                pid=pid,
                host=socket.gethostname(),
                command="migrate promote",
                acquired_ms=0,
            )
        )


def test_a_second_command_refuses_while_the_first_holds_the_lock(store: Store) -> None:
    _holder(store, 1)  # pid 1 is alive on every machine
    with (
        pytest.raises(ConflictError, match=r"busy: `kmigrate migrate promote` \(pid 1 on"),
        locked(store, "m1", "rollback", lambda _m: None),
    ):
        pytest.fail("the lock was taken twice")


def test_a_lock_left_by_a_killed_command_is_taken_over_and_logged(store: Store) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    _holder(store, int(done.stdout))  # that process has exited
    seen = []
    with locked(store, "m1", "rollback", seen.append):
        pass
    assert "gone" in seen[0]
    assert [(e.action, e.outcome) for e in events_of(store, "m1")] == [("lock", "recovered")]
    with locked(store, "m1", "status", seen.append):  # released after use
        pass


def test_a_step_left_pending_refuses_other_steps_and_resumes_its_own(store: Store) -> None:
    m = Migration("m1", PLAN, store, None)  # type: ignore[arg-type]
    step = Step(m, "promote", "topic", ["t"], lambda _m: None)
    with pytest.raises(RuntimeError), step.acting():
        raise RuntimeError("killed mid-step")
    (item,) = items_of(store, "m1", "topic")
    assert item.pending == "promote"
    with pytest.raises(
        ConflictError, match=r"interrupted `promote`.*kmigrate migrate promote --topics 't'"
    ):
        Step(m, "rollback", "topic", ["t"], lambda _m: None)
    again = Step(m, "promote", "topic", ["t"], lambda _m: None)
    assert again.resuming == ["t"]
    with again.acting():
        set_state(store, "m1", "topic", "t", "PROMOTED")
    (item,) = items_of(store, "m1", "topic")
    assert (item.state, item.pending) == ("PROMOTED", None)
    outcomes = [(e.action, e.outcome) for e in events_of(store, "m1")]
    assert outcomes == [
        ("promote", "started"),
        ("promote", "failed"),
        ("rollback", "refused"),
        ("promote", "started"),
        ("promote", "done"),
    ]


def test_only_a_move_from_the_expected_state_happens(store: Store) -> None:
    assert not set_state(store, "m1", "topic", "t", "IN_SYNC", only_from="PLANNED")
    assert set_state(store, "m1", "topic", "t", "IN_SYNC", only_from="MIRRORING")


def test_a_migration_keeps_its_clusters_and_is_found_by_name(store: Store) -> None:
    with pytest.raises(ConflictError, match="already moves a -> b"):
        save_migration(store, "m1", "a", "c", PLAN.to_yaml())
    assert require_migration(store, None) == "m1"
    with pytest.raises(NotFoundError, match="no migration named 'zz'"):
        require_migration(store, "zz")
