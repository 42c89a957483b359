"""An ensemble move's record in the store (through the runbook frame): one move per
cluster, resumed only with its own plan, and its history in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.ensemble_move.move import ensemble_move
from kmigrate.errors import ConflictError
from kmigrate.model.operations import MoveEvent, MoveRecord
from kmigrate.store import Store, open_store


def begin_move(store: Store, kafka: str, plan_yaml: str) -> MoveRecord:
    return ensemble_move(store, kafka).begin(plan_yaml)


def get_move(store: Store, kafka: str) -> MoveRecord | None:
    return ensemble_move(store, kafka).get()


def history(store: Store, kafka: str) -> list[MoveEvent]:
    return ensemble_move(store, kafka).history()


def record(
    store: Store, kafka: str, phase: str, step: str, outcome: str, detail: str | None = None
) -> None:
    ensemble_move(store, kafka).record(phase, step, outcome, detail)


def set_phase(store: Store, kafka: str, phase: str) -> None:
    ensemble_move(store, kafka).set_phase(phase)


def restart_interrupted(store: Store, kafka: str, broker: int) -> bool:
    return ensemble_move(store, kafka).interrupted(f"broker {broker}")


def test_a_move_in_progress_resumes_only_with_its_own_plan(tmp_path: Path) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    assert begin_move(store, "legacy", "plan A").phase == "planned"
    record(store, "legacy", "join", "servers 4,5 joined", "done")
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


def test_a_move_refused_before_it_changed_anything_gives_way_to_a_new_plan(
    tmp_path: Path,
) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    begin_move(store, "legacy", "plan A")
    record(store, "legacy", "join", "stopped", "refused", "broker(s) 2 not registered")
    assert begin_move(store, "legacy", "plan B").phase == "planned", "nothing was done"
    record(store, "legacy", "switch", "broker 1", "started")
    with pytest.raises(ConflictError, match="in the middle of a ZooKeeper move"):
        begin_move(store, "legacy", "plan C")


def test_only_a_restart_that_began_and_never_ended_counts_as_interrupted(tmp_path: Path) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    begin_move(store, "legacy", "plan A")
    assert not restart_interrupted(store, "legacy", 1)
    record(store, "legacy", "switch", "broker 1", "started")
    record(store, "legacy", "switch", "broker 2", "started")
    record(store, "legacy", "switch", "broker 2", "done", "runs on new")
    assert restart_interrupted(store, "legacy", 1)
    assert not restart_interrupted(store, "legacy", 2)
    assert not restart_interrupted(store, "other", 1)
