"""ZooKeeper ensemble moves: the plan each runs, the phase it reached, its history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, select

from kmigrate.errors import ConflictError
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import zk_move_events, zk_moves


@dataclass(frozen=True)
class MoveRecord:
    kafka: str
    plan_yaml: str
    phase: str
    updated_ms: int


@dataclass(frozen=True)
class MoveEvent:
    at_ms: int
    phase: str
    step: str
    outcome: str
    detail: str | None


def begin_move(
    store: Store, kafka: str, plan_yaml: str, what: str = "ZooKeeper move", name: str | None = None
) -> MoveRecord:
    """The cluster's move: created from this plan, or the one already under way (which
    must run the same plan)."""
    with store.transaction() as conn:
        row = conn.execute(select(zk_moves).where(zk_moves.c.kafka == kafka)).first()
        if row is not None and row.plan_yaml != plan_yaml and _replaceable(conn, row):
            # The cluster moved before, or a move was refused before it changed anything:
            # this is a new move (its history starts again).
            conn.execute(zk_moves.delete().where(zk_moves.c.kafka == kafka))
            conn.execute(zk_move_events.delete().where(zk_move_events.c.kafka == kafka))
            row = None
        if row is None:
            stamp = now_ms()
            conn.execute(
                zk_moves.insert().values(
                    kafka=kafka,
                    plan_yaml=plan_yaml,
                    phase="planned",
                    created_ms=stamp,
                    updated_ms=stamp,
                )
            )
            return MoveRecord(kafka, plan_yaml, "planned", stamp)
    if row.plan_yaml != plan_yaml:
        raise ConflictError(
            f"cluster '{name or kafka}' is in the middle of a {what} (phase {row.phase}) with "
            "another plan; resume it with that plan file"
        )
    return MoveRecord(row.kafka, row.plan_yaml, row.phase, row.updated_ms)


def _replaceable(conn: Connection, row: Row[Any]) -> bool:
    if row.phase in ("done", "rolled-back", "reverted"):
        return True
    acted = conn.execute(
        select(zk_move_events.c.id)
        .where(
            (zk_move_events.c.kafka == row.kafka)
            & zk_move_events.c.outcome.in_(("done", "started"))
        )
        .limit(1)
    ).first()
    return acted is None


def get_move(store: Store, kafka: str) -> MoveRecord | None:
    with store.transaction() as conn:
        row = conn.execute(select(zk_moves).where(zk_moves.c.kafka == kafka)).first()
    return MoveRecord(row.kafka, row.plan_yaml, row.phase, row.updated_ms) if row else None


def set_phase(store: Store, kafka: str, phase: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            zk_moves.update()
            .where(zk_moves.c.kafka == kafka)
            .values(phase=phase, updated_ms=now_ms())
        )


def record(
    store: Store, kafka: str, phase: str, step: str, outcome: str, detail: str | None = None
) -> None:
    with store.transaction() as conn:
        conn.execute(
            zk_move_events.insert().values(
                kafka=kafka,
                at_ms=now_ms(),
                phase=phase,
                step=step,
                outcome=outcome,
                detail=detail,
            )
        )


def history(store: Store, kafka: str) -> list[MoveEvent]:
    with store.transaction() as conn:
        rows = conn.execute(
            select(zk_move_events)
            .where(zk_move_events.c.kafka == kafka)
            .order_by(zk_move_events.c.id)
        ).all()
    return [MoveEvent(r.at_ms, r.phase, r.step, r.outcome, r.detail) for r in rows]


def restart_interrupted(store: Store, kafka: str, broker: int) -> bool:
    """Whether the last thing recorded of ``broker`` is a restart that began and never
    ended (a move killed in the middle of it)."""
    with store.transaction() as conn:
        row = conn.execute(
            select(zk_move_events.c.outcome)
            .where(
                (zk_move_events.c.kafka == kafka) & (zk_move_events.c.step == f"broker {broker}")
            )
            .order_by(zk_move_events.c.id.desc())
            .limit(1)
        ).first()
    return row is not None and row.outcome == "started"
