"""The latest mirror process of each link: who runs it and how it is doing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from kmigrate.model.runs import MirrorRun, RunState, Waiting
from kmigrate.store.database import Store, now_ms
from kmigrate.store.schema import mirror_runs, mirror_waits


def _run(row: Any, wait: Any) -> MirrorRun:
    waiting = None
    if wait is not None and wait.pid == row.pid and row.state == RunState.WAITING.value:
        waiting = Waiting(wait.cluster, wait.role, wait.condition, wait.since_ms)
    return MirrorRun(
        row.link,
        row.pid,
        row.host,
        RunState(row.state),
        row.reason,
        row.started_ms,
        row.heartbeat_ms,
        row.records_per_s,
        row.log_path,
        waiting,
        row.batch_s,
    )


def get_run(store: Store, link: str) -> MirrorRun | None:
    with store.reading() as conn:
        row = conn.execute(select(mirror_runs).where(mirror_runs.c.link == link)).first()
        wait = conn.execute(select(mirror_waits).where(mirror_waits.c.link == link)).first()
    return _run(row, wait) if row else None


def begin_run(store: Store, link: str, pid: int, host: str, log_path: str | None) -> None:
    stamp = now_ms()
    values = {
        "pid": pid,
        "host": host,
        "state": RunState.STARTING.value,
        "reason": None,
        "started_ms": stamp,
        "heartbeat_ms": stamp,
        "records_per_s": 0.0,
        "log_path": log_path,
    }
    with store.transaction() as conn:
        conn.execute(mirror_runs.delete().where(mirror_runs.c.link == link))
        conn.execute(mirror_waits.delete().where(mirror_waits.c.link == link))
        conn.execute(mirror_runs.insert().values(link=link, **values))


def report_run(
    store: Store,
    link: str,
    pid: int,
    state: RunState,
    *,
    reason: str | None = None,
    records_per_s: float | None = None,
    batch_s: float | None = None,
) -> None:
    """Update the run's state and heartbeat; only the process that owns the run may.
    Any state but ``waiting`` ends a recorded wait."""
    values: dict[str, object] = {"state": state.value, "heartbeat_ms": now_ms(), "reason": reason}
    if records_per_s is not None:
        values["records_per_s"] = records_per_s
    if batch_s is not None:
        values["batch_s"] = batch_s
    with store.transaction() as conn:
        conn.execute(
            mirror_runs.update()
            .where((mirror_runs.c.link == link) & (mirror_runs.c.pid == pid))
            .values(**values)
        )
        if state is not RunState.WAITING:
            conn.execute(
                mirror_waits.delete().where(
                    (mirror_waits.c.link == link) & (mirror_waits.c.pid == pid)
                )
            )


def report_waiting(store: Store, link: str, pid: int, waiting: Waiting, reason: str) -> None:
    """The run is alive and waits out an outage: state ``waiting``, what and since when."""
    with store.transaction() as conn:
        updated = conn.execute(
            mirror_runs.update()
            .where((mirror_runs.c.link == link) & (mirror_runs.c.pid == pid))
            .values(
                state=RunState.WAITING.value,
                heartbeat_ms=now_ms(),
                reason=reason,
                records_per_s=0.0,
            )
        )
        if not updated.rowcount:
            return
        conn.execute(mirror_waits.delete().where(mirror_waits.c.link == link))
        conn.execute(
            mirror_waits.insert().values(
                link=link,
                pid=pid,
                cluster=waiting.cluster,
                role=waiting.role,
                condition=waiting.condition,
                since_ms=waiting.since_ms,
            )
        )
