"""Opening the store: URL resolution, schema creation and the upgrade of stores made by
an older kmigrate, one place for driver errors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, MetaData, Table, create_engine, event, inspect, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from kmigrate.config import Settings, is_secret_key
from kmigrate.errors import StoreError
from kmigrate.model.operations import ENSEMBLE_MOVE, KRAFT_CONVERSION
from kmigrate.store.schema import metadata, operation_events, operations

OLD_KRAFT_PREFIX = "kraft:"  # how stores before the `operations` table keyed KRaft runs


def now_ms() -> int:
    return int(time.time() * 1000)


class Store:
    """A metadata store; ``transaction()`` is the only way to read or write it."""

    def __init__(self, engine: Engine, where: str) -> None:
        self._engine = engine
        self.where = where  # safe to print: no credentials

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One atomic unit of work: everything in it is durable together or not at all."""
        try:
            with self._engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StoreError(
                f"metadata store {self.where}: {type(exc).__name__}: {_first_line(exc)}"
            ) from exc

    def close(self) -> None:
        self._engine.dispose()


def open_store(url: str, base_dir: Path | None = None) -> Store:
    """Open (and create if needed) the store at ``url``; relative SQLite paths resolve
    against ``base_dir`` (the folder of the clusters.yaml that names the store)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError("store.url is not a valid database URL") from None
    where = _safe_where(parsed)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        path.parent.mkdir(parents=True, exist_ok=True)
        parsed = parsed.set(database=str(path))
        where = str(path)
    try:
        engine = create_engine(parsed)
    except (ArgumentError, ImportError) as exc:
        raise StoreError(f"cannot use metadata store {where}: {_first_line(exc)}") from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    store = Store(engine, where)
    with store.transaction() as conn:
        metadata.create_all(conn)
        _add_new_columns(conn)
        _adopt_old_operations(conn)
    return store


def _add_new_columns(conn: Connection) -> None:
    """A store made by an older kmigrate lacks the nullable columns added since:
    add them (create_all makes missing tables only)."""
    found = inspect(conn)
    for table in metadata.sorted_tables:
        have = {c["name"] for c in found.get_columns(table.name)}
        for column in table.columns:
            if column.name not in have and column.nullable:
                kind = column.type.compile(dialect=conn.dialect)
                conn.exec_driver_sql(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}')


def _adopt_old_operations(conn: Connection) -> None:
    """A store made before the `operations` table kept ensemble moves in `zk_moves` and
    `zk_move_events`, KRaft conversions there too under a "kraft:<cluster>" key: copy
    them over (journal order kept), then drop the old tables so this runs once."""
    if not inspect(conn).has_table("zk_moves"):
        return
    old = MetaData()
    moves = Table("zk_moves", old, autoload_with=conn)
    events = Table("zk_move_events", old, autoload_with=conn)
    for row in conn.execute(select(moves)).mappings():
        kind, cluster = _old_key(row["kafka"])
        values = {k: row[k] for k in ("plan_yaml", "phase", "created_ms", "updated_ms")}
        conn.execute(operations.insert().values(kind=kind, cluster=cluster, **values))
    for row in conn.execute(select(events).order_by(events.c.id)).mappings():
        kind, cluster = _old_key(row["kafka"])
        values = {k: row[k] for k in ("at_ms", "phase", "step", "outcome", "detail")}
        conn.execute(operation_events.insert().values(kind=kind, cluster=cluster, **values))
    events.drop(conn)
    moves.drop(conn)


def _old_key(kafka: str) -> tuple[str, str]:
    if kafka.startswith(OLD_KRAFT_PREFIX):
        return KRAFT_CONVERSION, kafka.removeprefix(OLD_KRAFT_PREFIX)
    return ENSEMBLE_MOVE, kafka


def store_for(settings: Settings) -> Store:
    """The store that ``settings`` name; a relative SQLite path is next to the config file."""
    base = settings.path.parent if settings.path else None
    return open_store(settings.store.url.get_secret_value(), base)


def _sqlite_pragmas(dbapi_conn: object, _record: object) -> None:
    # WAL lets `mirror status` read while the mirror writes; a busy timeout makes
    # concurrent writers wait instead of failing at once.
    cursor = dbapi_conn.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _safe_where(url: URL) -> str:
    """The URL without any password: the user part's, and query values such as
    ``?password=`` or ``sslpassword=`` that drivers also accept."""
    hidden = {k: "***" if is_secret_key(k) else v for k, v in url.query.items()}
    return url.set(query=hidden).render_as_string(hide_password=True)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__
