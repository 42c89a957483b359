"""Opening the store: URL resolution, schema creation and the upgrade of stores made by
an older kmigrate, one place for driver errors.

The store is made lazily, by the first write: a `Store` opens nothing when it is built,
`reading()` on a store that does not exist yet reads an empty one (in memory, nothing on
disk), and `transaction()` creates the folder, the file and the schema on first use. So a
read-only or refused command never leaves a store behind.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    MetaData,
    Table,
    create_engine,
    event,
    inspect,
    select,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    IntegrityError,
    OperationalError,
    ProgrammingError,
    SQLAlchemyError,
)
from sqlalchemy.pool import NullPool, StaticPool

from kmigrate.config import Settings, is_secret_key
from kmigrate.errors import StoreError
from kmigrate.model.operations import ENSEMBLE_MOVE, KRAFT_CONVERSION
from kmigrate.store.schema import metadata, operation_events, operations

OLD_KRAFT_PREFIX = "kraft:"  # how stores before the `operations` table keyed KRaft runs
OLD_MOVES_TABLE = "zk_moves"  # where those stores kept ensemble moves and KRaft runs
# A new store written by several processes at once: how often one looks again at what
# the others made (PostgreSQL runs the DDL concurrently; SQLite waits for the lock).
SCHEMA_ATTEMPTS = 5


BUSY_TIMEOUT_S = 30  # how long a SQLite writer waits for another's lock


def now_ms() -> int:
    return int(time.time() * 1000)


class Store:
    """A metadata store: ``reading()`` to read it, ``transaction()`` to write it.

    Building one opens nothing. ``path`` is the SQLite file (None for other databases
    and for an in-memory SQLite), whose absence means an empty store.
    """

    def __init__(self, engine: Engine, where: str, path: Path | None = None) -> None:
        self._engine = engine
        self._path = path
        self._ready = False  # schema made or checked (and an old store upgraded)
        self.where = where  # safe to print: no credentials

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One atomic unit of work: everything in it is durable together or not at all.
        The first one creates the store (folder, file, schema) if it does not exist."""
        with self._translated():
            self._prepare(create=True)
            with self._engine.begin() as conn:
                yield conn

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A read-only connection. A store that does not exist reads as an empty one and
        stays absent: nothing is created, on disk or in the database."""
        with self._translated():
            if not self._exists():
                with _empty_store() as conn:
                    yield conn
                return
            self._prepare(create=False)
            with self._engine.connect() as conn, _read_only(conn):
                yield conn

    def close(self) -> None:
        self._engine.dispose()

    def _exists(self) -> bool:
        """Whether the store holds kmigrate's schema. A SQLite file that is missing or
        empty is not asked (connecting would create it); one whose schema a writer has
        not committed yet reads as empty too (it commits all its tables at once)."""
        if self._path is not None and not (self._path.is_file() and self._path.stat().st_size):
            return False
        if self._ready or (self._path is None and self._engine.dialect.name == "sqlite"):
            return True  # (in memory: it is whatever this process made of it)
        with self._engine.connect() as conn:
            found = set(inspect(conn).get_table_names())
        return bool(found & {*metadata.tables, OLD_MOVES_TABLE})

    def _prepare(self, *, create: bool) -> None:
        """Make the schema (``create``), or bring an existing store made by an older
        kmigrate up to date; once per Store. Writes nothing to an up-to-date store."""
        if self._ready and (self._path is None or self._path.is_file()):
            return
        if create and self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(SCHEMA_ATTEMPTS):
            try:
                self._make_schema()
                break
            except (OperationalError, ProgrammingError, IntegrityError) as exc:
                # Another process made a table meanwhile: look again at what exists.
                if attempt == SCHEMA_ATTEMPTS - 1 or not _made_meanwhile(exc):
                    raise
        self._ready = True

    def _make_schema(self) -> None:
        with self._engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                # Two processes writing a new store at once (a test and the mirror it
                # started) would each create tables the other just made: the write lock
                # first makes the second wait, then find the whole schema made.
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            metadata.create_all(conn)
            _add_new_columns(conn)
            _adopt_old_operations(conn)

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(
                f"metadata store {self.where}: {type(exc).__name__}: {_first_line(exc)}"
            ) from exc


@contextmanager
def _read_only(conn: Connection) -> Iterator[None]:
    """SQLite refuses writes on ``conn`` meanwhile: a reader that writes is a bug."""
    if conn.dialect.name != "sqlite":
        yield
        return
    conn.exec_driver_sql("PRAGMA query_only=ON")
    try:
        yield
    finally:
        conn.rollback()
        conn.exec_driver_sql("PRAGMA query_only=OFF")


@contextmanager
def _empty_store() -> Iterator[Connection]:
    """A connection to an empty store with kmigrate's schema, in this process's memory."""
    engine = create_engine("sqlite://", poolclass=StaticPool)
    try:
        with engine.connect() as conn:
            metadata.create_all(conn)
            conn.commit()
            with _read_only(conn):
                yield conn
    finally:
        engine.dispose()


def open_store(url: str, base_dir: Path | None = None) -> Store:
    """The store at ``url``, opened lazily (nothing is connected or created here);
    relative SQLite paths resolve against ``base_dir`` (the folder of the clusters.yaml
    that names the store)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError("store.url is not a valid database URL") from None
    where = _safe_where(parsed)
    path = None
    sqlite = parsed.get_backend_name() == "sqlite"
    if sqlite and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        parsed = parsed.set(database=str(path))
        where = str(path)
    try:
        # A file: one connection per unit of work, closed after it, so SQLite removes its
        # -wal/-shm files when the command is done. In memory: one connection kept.
        engine = create_engine(parsed, **_pooling(sqlite, in_memory=path is None))
    except (ArgumentError, ImportError) as exc:
        raise StoreError(f"cannot use metadata store {where}: {_first_line(exc)}") from None
    if sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    return Store(engine, where, path)


def _pooling(sqlite: bool, *, in_memory: bool) -> dict[str, Any]:
    if not sqlite:
        return {}
    if in_memory:  # one database, shared by this process's threads
        return {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    # sqlite3's own busy timeout (5 s by default) holds from the connection's first
    # statement, the journal-mode switch below included: several processes making a
    # new store at once on a busy machine waited longer than 5 s for each other.
    return {"poolclass": NullPool, "connect_args": {"timeout": BUSY_TIMEOUT_S}}


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
    if not inspect(conn).has_table(OLD_MOVES_TABLE):
        return
    old = MetaData()
    moves = Table(OLD_MOVES_TABLE, old, autoload_with=conn)
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
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")  # first: the next waits
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()


def _safe_where(url: URL) -> str:
    """The URL without any password: the user part's, and query values such as
    ``?password=`` or ``sslpassword=`` that drivers also accept."""
    hidden = {k: "***" if is_secret_key(k) else v for k, v in url.query.items()}
    return url.set(query=hidden).render_as_string(hide_password=True)


def _made_meanwhile(exc: Exception) -> bool:
    text = str(exc).lower()
    return "already exists" in text or "duplicate" in text


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__
