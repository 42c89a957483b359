"""A ZooKeeper move's record in the store: one move per cluster, resumed only with its
own plan, and its history in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.errors import ConflictError
from kmigrate.store import open_store
from kmigrate.store.zk_moves import begin_move, get_move, history, record, set_phase


def test_a_move_in_progress_resumes_only_with_its_own_plan(tmp_path: Path) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    assert begin_move(store, "legacy", "plan A").phase == "planned"
    set_phase(store, "legacy", "join")
    assert begin_move(store, "legacy", "plan A").phase == "join"
    with pytest.raises(ConflictError, match="in the middle of a ZooKeeper move"):
        begin_move(store, "legacy", "plan B")
    assert begin_move(store, "other", "plan B").phase == "planned"
    set_phase(store, "legacy", "done")
    assert begin_move(store, "legacy", "plan A").phase == "done"
    assert begin_move(store, "legacy", "plan B").phase == "planned", "a later, new move"
    record(store, "legacy", "join", "first", "done")
    record(store, "legacy", "check", "second", "refused", "differs at /kafka/x")
    assert [(e.step, e.outcome) for e in history(store, "legacy")] == [
        ("first", "done"),
        ("second", "refused"),
    ]
    move = get_move(store, "legacy")
    assert move is not None and move.plan_yaml == "plan B"
