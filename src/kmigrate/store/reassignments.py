"""Replica reassignments kmigrate applies: the plan, each partition's state, and the
throttles set (all SQL here)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from sqlalchemy import select

from kmigrate.errors import ConflictError
from kmigrate.model.reassignments import Applied
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import reassignment_moves, reassignments

Key = tuple[str, int]


def begin(
    store: Store, cluster: str, plan_json: str, keys: Iterable[Key], rate: int, max_moves: int
) -> None:
    """Record a new reassignment of ``cluster`` (refused while another one runs)."""
    with store.transaction() as conn:
        row = conn.execute(select(reassignments).where(reassignments.c.cluster == cluster)).first()
        if row is not None and row.state == "running":
            raise ConflictError(
                f"cluster '{cluster}' has a reassignment under way; resume it with "
                "`kmigrate reassign apply PLAN --resume`, or `kmigrate reassign cancel`"
            )
        conn.execute(reassignments.delete().where(reassignments.c.cluster == cluster))
        conn.execute(reassignment_moves.delete().where(reassignment_moves.c.cluster == cluster))
        stamp = now_ms()
        conn.execute(
            reassignments.insert().values(
                cluster=cluster,
                plan_json=plan_json,
                state="running",
                rate=rate,
                max_moves=max_moves,
                throttled=json.dumps({"topics": [], "brokers": []}),
                started_ms=stamp,
                updated_ms=stamp,
            )
        )
        for topic, partition in keys:
            conn.execute(
                reassignment_moves.insert().values(
                    cluster=cluster,
                    topic=topic,
                    partition=partition,
                    state="pending",
                    updated_ms=stamp,
                )
            )


def current(store: Store, cluster: str) -> Applied | None:
    with store.reading() as conn:
        row = conn.execute(select(reassignments).where(reassignments.c.cluster == cluster)).first()
    if row is None:
        return None
    throttled = json.loads(row.throttled)
    return Applied(
        row.cluster,
        row.plan_json,
        row.state,
        row.rate,
        row.max_moves,
        tuple(throttled["topics"]),
        tuple(throttled["brokers"]),
        row.started_ms,
    )


def states(store: Store, cluster: str) -> dict[Key, str]:
    with store.reading() as conn:
        rows = conn.execute(
            select(reassignment_moves).where(reassignment_moves.c.cluster == cluster)
        ).all()
    return {(r.topic, r.partition): r.state for r in rows}


def set_states(store: Store, cluster: str, keys: Iterable[Key], state: str) -> None:
    stamp = now_ms()
    with store.transaction() as conn:
        for topic, partition in keys:
            conn.execute(
                reassignment_moves.update()
                .where(
                    (reassignment_moves.c.cluster == cluster)
                    & (reassignment_moves.c.topic == topic)
                    & (reassignment_moves.c.partition == partition)
                )
                .values(state=state, updated_ms=stamp)
            )


def add_throttled(
    store: Store, cluster: str, topics: Iterable[str], brokers: Iterable[int]
) -> None:
    """Remember throttles before they are set (a kill right after leaves none unknown)."""
    found = current(store, cluster)
    assert found is not None
    body = {
        "topics": sorted({*found.throttled_topics, *topics}),
        "brokers": sorted({*found.throttled_brokers, *brokers}),
    }
    with store.transaction() as conn:
        conn.execute(
            reassignments.update()
            .where(reassignments.c.cluster == cluster)
            .values(throttled=json.dumps(body), updated_ms=now_ms())
        )


def finish(store: Store, cluster: str, state: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            reassignments.update()
            .where(reassignments.c.cluster == cluster)
            .values(
                state=state,
                throttled=json.dumps({"topics": [], "brokers": []}),
                updated_ms=now_ms(),
            )
        )
