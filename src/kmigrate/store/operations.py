"""Phased operations (ensemble moves, KRaft conversions): per kind and cluster the plan
each runs and the phase it reached, and the journal of its steps."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, select

from kmigrate.errors import ConflictError
from kmigrate.model.operations import MoveEvent, MoveRecord
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import operation_events, operations

FINISHED = ("done", "rolled-back", "reverted")  # phases after which a new plan may start


def _key(kind: str, cluster: str) -> ColumnElement[bool]:
    return (operations.c.kind == kind) & (operations.c.cluster == cluster)


def _events_of(kind: str, cluster: str) -> ColumnElement[bool]:
    return (operation_events.c.kind == kind) & (operation_events.c.cluster == cluster)


def _record(row: Row[Any]) -> MoveRecord:
    return MoveRecord(row.cluster, row.plan_yaml, row.phase, row.updated_ms)


def begin(store: Store, kind: str, cluster: str, plan_yaml: str, what: str) -> MoveRecord:
    """The cluster's operation of this kind: created from this plan, or the one already
    under way (which must run the same plan; ``what`` names the kind in the refusal)."""
    with store.transaction() as conn:
        row = conn.execute(select(operations).where(_key(kind, cluster))).first()
        if row is not None and row.plan_yaml != plan_yaml and _replaceable(conn, row):
            # The operation ended before, or was refused before it changed anything:
            # this is a new one (its journal starts again).
            conn.execute(operations.delete().where(_key(kind, cluster)))
            conn.execute(operation_events.delete().where(_events_of(kind, cluster)))
            row = None
        if row is None:
            stamp = now_ms()
            conn.execute(
                operations.insert().values(
                    kind=kind,
                    cluster=cluster,
                    plan_yaml=plan_yaml,
                    phase="planned",
                    created_ms=stamp,
                    updated_ms=stamp,
                )
            )
            return MoveRecord(cluster, plan_yaml, "planned", stamp)
    if row.plan_yaml != plan_yaml:
        raise ConflictError(
            f"cluster '{cluster}' is in the middle of a {what} (phase {row.phase}) with "
            "another plan; resume it with that plan file"
        )
    return _record(row)


def _replaceable(conn: Connection, row: Row[Any]) -> bool:
    if row.phase in FINISHED:
        return True
    acted = conn.execute(
        select(operation_events.c.id)
        .where(
            _events_of(row.kind, row.cluster) & operation_events.c.outcome.in_(("done", "started"))
        )
        .limit(1)
    ).first()
    return acted is None


def get(store: Store, kind: str, cluster: str) -> MoveRecord | None:
    with store.reading() as conn:
        row = conn.execute(select(operations).where(_key(kind, cluster))).first()
    return _record(row) if row else None


def set_phase(store: Store, kind: str, cluster: str, phase: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            operations.update().where(_key(kind, cluster)).values(phase=phase, updated_ms=now_ms())
        )


def record(
    store: Store,
    kind: str,
    cluster: str,
    phase: str,
    step: str,
    outcome: str,
    detail: str | None = None,
) -> None:
    """One step's outcome, appended to the operation's journal."""
    with store.transaction() as conn:
        conn.execute(
            operation_events.insert().values(
                kind=kind,
                cluster=cluster,
                at_ms=now_ms(),
                phase=phase,
                step=step,
                outcome=outcome,
                detail=detail,
            )
        )


def history(store: Store, kind: str, cluster: str) -> list[MoveEvent]:
    """The operation's journal, oldest first."""
    with store.reading() as conn:
        rows = conn.execute(
            select(operation_events)
            .where(_events_of(kind, cluster))
            .order_by(operation_events.c.id)
        ).all()
    return [MoveEvent(r.at_ms, r.phase, r.step, r.outcome, r.detail) for r in rows]


def last_outcome(store: Store, kind: str, cluster: str, step: str) -> str | None:
    """The outcome last recorded of ``step`` (None if it never ran)."""
    with store.reading() as conn:
        row = conn.execute(
            select(operation_events.c.outcome)
            .where(_events_of(kind, cluster) & (operation_events.c.step == step))
            .order_by(operation_events.c.id.desc())
            .limit(1)
        ).first()
    return None if row is None else str(row.outcome)
