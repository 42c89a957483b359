"""Migrations, their topics' and groups' states, the audit log and the migration lock."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from sqlalchemy import select

from kmigrate.errors import ConflictError, NotFoundError
from kmigrate.model.migrations import Event, Item
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import migration_events, migration_items, migrations


def save_migration(store: Store, name: str, source: str, target: str, plan_yaml: str) -> None:
    """Create the migration, or update its plan; its clusters never change."""
    with store.transaction() as conn:
        row = conn.execute(select(migrations).where(migrations.c.name == name)).first()
        if row is None:
            conn.execute(
                migrations.insert().values(
                    name=name,
                    source=source,
                    target=target,
                    plan_yaml=plan_yaml,
                    created_ms=now_ms(),
                )
            )
            return
        if (row.source, row.target) != (source, target):
            raise ConflictError(
                f"migration '{name}' already moves {row.source} -> {row.target}; give this "
                "plan another name"
            )
        conn.execute(
            migrations.update().where(migrations.c.name == name).values(plan_yaml=plan_yaml)
        )


def migration_plan_yaml(store: Store, name: str) -> str | None:
    with store.reading() as conn:
        row = conn.execute(select(migrations.c.plan_yaml).where(migrations.c.name == name)).first()
    return row.plan_yaml if row else None


def migration_names(store: Store) -> list[str]:
    with store.reading() as conn:
        return [r.name for r in conn.execute(select(migrations.c.name).order_by(migrations.c.name))]


# ---------------------------------------------------------------- topics and groups


def _item(row: Any) -> Item:
    return Item(row.kind, row.name, row.state, row.pending, row.pending_since_ms, row.updated_ms)


def items_of(store: Store, migration: str, kind: str | None = None) -> list[Item]:
    query = select(migration_items).where(migration_items.c.migration == migration)
    if kind:
        query = query.where(migration_items.c.kind == kind)
    with store.reading() as conn:
        rows = conn.execute(query.order_by(migration_items.c.kind, migration_items.c.name))
        return [_item(r) for r in rows]


def _key(migration: str, kind: str, name: str) -> Any:
    c = migration_items.c
    return (c.migration == migration) & (c.kind == kind) & (c.name == name)


def add_item(store: Store, migration: str, kind: str, name: str, state: str) -> None:
    """Add a topic or group in ``state`` unless the migration already has it."""
    with store.transaction() as conn:
        if conn.execute(select(migration_items.c.name).where(_key(migration, kind, name))).first():
            return
        conn.execute(
            migration_items.insert().values(
                migration=migration, kind=kind, name=name, state=state, updated_ms=now_ms()
            )
        )


def set_state(
    store: Store, migration: str, kind: str, name: str, state: str, *, only_from: str | None = None
) -> bool:
    """Move an item to ``state`` (only if it is in ``only_from``, when given); True if it moved."""
    condition = _key(migration, kind, name)
    if only_from is not None:
        condition = condition & (migration_items.c.state == only_from)
    with store.transaction() as conn:
        done = conn.execute(
            migration_items.update().where(condition).values(state=state, updated_ms=now_ms())
        )
    return bool(done.rowcount)


def set_pending(
    store: Store, migration: str, kind: str, names: list[str], step: str | None
) -> None:
    """Mark a step as under way for these items (``None``: finished)."""
    since = now_ms() if step else None
    with store.transaction() as conn:
        for name in names:
            conn.execute(
                migration_items.update()
                .where(_key(migration, kind, name))
                .values(pending=step, pending_since_ms=since)
            )


# ---------------------------------------------------------------- audit log


def actor() -> str:
    """Who runs this command, as the audit log names them."""
    user = os.environ.get("KMIGRATE_ACTOR") or os.environ.get("USER") or f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()} (pid {os.getpid()})"


def record_event(
    store: Store,
    migration: str,
    action: str,
    subjects: list[str],
    outcome: str,
    detail: str | None = None,
) -> None:
    with store.transaction() as conn:
        conn.execute(
            migration_events.insert().values(
                migration=migration,
                at_ms=now_ms(),
                actor=actor(),
                action=action,
                subjects=json.dumps(subjects),
                outcome=outcome,
                detail=detail,
            )
        )


def events_of(store: Store, migration: str, limit: int | None = None) -> list[Event]:
    query = (
        select(migration_events)
        .where(migration_events.c.migration == migration)
        .order_by(migration_events.c.id.desc())
    )
    if limit:
        query = query.limit(limit)
    with store.reading() as conn:
        rows = list(conn.execute(query))
    return [
        Event(r.at_ms, r.actor, r.action, tuple(json.loads(r.subjects)), r.outcome, r.detail)
        for r in reversed(rows)
    ]


def require_migration(store: Store, name: str | None) -> str:
    """The named migration, or the only one when no name is given."""
    names = migration_names(store)
    if name is None:
        if len(names) == 1:
            return names[0]
        raise NotFoundError(
            "no migration yet; start one with `kmigrate migrate start plan.yaml`"
            if not names
            else f"pass --migration NAME (migrations: {', '.join(names)})"
        )
    if name not in names:
        raise NotFoundError(
            f"no migration named '{name}' in {store.where}; known: {', '.join(names) or 'none'}"
        )
    return name
