"""A store made before the `operations` table (ensemble moves in `zk_moves`, KRaft
conversions there too under a "kraft:" key) still opens, with its operations found."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kmigrate.ensemble_move.move import ensemble_move
from kmigrate.kraft.conversion import kraft_conversion
from kmigrate.store import open_store

OLD_DDL = """
CREATE TABLE zk_moves (
    kafka VARCHAR(255) NOT NULL,
    plan_yaml TEXT NOT NULL,
    phase VARCHAR(20) NOT NULL,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (kafka)
);
CREATE TABLE zk_move_events (
    id INTEGER NOT NULL,
    kafka VARCHAR(255) NOT NULL,
    at_ms BIGINT NOT NULL,
    phase VARCHAR(20) NOT NULL,
    step VARCHAR(80) NOT NULL,
    outcome VARCHAR(20) NOT NULL,
    detail TEXT,
    PRIMARY KEY (id)
);
CREATE INDEX ix_zk_move_events ON zk_move_events (kafka, at_ms);
INSERT INTO zk_moves VALUES ('legacy', 'zk plan', 'switch', 1, 2);
INSERT INTO zk_moves VALUES ('kraft:legacy', 'kraft plan', 'dual-write', 3, 4);
INSERT INTO zk_move_events VALUES (1, 'legacy', 10, 'join', 'servers 4,5 joined', 'done', NULL);
INSERT INTO zk_move_events VALUES
    (2, 'kraft:legacy', 11, 'roll1', 'broker 1', 'started', 'migration');
INSERT INTO zk_move_events VALUES (3, 'legacy', 12, 'switch', 'broker 1', 'started', 'on new');
INSERT INTO zk_move_events VALUES
    (4, 'kraft:legacy', 13, 'roll1', 'broker 1', 'done', 'migration mode');
"""


def test_an_old_store_opens_with_its_ensemble_move_and_kraft_conversion(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "kmigrate.db") as conn:
        conn.executescript(OLD_DDL)
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    move, conversion = ensemble_move(store, "legacy"), kraft_conversion(store, "legacy")
    found = move.get()
    assert found is not None and (found.plan_yaml, found.phase) == ("zk plan", "switch")
    converting = conversion.get()
    assert converting is not None and (converting.plan_yaml, converting.phase) == (
        "kraft plan",
        "dual-write",
    )
    assert [(e.at_ms, e.step, e.outcome) for e in move.history()] == [
        (10, "servers 4,5 joined", "done"),
        (12, "broker 1", "started"),
    ]
    assert [(e.at_ms, e.outcome, e.detail) for e in conversion.history()] == [
        (11, "started", "migration"),
        (13, "done", "migration mode"),
    ]
    assert move.interrupted("broker 1") and not conversion.interrupted("broker 1")
    assert move.begin("zk plan").phase == "switch", "the move resumes with its own plan"
    store.close()
    again = open_store("sqlite:///kmigrate.db", tmp_path)  # opening twice copies once
    assert len(ensemble_move(again, "legacy").history()) == 2
    again.close()
